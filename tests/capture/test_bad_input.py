"""Bad input through the real capture path: a real SQLite store, the capture use case, transcripts
of every client version and shape. Nothing crashes, nothing is lost, and the structural signals
(commits, test verdicts) still come out."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from cortex.app import Cortex
from cortex.capture import session as capture
from cortex.capture.queue import QueueEntry
from cortex.core.extract.pipeline import GitContext
from cortex.core.extract.transcript import parse_chunk
from cortex.core.extract.transcript_blocks import MAX_TOOL_RESULT_CHARS
from cortex.core.model import Scope
from cortex.shell import transcript_io
from tests.support.transcript_builders import (
    V1_0,
    V2_0,
    V2_1,
    VERSIONS,
    bash_result_record,
    bash_use_record,
    envelope,
    jsonl,
    prompt_record,
    text_record,
    tool_result_record,
)

SESSION = "s1"
NO_GIT = capture.GitFacts(GitContext())


def turn(n: int, *, version: str = V2_1, prompt: str = "", reply: str = "") -> list[dict[str, object]]:
    """A prompt, a test run that passes, a commit, and a reply: one turn of a real session."""
    records = [
        prompt_record(prompt or f"please finish step {n} of the plan", f"p{n}", version=version),
        bash_use_record(f"t{n}", "pytest -q 2>&1 | tail -3", version=version),
        bash_result_record(f"t{n}", f"...\n{n + 3} passed in 0.{n % 10}s", version=version),
        bash_use_record(f"c{n}", f"git commit -m 'step {n}'", version=version),
        bash_result_record(f"c{n}", f"[main {n:07x}] step {n} done\n 1 file changed", version=version),
    ]
    if reply:
        records.append(text_record(f"msg_r{n}", reply, f"r{n}", version=version))
    return records


def run_capture(cx: Cortex, path: Path) -> capture.SessionReport:
    entry = QueueEntry(event="Stop", session_id=SESSION, transcript_path=str(path))
    return capture.capture_session(cx, entry, NO_GIT, lag_wait_s=0.0)


def stored(cx: Cortex) -> list[str]:
    return sorted(m.content for m in cx.write_store(Scope.PROJECT).list_memories())


def recorded(cx: Cortex) -> list[str]:
    """Every memory captured, current or superseded by a newer state of the same thing."""
    return sorted(m.content for m in cx.write_store(Scope.PROJECT).list_memories(statuses=None))


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("version", VERSIONS)
def test_every_client_version_yields_its_commits_and_test_verdicts(
    fcx: Cortex, tmp_path: Path, version: str
) -> None:
    path = write(tmp_path / "t.jsonl", jsonl(turn(1, version=version) + turn(2, version=version)))
    report = run_capture(fcx, path)
    assert report.error is None and report.malformed == 0
    memories = stored(fcx)
    assert "Committed 0000001: step 1 done" in memories and "Committed 0000002: step 2 done" in memories
    assert any(m.startswith("Tests passed: `pytest -q` (5 passed") for m in memories)


def test_a_chat_json_array_split_into_lines(fcx: Cortex, tmp_path: Path) -> None:
    # A Stop hook's `logs/chat.json` holds the session as one JSON array; split into lines it
    # starts with a sidechain warm-up, carries summary and snapshot records, and keeps
    # non-ASCII text unescaped.
    records: list[dict[str, object]] = [
        {"type": "summary", "summary": "Déploiement du service", "leafUuid": "x"},
        {
            **envelope("user", "w1", V2_0),
            "isSidechain": True,
            "message": {"role": "user", "content": "Warmup"},
        },
        {"type": "file-history-snapshot", "messageId": "m", "snapshot": {"trackedFileBackups": {}}},
        *turn(1, version=V2_0, prompt="déploie le service sur la préproduction"),
    ]
    array = json.dumps(records, ensure_ascii=False, indent=2)
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in json.loads(array))
    report = run_capture(fcx, write(tmp_path / "chat.jsonl", lines.encode("utf-8")))
    assert report.error is None and report.malformed == 0
    assert "Committed 0000001: step 1 done" in stored(fcx)


def test_a_chat_json_array_on_one_line_is_read_record_by_record(tmp_path: Path) -> None:
    data = (json.dumps(turn(1, version=V1_0), ensure_ascii=False) + "\n").encode("utf-8")
    chunk = parse_chunk(data, 0)
    assert chunk.malformed == 0
    assert [u.name for m in chunk.messages for u in m.tool_uses] == ["Bash", "Bash"]


def test_a_non_english_session_keeps_its_structural_signals(fcx: Cortex, tmp_path: Path) -> None:
    records = [
        prompt_record("请修复登录页面的错误，然后运行测试并提交。", "p1"),
        text_record("msg_1", "好的，我先看看登录页面的代码。问题在于会话过期时间设置错误。", "a1"),
        bash_use_record("t1", "pytest -q"),
        bash_result_record("t1", "........\n8 passed in 0.31s"),
        bash_use_record("c1", "git commit -m '修复登录页面的会话过期错误'"),
        bash_result_record("c1", "[main 1a2b3c4] 修复登录页面的会话过期错误\n 2 files changed"),
        text_record("msg_2", "已修复并提交。测试全部通过。", "a2"),
    ]
    report = run_capture(fcx, write(tmp_path / "zh.jsonl", jsonl(records)))
    assert report.error is None and report.malformed == 0
    memories = stored(fcx)
    assert "Committed 1a2b3c4: 修复登录页面的会话过期错误" in memories
    assert "Tests passed: `pytest -q` (8 passed in 0.31s)" in memories


def test_a_windows_session_stores_no_foreign_paths(fcx: Cortex, tmp_path: Path) -> None:
    cwd = "C:\\Users\\dev\\proj"
    edit = {"type": "tool_use", "id": "e1", "name": "Edit", "input": {"file_path": f"{cwd}\\src\\app.py"}}
    message = {"id": "msg_e1", "type": "message", "role": "assistant", "content": [edit]}
    records = [
        {**prompt_record("fix the settings loader on Windows please"), "cwd": cwd},
        {**envelope("assistant", "a-e1", V2_1, cwd=cwd), "message": message},
        tool_result_record("e1", "The file has been updated.", is_error=False, top={"filePath": "x"}),
        text_record("msg_x", "Git Bash lives at C:/Program Files/Git/bin/bash.exe on this machine.", "a2"),
        *turn(1),
    ]
    report = run_capture(fcx, write(tmp_path / "win.jsonl", jsonl(records)))
    assert report.error is None and report.malformed == 0
    files = {f for m in fcx.write_store(Scope.PROJECT).list_memories() for f in m.source.files}
    assert not any("Program Files" in f or f.startswith(("Files/", "C:")) or "\\" in f for f in files)
    assert "Committed 0000001: step 1 done" in stored(fcx)


def test_thousands_of_records_are_read_in_bounded_chunks_and_nothing_is_lost(
    fcx: Cortex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    turns = 800  # 4000 records
    path = write(tmp_path / "long.jsonl", jsonl([r for n in range(turns) for r in turn(n)]))
    small = functools.partial(transcript_io.read_new_records, max_bytes=64 * 1024)
    monkeypatch.setattr(capture, "read_new_records", small)
    report = run_capture(fcx, path)
    assert report.error is None and report.malformed == 0
    assert report.chunks > 10  # bounded reads, each of at most 64 KB
    assert report.messages == turns * 5
    commits = [m for m in stored(fcx) if m.startswith("Committed ")]
    assert len(commits) == turns
    row = fcx.write_store(Scope.PROJECT).read_cursor(SESSION)
    assert row is not None and row.byte_offset == path.stat().st_size


@pytest.mark.parametrize("version", VERSIONS)
def test_a_megabyte_tool_result_is_clipped_and_the_session_goes_on(
    fcx: Cortex, tmp_path: Path, version: str
) -> None:
    huge = "\n".join(f"line {i}: " + "x" * 100 for i in range(30_000))  # about 3 MB
    output = huge + "\n3 failed, 40 passed in 9.1s"
    records = [
        prompt_record("run the whole suite", version=version),
        bash_use_record("t1", "pytest", version=version),
        bash_result_record("t1", output, exit_code=1, version=version),
        *turn(2, version=version),
    ]
    data = jsonl(records)
    assert len(data) > 3_000_000
    chunk = parse_chunk(data, 0)
    kept = [r.content for m in chunk.messages for r in m.tool_results]
    assert max(len(c) for c in kept) <= MAX_TOOL_RESULT_CHARS + 10  # head and tail, not 3 MB
    # Cut at line ends: no half line is left to read as a statement of its own.
    clipped = max(kept, key=len).splitlines()
    whole = set(output.splitlines()) | {"…", "Exit code 1"}  # 2.x puts the exit code first
    assert [line for line in clipped if line not in whole] == [], "a line was cut in two"
    report = run_capture(fcx, write(tmp_path / "big.jsonl", data))
    assert report.error is None and report.malformed == 0
    memories = stored(fcx)
    assert "Tests failing: `pytest` (3 failed, 40 passed in 9.1s)" in recorded(
        fcx
    )  # a later run of pytest is the current state
    assert "Committed 0000002: step 2 done" in memories


def test_a_transcript_rewritten_shorter_is_read_again_and_nothing_is_lost(
    fcx: Cortex, tmp_path: Path
) -> None:
    path = write(tmp_path / "t.jsonl", jsonl(turn(1) + turn(2) + turn(3)))
    first = run_capture(fcx, path)
    assert first.error is None and not first.restarted
    before = stored(fcx)
    # The client rewrites the file shorter mid-session (a rewind), then the session goes on.
    write(path, jsonl(turn(1) + turn(4)))
    second = run_capture(fcx, path)
    assert second.error is None and second.restarted
    after = stored(fcx)
    # What was captured stays: live, or superseded by the newer verdict of the same command.
    kept = {m.content for m in fcx.write_store(Scope.PROJECT).list_memories(statuses=None)}
    assert set(before) <= kept
    assert "Committed 0000004: step 4 done" in after
    assert len([m for m in after if m == "Committed 0000001: step 1 done"]) == 1  # not twice
    row = fcx.write_store(Scope.PROJECT).read_cursor(SESSION)
    assert row is not None and row.byte_offset == path.stat().st_size
    # It grows again from there: only the new turn is read.
    with path.open("ab") as fh:
        fh.write(jsonl(turn(5)))
    third = run_capture(fcx, path)
    assert not third.restarted and third.messages == 5
    assert "Committed 0000005: step 5 done" in stored(fcx)


def test_a_truncated_last_line_waits_for_the_rest(fcx: Cortex, tmp_path: Path) -> None:
    whole = jsonl(turn(1) + turn(2))
    cut = len(whole) - 40
    path = write(tmp_path / "t.jsonl", whole[:cut])
    first = run_capture(fcx, path)
    assert first.error is None and first.malformed == 0
    assert "Committed 0000002: step 2 done" not in stored(fcx)
    write(path, whole)
    second = run_capture(fcx, path)
    assert second.malformed == 0 and not second.restarted
    assert "Committed 0000002: step 2 done" in stored(fcx)


def test_a_call_left_unanswered_waits_while_the_session_runs_and_is_read_when_it_ends(
    fcx: Cortex, tmp_path: Path
) -> None:
    records = [
        *turn(1),
        prompt_record("and now the second step", "p2"),
        text_record("msg_2", "Running the migration now; it rewrites the orders table.", "a2"),
        bash_use_record("m2", "alembic upgrade head"),
    ]
    path = write(tmp_path / "t.jsonl", jsonl(records))
    run_capture(fcx, path)
    row = fcx.write_store(Scope.PROJECT).read_cursor(SESSION)
    assert row is not None and row.byte_offset < path.stat().st_size  # the open call waits
    entry = QueueEntry(event="SessionEnd", session_id=SESSION, transcript_path=str(path), closed=True)
    final = capture.capture_session(fcx, entry, NO_GIT, closed=True, lag_wait_s=0.0)
    assert final.error is None and final.messages == 3  # the unfinished turn, read whole
    row = fcx.write_store(Scope.PROJECT).read_cursor(SESSION)
    assert row is not None and row.byte_offset == path.stat().st_size


def client_zoo(version: str) -> list[dict[str, object]]:
    """The non-conversation records and flags each version writes around a turn."""
    compact_summary = "This session is being continued from a previous conversation. Summary: ..."
    records: list[dict[str, object]] = [
        {"type": "summary", "summary": "Fixing the login page", "leafUuid": "x"},
        {**prompt_record("Warmup", "w1", version=version), "isSidechain": True},
        {**text_record("msg_w", "I am ready to help.", "w2", version=version), "isSidechain": True},
        {
            **envelope("system", "b1", version),
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
        },
        {**prompt_record(compact_summary, "cs", version=version), "isCompactSummary": True},
        prompt_record(
            "<command-name>/compact</command-name>\n<command-message>compact</command-message>\n"
            "<command-args></command-args>",
            "cmd",
            version=version,
        ),
        prompt_record("<local-command-stdout>Compacted</local-command-stdout>", "lc", version=version),
        {**prompt_record("Caveat: internal", "meta", version=version), "isMeta": True},
    ]
    if version >= "2.0":
        records.append({"type": "file-history-snapshot", "messageId": "m", "snapshot": {}})
    if version >= "2.1":
        records += [
            {"type": "progress", "uuid": "pg", "data": {"type": "hook_progress"}},
            {"type": "attachment", "uuid": "at", "attachment": {"type": "hook_additional_context"}},
            {"type": "queue-operation", "operation": "enqueue", "content": "later"},
            {"type": "last-prompt", "leafUuid": "x"},
        ]
    thinking = {"type": "thinking", "thinking": "plan the fix", "signature": "sig"}
    message = {"id": "msg_th", "type": "message", "role": "assistant", "content": [thinking]}
    records.append({**envelope("assistant", "th", version), "message": message})
    return records


@pytest.mark.parametrize("version", VERSIONS)
def test_each_versions_record_zoo_is_skipped_and_the_turns_still_count(
    fcx: Cortex, tmp_path: Path, version: str
) -> None:
    reminder = "<system-reminder>\nThe user opened a file.\n</system-reminder>"
    records = [
        *client_zoo(version),
        *turn(1, version=version, prompt=f"fix the login page and commit\n{reminder}"),
    ]
    report = run_capture(fcx, write(tmp_path / "zoo.jsonl", jsonl(records)))
    assert report.error is None and report.malformed == 0
    memories = stored(fcx)
    assert "Committed 0000001: step 1 done" in memories
    assert not any("continued from a previous conversation" in m or "Warmup" in m for m in memories)
    assert not any("system-reminder" in m or "Compacted" in m for m in memories)


def test_a_tool_result_longer_than_a_whole_read_stays_with_its_call(
    fcx: Cortex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = functools.partial(transcript_io.read_new_records, max_bytes=64 * 1024)
    monkeypatch.setattr(capture, "read_new_records", small)
    output = "\n".join(f"case {i} ok" for i in range(40_000)) + "\n2 failed, 39998 passed in 40.0s"
    records = [
        *turn(1),
        prompt_record("run everything", "p9"),
        bash_use_record("t9", "pytest -v"),
        bash_result_record("t9", output, exit_code=1),  # one line of about 500 KB
        *turn(2),
    ]
    report = run_capture(fcx, write(tmp_path / "t.jsonl", jsonl(records)))
    assert report.error is None and report.malformed == 0
    memories = stored(fcx)
    assert "Tests failing: `pytest -v` (2 failed, 39998 passed in 40.0s)" in recorded(
        fcx
    )  # a later run of pytest is the current state
    assert "Committed 0000002: step 2 done" in memories
