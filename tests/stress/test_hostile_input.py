"""Hypothesis throws junk at every hook's stdin, at transcript lines, at CLI arguments and at
FTS queries: no hook raises or prints anything but its JSON, no command crashes, no store breaks.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cortex.cli.main import cli
from cortex.paths import STORE_DIR
from cortex.plugin import hooks, worker
from tests.support.runtime import (
    SESSION,
    assistant_record,
    capture,
    memory_count,
    queue_files,
    run_hook,
    user_record,
    worker_lock_held,
)
from tests.support.strategies import fts_text
from tests.support.stress import integrity, journal_gaps

FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)
EVENTS = ("SessionStart", "Stop", "PreCompact", "SessionEnd", "UserPromptSubmit", "Notification", "")
NESTED = b"[" * 200_000 + b"]" * 200_000
HUGE = "x" * 2_000_000

junk_text = st.one_of(
    st.text(max_size=200),
    st.sampled_from(["\x00", "\udcff\udcfe", "\u202e", "\ufeff", "[MEMORY: decision] \x00", HUGE]),
)
json_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), junk_text),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@pytest.fixture
def populated(project: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A project with memories and a briefing; relative paths in payloads resolve inside it."""
    monkeypatch.chdir(project)
    monkeypatch.setenv("CORTEX_EMBEDDER", "none")
    for text in ("We chose Postgres advisory locks for the job queue", "The store runs SQLite in WAL mode"):
        assert CliRunner().invoke(cli, ["-C", str(project), "remember", text]).exit_code == 0
    yield project
    db = project / STORE_DIR / "cortex.db"
    assert integrity(db) == ["ok"] and journal_gaps(db) == []


def hook_payloads(project: Path) -> st.SearchStrategy[bytes]:
    places = [str(project), str(project / "missing"), "relative/dir", "", "/dev/null", "\x00"]
    transcripts = [str(project / "no-such.jsonl"), str(project), "/dev/zero", "", "t.jsonl"]
    shaped = st.fixed_dictionaries(
        {},
        optional={
            "session_id": st.one_of(st.sampled_from([SESSION, "", "../../etc"]), json_value),
            "transcript_path": st.one_of(st.sampled_from(transcripts), json_value),
            "cwd": st.one_of(st.sampled_from(places), json_value),
            "hook_event_name": json_value,
            "source": st.sampled_from(["startup", "resume", "clear", "compact", 7, None]),
            "prompt": json_value,
            "last_assistant_message": json_value,
        },
    ).map(lambda d: json.dumps(d).encode("utf-8", "surrogatepass"))
    return st.one_of(
        shaped,
        st.binary(max_size=300),
        json_value.map(lambda v: json.dumps(v).encode("utf-8", "surrogatepass")),
        st.sampled_from([NESTED, b"{" * 100_000, b"\xff\xfe{}", b"{}\x00", b" ", b"\n" * 10]),
    )


@given(data=st.data())
@FUZZ
def test_any_stdin_to_any_hook_exits_0_with_json_or_nothing(populated: Path, data: st.DataObject) -> None:
    project = populated
    before = memory_count(project / STORE_DIR / "cortex.db")
    event = data.draw(st.sampled_from(EVENTS))
    raw = data.draw(hook_payloads(project))
    env = {**os.environ, "CORTEX_USER_PROMPT_SUBMIT": "1"}
    with worker_lock_held(project):  # hooks only queue; one worker run below takes it all
        out = run_hook(event, raw, env)
    assert out == "" or isinstance(json.loads(out), dict)
    assert out.count("\n") <= 1
    assert memory_count(project / STORE_DIR / "cortex.db") == before
    assert not hooks.SPAWNED
    report = worker.run(project, lag_wait_s=0.0)  # whatever got queued: handled, never raised
    assert report.failed == 0 and queue_files(project) == []


def transcript_line(session: str) -> st.SearchStrategy[bytes]:
    text = st.one_of(junk_text, st.sampled_from(["Decision: we use WAL because readers never block."]))
    content = st.one_of(text, json_value, st.lists(st.fixed_dictionaries({"type": st.sampled_from(
        ["text", "tool_use", "tool_result", "thinking", "image", 3]), "text": text, "input": json_value,
        "content": json_value}), max_size=3))  # fmt: skip
    record = st.builds(
        lambda kind, c, uuid: (
            user_record(c, uuid=uuid, sessionId=session)
            if kind == "user"
            else assistant_record(
                f"msg_{uuid}",
                {"type": "text", "text": c} if isinstance(c, str) else c,
                uuid=uuid,
                sessionId=session,
            )
        ),
        st.sampled_from(["user", "assistant"]),
        content,
        st.text(max_size=6),
    )
    return st.one_of(
        record.map(lambda r: json.dumps(r).encode("utf-8", "surrogatepass")),
        json_value.map(lambda v: json.dumps(v).encode("utf-8", "surrogatepass")),
        st.binary(max_size=200).filter(lambda b: b"\n" not in b),
        st.sampled_from([NESTED, b'{"type": "user", "message": {"content": "' + HUGE.encode() + b'"}}',
                         b'{"type": "assistant"', b"\xc3\x28\xa0\xa1", b'{"a": "\x00"}']),
    )  # fmt: skip


@given(data=st.data())
@FUZZ
def test_any_transcript_is_captured_once_without_errors(populated: Path, data: st.DataObject) -> None:
    project = populated
    session = f"fuzz-{data.draw(st.integers(0, 10**9))}"
    lines = data.draw(st.lists(transcript_line(session), max_size=8))
    tail = data.draw(st.sampled_from([b"\n", b"", b'{"type": "user", "mess']))
    transcript = project / "transcripts" / f"{session}.jsonl"
    transcript.parent.mkdir(exist_ok=True)
    transcript.write_bytes(b"\n".join(lines) + tail)
    first = capture(project, transcript, session)
    assert first.failed == 0 and not first.busy
    again = capture(project, transcript, session)
    assert again.failed == 0 and again.actions() == {}  # nothing is extracted twice


COMMANDS = ("remember", "recall", "forget", "get", "traverse", "supersede", "status", "lifecycle",
            "consolidate", "restore", "export", "brief", "rebuild", "hook")  # fmt: skip
OPTIONS = ("--json", "--type", "--limit", "--budget-tokens", "--scope", "--global", "--pin", "--tags",
           "--priority", "--depth", "--yes", "--dry-run", "--list", "-", "--", "decision", "0", "-1",
           "999999999999", "all", "\udcff", "")  # fmt: skip


@given(
    command=st.sampled_from(COMMANDS),
    args=st.lists(st.one_of(st.sampled_from(OPTIONS), fts_text), max_size=5),
)
@FUZZ
def test_any_cli_arguments_fail_cleanly_or_work(populated: Path, command: str, args: list[str]) -> None:
    result = CliRunner().invoke(cli, ["-C", str(populated), command, *args], input="junk \x00 stdin")
    assert result.exit_code in (0, 1, 2), result.output
    assert "internal error" not in result.output and "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    if result.exit_code == 1:
        assert "cortex: error:" in result.output or "confirmation" in result.output, result.output


@given(text=fts_text)
@FUZZ
def test_any_query_text_is_a_valid_search(populated: Path, text: str) -> None:
    result = CliRunner().invoke(cli, ["-C", str(populated), "recall", "--json", "--", text])
    if result.exit_code == 2:  # nothing searchable is a usage error, never a crash
        assert "QUERY is empty" in result.output, result.output
        return
    assert result.exit_code == 0, result.output
    assert isinstance(json.loads(result.stdout), dict)
