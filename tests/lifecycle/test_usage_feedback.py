"""Use feedback through the real hooks and worker: what sessions use rises in the briefing, what
they ignore sinks (never archived), and a user's correction becomes a suggested edge."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cortex.app import Cortex
from cortex.briefing.deliver import read_briefing, refresh_briefing
from cortex.capture.manual import remember
from cortex.cli.main import cli
from cortex.core.lifecycle.health import content_health
from cortex.core.model import EdgeStatus, EdgeType, Scope, Status
from cortex.lifecycle.usage import META_LEDGER, OP
from cortex.paths import STORE_DIR
from cortex.plugin import worker
from cortex.shell.usage_log import USAGE_DIR, read_notes
from tests.support.runtime import assistant_record, run_hook, user_record, worker_lock_held, write_transcript
from tests.support.transcript_builders import bash_result_record, bash_use_record

USED = "The nightly export runs through `scripts/export_ledger.py` with LEDGER_BATCH_SIZE=500 on the replica."
IGNORED = (
    "Grafana dashboards for the checkout flow live in the observability repository under panels/checkout."
)


@pytest.fixture(autouse=True)
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORTEX_EMBEDDER", "none")
    monkeypatch.setenv("CORTEX_USER_PROMPT_SUBMIT", "0")


def _session(project: Path, n: int, turns: list[tuple[str, str]]) -> None:
    """SessionStart, a transcript of `turns` (user, assistant), SessionEnd, and the worker."""
    sid = f"5e551011-0000-4000-8000-00000000010{n}"
    run_hook("SessionStart", {"session_id": sid, "cwd": str(project), "source": "startup"})
    records: list[dict[str, Any]] = []
    for i, (ask, answer) in enumerate(turns):
        records.append(user_record(ask, uuid=f"u{n}-{i}", sessionId=sid))
        records.append(
            assistant_record(f"m{n}-{i}", {"type": "text", "text": answer}, uuid=f"a{n}-{i}", sessionId=sid)
        )
    transcript = write_transcript(project.parent / f"t{n}.jsonl", records)
    payload = {"session_id": sid, "transcript_path": str(transcript), "cwd": str(project)}
    with worker_lock_held(project):
        run_hook("SessionEnd", {**payload, "hook_event_name": "SessionEnd", "reason": "exit"})
    worker.run(project, lag_wait_s=0.0)


def _work(n: int) -> list[tuple[str, str]]:
    return [
        ("Please refresh the ledger numbers for finance.", "Sure, looking at how the ledger is exported."),
        (
            "Go ahead.",
            "Running scripts/export_ledger.py against the replica with LEDGER_BATCH_SIZE=500, "
            f"as the nightly export does (run {n}).",
        ),
        ("Thanks.", "The export finished; the finance sheet has the new totals."),
    ]


def test_five_sessions_lift_the_used_memory_and_sink_the_ignored_one(
    project: Path, cortex_home: Path
) -> None:
    with Cortex.for_cwd(project) as cx:
        used = remember(cx, USED, mem_type="gotcha").memory
        ignored = remember(cx, IGNORED, mem_type="gotcha").memory
        refresh_briefing(cx, cwd=project)
        before, _ = read_briefing(cx, cwd=project)
        seq = cx.write_store(Scope.PROJECT).journal_seq()
    assert before.full.index(ignored.id) < before.full.index(used.id)  # the newer note leads on a tie

    for n in range(5):
        _session(project, n, _work(n))

    with Cortex.for_cwd(project) as cx:
        store = cx.write_store(Scope.PROJECT)
        now_used, now_ignored = store.get(used.id), store.get(ignored.id)
        after, _ = read_briefing(cx, cwd=project)
        verdicts = [r for r in store.journal_rows() if r["op"] == OP]
        ledger = json.loads(store.get_meta(META_LEDGER) or "{}")
        changed = store.changed_ids(seq)
        never = content_health(store.list_memories(statuses=("active",))).never_used  # what audit reads
    assert used.id not in never and ignored.id in never
    assert ignored.id not in changed  # a priority step says nothing new: consolidation and the team skip it
    assert now_used is not None and now_ignored is not None
    assert now_used.access_count == 5
    assert now_ignored.status is Status.ACTIVE and now_ignored.access_count == 0
    assert now_ignored.priority == ignored.priority - 4  # bounded: one grace session, then a step each
    assert ledger[ignored.id] == [ignored.priority, 5, ignored.priority - 4]
    assert len(verdicts) == 5
    assert all(used.id in v["payload"]["used"] and ignored.id in v["payload"]["unused"] for v in verdicts)
    assert after.full.index(used.id) < after.full.index(ignored.id)  # the used note now leads
    assert not list((project / STORE_DIR / USAGE_DIR).glob("*.jsonl"))  # verdicts given, notes gone

    shown = CliRunner().invoke(
        cli, ["-C", str(project), "stats", "--usage", "--json"], catch_exceptions=False
    )
    report = json.loads(shown.output)
    assert (report["sessions"], report["judged"]) == (5, 5) and 0 < report["briefed_use_rate"] < 1
    assert report["memories"][used.id]["used"] == 5 and report["memories"][ignored.id]["unused"] == 5
    assert report["demoted"][ignored.id] == {"priority_before": 6, "ignored_sessions": 5, "priority": 2}
    text = CliRunner().invoke(cli, ["-C", str(project), "stats", "--usage"], catch_exceptions=False).output
    assert "used 5x, ignored 0x" in text and f"demoted 6->2 after 5 ignored session(s): {ignored.id}" in text

    # Used again: the ignored memory gets its priority back.
    _session(project, 5, [("Where are the checkout Grafana panels?", IGNORED), ("ok", "ok"), ("ok", "done")])
    with Cortex.for_cwd(project) as cx:
        back = cx.write_store(Scope.PROJECT).get(ignored.id)
    assert back is not None and back.priority == ignored.priority and back.access_count == 1


def test_a_short_session_demotes_nothing(project: Path, cortex_home: Path) -> None:
    with Cortex.for_cwd(project) as cx:
        ignored = remember(cx, IGNORED, mem_type="gotcha").memory
        refresh_briefing(cx, cwd=project)
    for n in range(3):
        _session(project, n, [("hi", "Hello.")])
    with Cortex.for_cwd(project) as cx:
        store = cx.write_store(Scope.PROJECT)
        now = store.get(ignored.id)
        verdicts = [r["payload"] for r in store.journal_rows() if r["op"] == OP]
    assert now is not None and now.priority == ignored.priority
    assert len(verdicts) == 3 and not any(v["judged"] or v["unused"] for v in verdicts)


def test_a_user_correction_becomes_a_suggested_contradicts_edge(project: Path, cortex_home: Path) -> None:
    with Cortex.for_cwd(project) as cx:
        old = remember(cx, USED, mem_type="gotcha").memory
        refresh_briefing(cx, cwd=project)
    correction = (
        "No, that is outdated: scripts/export_ledger.py is gone and LEDGER_BATCH_SIZE no longer exists."
        " [MEMORY: gotcha] The ledger export moved to `make ledger-export`; scripts/export_ledger.py "
        "and LEDGER_BATCH_SIZE were removed."
    )
    _session(project, 0, [(correction, "Understood, I will use make ledger-export from now on.")])
    with Cortex.for_cwd(project) as cx:
        store = cx.write_store(Scope.PROJECT)
        edges = [e for e in store.edges() if e.type is EdgeType.CONTRADICTS]
        verdict = [r["payload"] for r in store.journal_rows() if r["op"] == OP]
        now = store.get(old.id)
    assert [(e.target, e.status) for e in edges] == [(old.id, EdgeStatus.SUGGESTED)]
    assert edges[0].source != old.id
    assert verdict[0]["contradicted"] == [old.id]
    assert now is not None and now.access_count == 0  # a contradiction is no use


def test_a_note_recalled_through_cortex_recall_and_then_said_is_used_not_ignored(
    project: Path, cortex_home: Path
) -> None:
    with Cortex.for_cwd(project) as cx:
        note = remember(cx, USED, mem_type="gotcha").memory
    sid = "5e551011-0000-4000-8000-000000000201"
    records = [
        user_record("How do we export the ledger?", uuid="u1", sessionId=sid),
        bash_use_record("t1", "cortex recall ledger export"),
        bash_result_record("t1", f"- {note.id} · gotcha · 2026-11-25\n  {USED}"),
        assistant_record("m1", {"type": "text", "text": "Found a note."}, uuid="a1", sessionId=sid),
        user_record("Run it.", uuid="u2", sessionId=sid),
        assistant_record(
            "m2",
            {
                "type": "text",
                "text": "Running scripts/export_ledger.py with LEDGER_BATCH_SIZE=500 on the replica.",
            },
            uuid="a2",
            sessionId=sid,
        ),
    ]
    transcript = write_transcript(project.parent / "recall.jsonl", records)
    with worker_lock_held(project):
        run_hook("SessionEnd", {"session_id": sid, "transcript_path": str(transcript), "cwd": str(project)})
    worker.run(project, lag_wait_s=0.0)
    with Cortex.for_cwd(project) as cx:
        store = cx.write_store(Scope.PROJECT)
        [verdict] = [r["payload"] for r in store.journal_rows() if r["op"] == OP]
        now = store.get(note.id)
    assert verdict["recalled"] == [note.id] and verdict["used"] == [note.id]
    assert verdict["briefed"] == [] and verdict["unused"] == []  # a recall is never held against a note
    assert now is not None and now.access_count == 1 and now.priority == note.priority


def test_the_prompt_lookup_records_what_it_added(project: Path, cortex_home: Path) -> None:
    with Cortex.for_cwd(project) as cx:
        note = remember(cx, USED, mem_type="gotcha").memory
    env = {**os.environ, "CORTEX_USER_PROMPT_SUBMIT": "1"}
    payload = {
        "session_id": "s-prompt",
        "cwd": str(project),
        "prompt": "how does the nightly ledger export run",
    }
    assert note.id in run_hook("UserPromptSubmit", payload, env)
    notes = read_notes(project / STORE_DIR, "s-prompt")
    assert notes.ids["recalled"] == {note.id}
