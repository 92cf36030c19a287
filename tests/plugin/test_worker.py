"""The capture worker: exactly-once extraction, lagging and damaged transcripts, queue and lock."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cortex.app import Cortex
from cortex.capture import queue
from cortex.capture import session as session_capture
from cortex.capture import write as writer
from cortex.core.model import Scope
from cortex.lifecycle.upkeep import META_EXTRACTIONS
from cortex.paths import STORE_DIR, resolve_paths
from cortex.plugin import worker
from tests.support.runtime import (
    REPO,
    SESSION,
    assistant_record,
    capture,
    decision_session,
    inserts_by_hash,
    line,
    memory_count,
    open_store,
    queue_files,
    queue_stop,
    snapshot,
    user_record,
    worker_lock_held,
    write_transcript,
)

TAGGED = (
    "[MEMORY: decision] The billing service retries webhooks with exponential backoff capped at 10 minutes."
)


@pytest.fixture(autouse=True)
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORTEX_EMBEDDER", "none")


def db(project: Path) -> Path:
    return project / STORE_DIR / "cortex.db"


def cursor_row(project: Path, session: str = SESSION) -> Any:
    store = open_store(db(project), Scope.PROJECT)
    try:
        return store.read_cursor(session)
    finally:
        store.close()


def tagged_turn(uuid: str, text: str = TAGGED, msg: str = "msg_9") -> list[dict[str, Any]]:
    return [
        user_record("How do webhook retries work?", uuid=f"u-{uuid}", sessionId=SESSION),
        assistant_record(msg, {"type": "text", "text": text}, uuid=f"a-{uuid}", sessionId=SESSION),
    ]


def test_a_session_is_captured_once_and_a_rerun_adds_nothing(project: Path, cortex_home: Path) -> None:
    transcript = write_transcript(project.parent / "t.jsonl", decision_session())
    first = capture(project, transcript)
    assert first.actions().get("stored", 0) >= 2
    assert queue_files(project) == []
    stored = snapshot(project, cortex_home)
    journal = len(open_store(db(project), Scope.PROJECT).journal_rows())
    second = capture(project, transcript)
    assert second.actions() == {}
    assert snapshot(project, cortex_home) == stored
    assert len(open_store(db(project), Scope.PROJECT).journal_rows()) == journal
    row = cursor_row(project)
    assert row.byte_offset == transcript.stat().st_size and row.last_uuid == "a1"


def test_memories_carry_their_source(project: Path, cortex_home: Path) -> None:
    transcript = write_transcript(project.parent / "t.jsonl", decision_session())
    capture(project, transcript)
    store = open_store(db(project), Scope.PROJECT)
    memories = {m.type.value: m for m in store.list_memories()}
    gotcha = memories["gotcha"]
    assert gotcha.source.session_id == SESSION and gotcha.source.branch == "main"
    assert gotcha.source.transcript_offset == transcript.stat().st_size
    assert gotcha.source.commit and len(gotcha.source.commit) == 40
    assert "branch:main" in gotcha.tags
    assert "pgbouncer" in gotcha.content and "advisory locks" in memories["decision"].content


def test_new_turns_are_extracted_once(project: Path, cortex_home: Path) -> None:
    transcript = write_transcript(project.parent / "t.jsonl", decision_session())
    capture(project, transcript)
    with transcript.open("ab") as fh:
        fh.write(b"".join(line(r) for r in tagged_turn("2")))
    report = capture(project, transcript)
    assert report.actions() == {"stored": 1}
    assert set(inserts_by_hash(db(project)).values()) == {1}


def test_a_half_written_last_line_waits_for_its_end(project: Path) -> None:
    transcript = write_transcript(project.parent / "t.jsonl", decision_session())
    whole = b"".join(line(r) for r in tagged_turn("2"))
    cut = len(whole) - 25
    with transcript.open("ab") as fh:
        fh.write(whole[:cut])
    capture(project, transcript)
    assert cursor_row(project).byte_offset == transcript.stat().st_size - cut + whole.index(b"\n") + 1
    assert not any("billing" in m for m in contents(project))
    with transcript.open("ab") as fh:
        fh.write(whole[cut:])
    capture(project, transcript)
    assert sum("billing service retries" in m for m in contents(project)) == 1
    assert cursor_row(project).malformed == 0


def contents(project: Path) -> list[str]:
    return [m.content for m in open_store(db(project), Scope.PROJECT).list_memories(statuses=None)]


def test_a_transcript_rewritten_shorter_than_the_cursor_is_reread_without_duplicates(
    project: Path, cortex_home: Path
) -> None:
    transcript = write_transcript(project.parent / "t.jsonl", [*decision_session(), *tagged_turn("2")])
    capture(project, transcript)
    before = snapshot(project, cortex_home)["project"]["memories"]
    write_transcript(transcript, tagged_turn("2"))  # e.g. the client rewrote the file
    report = capture(project, transcript)
    assert report.sessions[0].restarted
    assert report.actions() == {}  # its records were read before: nothing to confirm again
    assert snapshot(project, cortex_home)["project"]["memories"] == before
    assert set(inserts_by_hash(db(project)).values()) == {1}
    assert cursor_row(project).byte_offset == transcript.stat().st_size


def test_unknown_records_from_newer_versions_are_skipped(project: Path) -> None:
    records = [
        {"type": "hologram-snapshot", "uuid": "h1", "payload": {"x": 1}},
        {"type": "assistant", "uuid": "z1", "message": "not a mapping"},
        {"type": "user", "uuid": "z2", "message": {"role": "user", "content": [{"type": "video"}]}},
        *tagged_turn("2"),
    ]
    transcript = write_transcript(project.parent / "t.jsonl", records)
    with transcript.open("ab") as fh:
        fh.write(b'{"broken json\n\xff\xfe not UTF-8\n')
    report = capture(project, transcript)
    assert report.actions() == {"stored": 1}
    assert report.sessions[0].malformed == 2
    assert cursor_row(project).malformed == 2


def test_sidechain_records_are_skipped(project: Path) -> None:
    records = [{**r, "isSidechain": True, "agentId": "a1b2"} for r in tagged_turn("2")]
    transcript = write_transcript(project.parent / "agent-a1b2.jsonl", records)
    report = capture(project, transcript)
    assert report.actions() == {} and report.sessions[0].messages == 0


@pytest.mark.parametrize("kind", ["missing", "directory", "fifo", "binary", "empty"])
def test_damaged_transcripts_are_logged_and_the_entry_consumed(project: Path, kind: str) -> None:
    path = project.parent / "t.jsonl"
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "binary":
        path.write_bytes(os.urandom(2048).replace(b"\n", b"\x00") + b"\n")
    elif kind == "empty":
        path.write_bytes(b"")
    report = capture(project, path)
    assert report.actions() == {} and queue_files(project) == []
    log = (project / STORE_DIR / "cortex.log").read_text()
    if kind != "empty":
        assert report.sessions[0].error and f"session {SESSION}:" in log


def test_a_missing_transcript_stores_nothing_and_keeps_nothing_on_disk(project: Path) -> None:
    report = capture(project, project.parent / "never-written.jsonl", message=TAGGED)
    assert report.actions() == {} and report.sessions[0].error
    assert not any("exponential backoff" in m for m in contents(project))
    assert queue_files(project) == []  # consumed: the message itself was never written down


def test_a_lagging_transcript_is_read_when_it_lands_without_duplicates(
    project: Path, cortex_home: Path
) -> None:
    transcript = write_transcript(project.parent / "t.jsonl", decision_session())
    report = capture(project, transcript, message=TAGGED)  # the turn's last lines are not written yet
    assert report.sessions[0].lagged and report.actions().get("stored", 0) >= 2
    assert not any("exponential backoff" in m for m in contents(project))
    with transcript.open("ab") as fh:
        fh.write(b"".join(line(r) for r in tagged_turn("2")))
    later = capture(project, transcript, message=TAGGED)
    assert not later.sessions[0].lagged
    assert sum("exponential backoff" in m for m in contents(project)) == 1
    assert set(inserts_by_hash(db(project)).values()) == {1}


def test_the_worker_waits_briefly_for_the_transcript_to_catch_up(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transcript = write_transcript(project.parent / "t.jsonl", decision_session())
    polls: list[float] = []

    class LateWriter:
        """The worker's clock: the turn's last lines land while it waits for them."""

        monotonic = staticmethod(time.monotonic)

        @staticmethod
        def sleep(seconds: float) -> None:
            polls.append(seconds)
            if len(polls) == 2:  # a poll finds nothing new first
                with transcript.open("ab") as fh:
                    fh.write(b"".join(line(r) for r in tagged_turn("2")))

    queue_stop(project, transcript, message=TAGGED)
    monkeypatch.setattr(session_capture, "time", LateWriter)
    report = worker.run(project, lag_wait_s=3600.0)
    assert len(polls) == 2, "it polls until the lines arrive, then stops"
    assert not report.sessions[0].lagged
    assert sum("billing service retries" in m for m in contents(project)) == 1
    assert cursor_row(project).byte_offset == transcript.stat().st_size


def global_session() -> list[dict[str, Any]]:
    remember = (
        "<command-name>/cortex:remember</command-name>\n<command-message>remember</command-message>\n"
        "<command-args>--global --type preference Always answer with British spelling in prose</command-args>"
    )
    return [user_record(remember, uuid="g1", sessionId=SESSION), *decision_session()]


def test_global_memories_go_to_the_global_store(project: Path, cortex_home: Path) -> None:
    transcript = write_transcript(project.parent / "t.jsonl", global_session())
    capture(project, transcript)
    shared = snapshot(project, cortex_home)["global"]
    assert [m[2] for m in shared["memories"]] == ["Always answer with British spelling in prose"]
    assert shared["cursors"][0][:3] == (SESSION, str(transcript), transcript.stat().st_size)
    assert not any("British" in m for m in contents(project))


def test_a_crash_between_the_global_and_the_project_commit_writes_nothing_twice(
    project: Path, cortex_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transcript = write_transcript(project.parent / "t.jsonl", global_session())
    real = writer.write_batch

    def crash_on_project(cx: Any, store: Any, items: Any) -> Any:
        if store.scope is Scope.PROJECT:
            raise RuntimeError("killed before the project commit")
        return real(cx, store, items)

    monkeypatch.setattr(writer, "write_batch", crash_on_project)
    failed = capture(project, transcript)
    assert failed.failed == 1 and len(queue_files(project)) == 1  # the entry is kept
    monkeypatch.setattr(writer, "write_batch", real)
    worker.run(project, lag_wait_s=0.0)
    assert queue_files(project) == []
    assert inserts_by_hash(cortex_home / "cortex-global.db", Scope.GLOBAL).total() == 1
    store = open_store(cortex_home / "cortex-global.db", Scope.GLOBAL)
    [memory] = store.list_memories()
    assert memory.access_count == 0 and [r["op"] for r in store.journal_rows()] == ["insert"]
    assert memory_count(db(project)) >= 2


# -- queue and lock ---------------------------------------------------------------------------
def test_a_second_worker_exits_at_once_while_one_holds_the_lock(project: Path) -> None:
    transcript = write_transcript(project.parent / "t.jsonl", decision_session())
    queue_stop(project, transcript)
    with worker_lock_held(project):
        report = worker.run(project, lag_wait_s=0.0)
    assert report.busy and report.sessions == []
    assert len(queue_files(project)) == 1


def test_many_triggers_of_one_session_are_one_capture(project: Path) -> None:
    transcript = write_transcript(project.parent / "t.jsonl", decision_session())
    for _ in range(5):
        queue_stop(project, transcript)
    assert len(queue_files(project)) == 5
    report = worker.run(project, lag_wait_s=0.0)
    assert len(report.sessions) == 1 and report.batches == 1
    assert queue_files(project) == []


def test_a_queue_file_that_is_not_an_entry_is_set_aside(project: Path) -> None:
    folder = project / STORE_DIR / "queue"
    folder.mkdir(parents=True)
    (folder / "00000000000000000001-0000001-0000.json").write_text("{not json")
    (folder / "00000000000000000002-0000001-0000.json").write_text('{"session_id": "s"}')
    report = worker.run(project, lag_wait_s=0.0)
    assert report.sessions == []
    assert sorted(p.name.endswith(".bad") for p in folder.iterdir()) == [True, True]


def test_an_unwritable_store_keeps_the_queue_entries_for_later(project: Path) -> None:
    transcript = write_transcript(project.parent / "t.jsonl", decision_session())
    queue_stop(project, transcript)
    foreign = db(project)
    foreign.write_bytes(b"this is somebody else's file, not SQLite" * 10)
    report = worker.run(project, lag_wait_s=0.0)
    assert report.failed == 1 and len(queue_files(project)) == 1
    assert "not an SQLite database" in (project / STORE_DIR / "cortex.log").read_text()
    assert foreign.read_bytes().startswith(b"this is somebody else's file")  # never overwritten
    foreign.unlink()
    later = worker.run(project, lag_wait_s=0.0)
    assert later.actions().get("stored", 0) >= 2 and queue_files(project) == []


def test_a_lock_that_cannot_be_taken_keeps_the_queue_for_a_later_run(project: Path) -> None:
    transcript = write_transcript(project.parent / "t.jsonl", decision_session())
    queue_stop(project, transcript)
    lock = project / STORE_DIR / worker.LOCK_FILE
    lock.unlink(missing_ok=True)
    lock.mkdir()  # opening it fails with an OSError, as on a read-only or foreign-owned folder
    report = worker.run(project, lag_wait_s=0.0)
    assert report.batches == 0 and len(queue_files(project)) == 1
    assert "cannot take the worker lock" in (project / STORE_DIR / "cortex.log").read_text()
    lock.rmdir()
    later = worker.run(project, lag_wait_s=0.0)
    assert later.actions().get("stored", 0) >= 2 and queue_files(project) == []


def test_after_a_batch_the_briefing_and_the_lifecycle_run(project: Path) -> None:
    transcript = write_transcript(project.parent / "t.jsonl", decision_session())
    capture(project, transcript)
    rules = (project / ".claude/rules/cortex-memory.md").read_text()
    assert "Postgres advisory locks instead of Redis" in rules
    assert "/.claude/rules/cortex-memory.md" in (project / ".git/info/exclude").read_text()
    store = open_store(db(project), Scope.PROJECT)
    assert store.get_meta(META_EXTRACTIONS) == "1"
    capture(project, transcript)  # nothing new: no lifecycle step, no re-render
    assert open_store(db(project), Scope.PROJECT).get_meta(META_EXTRACTIONS) == "1"


def test_turns_run_in_a_subfolder_also_refresh_the_project_roots_briefing(project: Path) -> None:
    """A new session starting at the root reads the root's cache: turns that ran in a subfolder
    (the session `cd`ed there) must not leave it holding the notes of before them."""
    from cortex.shell.briefing_files import read_cache
    from tests.support.runtime import run_hook, stop_payload

    first = write_transcript(project.parent / "t.jsonl", tagged_turn("1"))
    capture(project, first)  # at the root: the root's cache has the first note
    sub = project / "pocket-llm"
    sub.mkdir()
    later = "[MEMORY: gotcha] The pocket-llm launcher merges config.snippet.toml into config.toml."
    write_transcript(first, [*tagged_turn("1"), *tagged_turn("2", later, "msg_10")])
    with worker_lock_held(project):
        assert run_hook("Stop", {**stop_payload(project, first), "cwd": str(sub)}) == ""
    worker.run(project, lag_wait_s=0.0)

    briefing_dir = project / STORE_DIR / "briefing"
    branch = subprocess.run(
        ["git", "branch", "--show-current"], cwd=project, capture_output=True, text=True, check=True
    ).stdout.strip()
    for where in ("", "pocket-llm"):
        cached = read_cache(briefing_dir, branch, where)
        assert cached is not None, where
        assert "config.snippet.toml" in cached.stable + cached.moment, where


# `cortex.worker` is the name plugin copies of the previous release start the worker by.
@pytest.mark.parametrize("module", ["cortex.plugin.worker", "cortex.worker"])
def test_the_worker_command_line(project: Path, module: str) -> None:
    transcript = write_transcript(project.parent / "t.jsonl", decision_session())
    queue_stop(project, transcript)
    proc = subprocess.run(
        [sys.executable, "-m", module, "--root", str(project), "--once"],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
    assert memory_count(db(project)) >= 2
    assert "worker done: 1 sessions" in (project / STORE_DIR / "cortex.log").read_text()


def test_queue_entries_round_trip(tmp_path: Path) -> None:
    entry = queue.QueueEntry("Stop", "s", "/t.jsonl", "/p", "reply", False, "2026-01-01T00:00:00Z")
    path = queue.write_entry(tmp_path, entry)
    assert queue.parse_entry(path.read_bytes()) == entry
    assert queue.read_work(tmp_path)[0].entry == entry


@pytest.mark.slow
@pytest.mark.usefixtures("real_model")
def test_with_the_local_model_memories_are_embedded(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORTEX_EMBEDDER", "local")
    transcript = write_transcript(project.parent / "t.jsonl", decision_session())
    report = capture(project, transcript)
    assert report.embedded >= 2 and "ONNX" in report.embedder
    with Cortex(resolve_paths(project)) as cx:
        key = cx.embedder_key()
        store = cx.write_store(Scope.PROJECT)
        found = store.vector_index(key) if key else None
        assert found is not None and store.count_unembedded(found.name) == 0


def test_a_note_rewritten_by_a_later_turn_is_embedded_by_its_new_text(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A failure's gotcha says "fixed later" once a later turn's build passes: its text changes in
    # place, and the vector of its old text must not stand for it.
    from cortex.capture.embed import memory_text
    from cortex.store.packing import unpack
    from tests.capture.test_state_supersession import turn

    monkeypatch.setenv("CORTEX_EMBEDDER", "local")
    fails = "error[E0599]: no method named `clone` found for struct `Database`"
    built = "    Finished `release` profile [optimized] target(s) in 4.69s"
    turns = [turn(1, "cargo build", fails, 101, "The Database struct needs to implement Clone.", SESSION)]
    transcript = write_transcript(project.parent / "t.jsonl", turns[0])
    capture(project, transcript)
    turns.append(turn(2, "cargo build", built, 0, "It builds now.", SESSION))
    write_transcript(transcript, [r for t in turns for r in t])
    capture(project, transcript)
    with Cortex(resolve_paths(project)) as cx:
        store = cx.write_store(Scope.PROJECT)
        (gotcha,) = [m for m in store.all_memories() if m.content.startswith("`cargo build` failed")]
        assert gotcha.content.endswith("; fixed later")
        found = store.vector_index(cx.embedder_key() or "")
        assert found is not None and store.count_unembedded(found.name) == 0
        stored = unpack(store.read_vectors(found.name, [gotcha.id])[gotcha.id])
        embedder = cx.bulk_embedder().backend
        assert embedder is not None
        old_text = gotcha.content.removesuffix("; fixed later")
        new, old = embedder.embed_documents(
            [memory_text(cx, t, gotcha.type, Scope.PROJECT) for t in (gotcha.content, old_text)]
        )
        assert stored == pytest.approx(list(new), abs=1e-4)
        assert stored != pytest.approx(list(old), abs=1e-4)
