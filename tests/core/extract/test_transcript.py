"""Transcript JSONL parsing: record whitelist, grouping, tool linking, robustness to any bytes."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex.core.extract.transcript import BRIEFING_MARKER, ParsedChunk, Role, line_identity, parse_chunk
from tests.support.transcript_builders import (
    FIXTURES,
    assistant_record,
    fixture_files,
    line,
    user_record,
)

needs_fixtures = pytest.mark.skipif(
    not FIXTURES.is_dir(), reason=f"shared transcript fixtures not found at {FIXTURES}"
)


def parse(*records: dict[str, object] | bytes, sidechains: bool = False) -> ParsedChunk:
    data = b"".join(r if isinstance(r, bytes) else line(r) for r in records)
    return parse_chunk(data, 0, include_sidechains=sidechains)


def _kept_assistant_ids(path: Path) -> set[str]:
    """Message ids of main-chain assistant records that carry text, thinking or a tool call."""
    ids = set()
    for raw in path.read_bytes().splitlines():
        record = json.loads(raw)
        if record.get("type") != "assistant" or record.get("isSidechain"):
            continue
        blocks = record["message"]["content"]
        if any(b.get("type") in ("tool_use", "thinking") or b.get("text", "").strip() for b in blocks):
            ids.add(record["message"]["id"])
    return ids


# --- the real transcripts ----------------------------------------------------------------------


@needs_fixtures
@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.name)
def test_every_fixture_parses_without_malformed_lines(path: Path) -> None:
    data = path.read_bytes()
    chunk = parse_chunk(data, 0)
    assert chunk.malformed == 0
    assert chunk.lines == data.count(b"\n")
    assert chunk.next_offset == len(data)
    assert chunk.lines == chunk.skipped + len(chunk.compact_boundaries) + sum(
        len(m.uuids) for m in chunk.messages
    ) + _empty_assistant_lines(data)
    for message in chunk.messages:
        assert not message.is_sidechain
        for text in message.texts:
            assert not text.startswith("This session is being continued")
            assert "<command-name>" not in text and "<local-command-stdout>" not in text


def _empty_assistant_lines(data: bytes) -> int:
    """Assistant lines whose only block is blank text ("\\n\\n") belong to no kept message."""
    count = 0
    by_id: Counter[str] = Counter()
    kept: set[str] = set()
    for raw in data.splitlines():
        record = json.loads(raw)
        if record.get("type") != "assistant" or record.get("isSidechain"):
            continue
        mid = record["message"]["id"]
        by_id[mid] += 1
        blocks = record["message"]["content"]
        if any(b.get("type") != "text" or b.get("text", "").strip() for b in blocks):
            kept.add(mid)
    for mid, n in by_id.items():
        count += 0 if mid in kept else n
    return count


@needs_fixtures
def test_long_session_groups_assistant_lines_by_message_id() -> None:
    path = FIXTURES / "spotter" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
    chunk = parse_chunk(path.read_bytes(), 0)
    assistant_ids = [m.message_id for m in chunk.messages if m.role is Role.ASSISTANT]
    assert len(assistant_ids) == len(set(assistant_ids))
    assert set(assistant_ids) == _kept_assistant_ids(path)
    uses = [u for m in chunk.messages for u in m.tool_uses]
    assert len(uses) == 242
    assert all(u.result is not None for u in uses)  # every call is linked to its result
    assert sum(1 for u in uses if u.failed) == 12
    assert len(chunk.compact_boundaries) == 1


@needs_fixtures
def test_sidechain_transcripts_are_skipped_unless_asked_for() -> None:
    path = FIXTURES / "spotter" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04" / "subagents"
    data = (path / "agent-aac57f5.jsonl").read_bytes()
    assert parse_chunk(data, 0).messages == ()
    included = parse_chunk(data, 0, include_sidechains=True).messages
    assert len(included) > 10 and all(m.is_sidechain for m in included)


@needs_fixtures
def test_current_client_record_zoo_keeps_only_the_conversation() -> None:
    data = (FIXTURES / "generated" / "cc-2.1.330-mock-api-session.jsonl").read_bytes()
    chunk = parse_chunk(data, 0)
    texts = [t for m in chunk.messages for t in m.texts]
    assert texts == ["hello plain", "Mock reply: done.", "second turn RUNTOOL", "Mock reply: done."]
    commands = [m.command for m in chunk.messages if m.command]
    assert [(c.name, c.args) for c in commands] == [("/compact", "keep the marker")]
    assert not any("BRIEFING-MARKER" in t for t in texts)  # the injected context is an attachment


@needs_fixtures
def test_rejected_tool_use_is_marked_rejected() -> None:
    chunk = parse_chunk((FIXTURES / "spotter" / "short.jsonl").read_bytes(), 0)
    results = [u.result for m in chunk.messages for u in m.tool_uses]
    assert results and all(r is not None and r.rejected and r.is_error for r in results)


@needs_fixtures
def test_chunked_reads_see_every_line_exactly_once() -> None:
    data = (FIXTURES / "fasthooks" / "sample_main_transcript.jsonl").read_bytes()
    whole = parse_chunk(data, 0)
    for step in (1_000, 7_777, 20_000):
        offset, lines = 0, 0
        uuids: list[str] = []
        while offset < len(data):
            chunk = parse_chunk(data[offset : offset + step], offset)
            if chunk.lines == 0:  # one line longer than the window: widen it
                chunk = parse_chunk(data[offset:], offset)
            uuids.extend(u for m in chunk.messages for u in m.uuids)
            lines += chunk.lines
            offset = chunk.next_offset
        assert lines == whole.lines
        assert Counter(uuids) == Counter(u for m in whole.messages for u in m.uuids)


# --- record rules --------------------------------------------------------------------------------


def test_trailing_partial_line_is_left_for_the_next_read() -> None:
    first = line(user_record("hello there"))
    chunk = parse_chunk(first + b'{"type": "user", "mess', 100)
    assert chunk.next_offset == 100 + len(first)
    assert chunk.lines == 1 and len(chunk.messages) == 1
    assert chunk.messages[0].end_offset == 100 + len(first)


def test_malformed_lines_are_counted_and_consumed() -> None:
    bad = [
        b"not json",
        b"[1, 2, 3]",
        b'"a string"',
        b'{"type": "user", "message": {"content": "\xff\xfe"}}',
        b'{"type": "user", "message": {"content": "a\x00b"}}',
        b"[" * 100_000 + b"]" * 100_000,
        b'{"n": ' + b"9" * 5000 + b"}",
    ]
    data = b"\n".join(bad) + b"\n" + line(user_record("still read"))
    chunk = parse_chunk(data, 0)
    assert chunk.malformed == len(bad)
    assert chunk.next_offset == len(data)
    assert [m.texts for m in chunk.messages] == [("still read",)]


def test_only_user_and_assistant_records_become_messages() -> None:
    chunk = parse(
        {"type": "progress", "uuid": "p", "data": {"type": "hook_progress"}},
        {"type": "file-history-snapshot", "messageId": "x", "snapshot": {}},
        {"type": "queue-operation", "operation": "enqueue", "content": "hi"},
        {"type": "attachment", "uuid": "t", "attachment": {"type": "hook_additional_context"}},
        {"type": "summary", "summary": "A title", "leafUuid": "u"},
        {"type": "last-prompt", "lastPrompt": "hi"},
        {"type": "api-request", "uuid": "r"},
        {"type": "some-future-type", "uuid": "f", "message": {"content": "x"}},
        {"type": "system", "subtype": "stop_hook_summary", "uuid": "s"},
        {"type": "system", "subtype": "compact_boundary", "uuid": "c"},
        user_record("kept"),
    )
    assert [m.texts for m in chunk.messages] == [("kept",)]
    assert chunk.skipped == 9
    assert len(chunk.compact_boundaries) == 1


@pytest.mark.parametrize(
    "flag",
    [
        {"isSidechain": True},
        {"isMeta": True},
        {"repeatsCompactSummary": True},
        {"isCompactSummary": True, "repeatsCompactSummary": True},
        {"isVisibleInTranscriptOnly": True},
    ],
)
def test_flagged_user_records_are_skipped(flag: dict[str, object]) -> None:
    record = user_record("This session is being continued from a previous conversation")
    chunk = parse({**record, **flag})
    assert chunk.messages == ()
    assert chunk.skipped == 1


SUMMARY = "This session is being continued from a previous conversation.\n4. Errors and fixes:\n   - a fix"


@pytest.mark.parametrize(
    ("content", "flags"),
    [
        (SUMMARY, {}),  # 1.0.x: a string, nothing else flagged
        ([{"type": "text", "text": SUMMARY}], {}),  # a list of text blocks
        (SUMMARY, {"isVisibleInTranscriptOnly": True}),  # 2.x
    ],
)
def test_a_compaction_summary_is_kept_as_such_and_never_as_a_prompt(
    content: object, flags: dict[str, object]
) -> None:
    summary = {**user_record(content, "cs"), "isCompactSummary": True, **flags}
    chunk = parse(user_record("first prompt"), summary, user_record("next prompt", "u2"))
    assert [(m.texts, m.compacted) for m in chunk.messages] == [
        (("first prompt",), ""),
        ((), SUMMARY),
        (("next prompt",), ""),
    ]
    assert chunk.messages[1].record == "cs" and chunk.messages[1].git_branch == "main"
    assert chunk.skipped == 0


@pytest.mark.parametrize(
    "text",
    [
        "SessionStart hook additional context: cortex briefing for this project",
        f"<!-- {BRIEFING_MARKER} v1 -->\n## Decisions\n- we use SQLite",
        "<local-command-stdout>Compacted</local-command-stdout>",
        "[Request interrupted by user for tool use]",
    ],
)
def test_injected_and_client_written_text_is_not_a_user_statement(text: str) -> None:
    assert parse(user_record(text)).messages == ()


def test_cortex_briefing_quoted_by_the_assistant_is_dropped_too() -> None:
    chunk = parse(
        assistant_record("m1", {"type": "text", "text": f"Here it is: <!-- {BRIEFING_MARKER} -->"}),
        assistant_record("m1", {"type": "text", "text": "Plain reply."}, uuid="a2"),
    )
    assert [m.texts for m in chunk.messages] == [("Plain reply.",)]


def test_slash_command_echo_becomes_a_command() -> None:
    echo = (
        "<command-name>/cortex:remember</command-name>\n"
        "<command-message>remember</command-message>\n"
        "<command-args>we use uv, not pip</command-args>"
    )
    (message,) = parse(user_record(echo)).messages
    assert message.texts == ()
    assert message.command is not None
    assert (message.command.name, message.command.args) == (
        "/cortex:remember",
        "we use uv, not pip",
    )


def test_system_reminders_are_removed_from_user_text() -> None:
    (message,) = parse(
        user_record("fix the bug\n<system-reminder>\nInternal note\n</system-reminder>")
    ).messages
    assert message.texts == ("fix the bug",)


def test_assistant_lines_group_by_message_id_and_link_results_across_user_records() -> None:
    use_a = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
    use_b = {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "false"}}
    chunk = parse(
        assistant_record("m1", {"type": "thinking", "thinking": "hmm"}, uuid="a1"),
        assistant_record("m1", {"type": "text", "text": "Running two commands."}, uuid="a2"),
        assistant_record("m1", use_a, uuid="a3"),
        user_record([{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}], uuid="u1"),
        assistant_record("m1", use_b, uuid="a4"),
        user_record(
            [
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "content": "Exit code 1\n",
                    "is_error": True,
                }
            ],
            uuid="u2",
            toolUseResult="Error: Exit code 1",
        ),
    )
    first = chunk.messages[0]
    assert first.role is Role.ASSISTANT and first.uuids == ("a1", "a2", "a3", "a4")
    assert first.has_thinking and first.texts == ("Running two commands.",)
    ok, failed = first.tool_uses
    assert ok.failed is False and ok.result is not None and ok.result.content == "ok"
    assert failed.failed is True and failed.result is not None and failed.result.exit_code == 1
    assert first.end_offset == chunk.messages[1].end_offset + len(
        line(assistant_record("m1", use_b, uuid="a4"))
    )
    assert [m.role for m in chunk.messages] == [Role.ASSISTANT, Role.USER, Role.USER]


def test_tool_result_content_lists_are_flattened_and_long_output_clipped() -> None:
    content = [{"type": "text", "text": "head " + "x" * 10_000}, {"type": "text", "text": "tail"}]
    (message,) = parse(
        user_record([{"type": "tool_result", "tool_use_id": "t", "content": content}])
    ).messages
    result = message.tool_results[0]
    assert result.content.startswith("head ") and result.content.endswith("tail")
    assert len(result.content) < 5_000


def test_envelope_fields_are_carried() -> None:
    (message,) = parse(user_record("hi")).messages
    assert message.session_id == "s1" and message.cwd == "/home/dev/proj"
    assert message.git_branch == "main"
    assert message.timestamp is not None and message.timestamp.year == 2026


def test_last_uuid_identifies_the_last_consumed_line() -> None:
    no_uuid = {"type": "queue-operation", "operation": "enqueue"}
    data = line(user_record("a", uuid="u-1")) + line(no_uuid)
    chunk = parse_chunk(data, 0)
    assert chunk.last_uuid == line_identity(line(no_uuid))
    assert chunk.last_uuid is not None and chunk.last_uuid.startswith("sha256:")
    assert parse_chunk(line(user_record("a", uuid="u-1")), 0).last_uuid == "u-1"
    assert line_identity(b"garbage\n") == line_identity(b"garbage")


# --- robustness ----------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
blocks = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "tool_use", "tool_result", "thinking", "image", "new"])},
    optional={
        "text": st.text(max_size=40) | json_values,
        "id": st.sampled_from(["t1", "t2"]) | json_values,
        "name": st.sampled_from(["Bash", "Edit"]) | json_values,
        "input": json_values,
        "tool_use_id": st.sampled_from(["t1", "t2"]) | json_values,
        "content": st.text(max_size=40) | json_values,
        "is_error": json_values,
    },
)
record_like = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["user", "assistant", "system", "progress"]),
        "message": st.fixed_dictionaries(
            {},
            optional={
                "id": st.sampled_from(["m1", "m2"]) | json_values,
                "content": st.text(max_size=60) | st.lists(blocks, max_size=3) | json_values,
            },
        )
        | json_values,
    },
    optional={
        "uuid": st.sampled_from(["u1", "u2"]) | json_values,
        "isSidechain": json_values,
        "toolUseResult": st.sampled_from(["User rejected tool use", "Error: Exit code 2"]) | json_values,
        "timestamp": st.sampled_from(["2026-02-10T21:11:56.846Z", "not a date"]) | json_values,
        "subtype": st.sampled_from(["compact_boundary"]) | json_values,
        "gitBranch": json_values,
    },
)


@settings(max_examples=300)
@given(st.binary(max_size=2_000), st.integers(0, 10**9))
def test_any_bytes_parse_without_raising(data: bytes, start: int) -> None:
    chunk = parse_chunk(data, start)
    consumed = chunk.next_offset - start
    assert 0 <= consumed <= len(data)
    assert consumed == 0 or data[consumed - 1 : consumed] == b"\n"
    assert chunk.lines == data[:consumed].count(b"\n")
    assert chunk.malformed + chunk.skipped <= chunk.lines


@settings(max_examples=200)
@given(st.lists(record_like, max_size=6))
def test_any_json_records_parse_without_raising(records: list[dict[str, object]]) -> None:
    data = b"".join(json.dumps(r).encode() + b"\n" for r in records)
    chunk = parse_chunk(data, 0, include_sidechains=True)
    assert chunk.next_offset == len(data)
    for message in chunk.messages:
        assert all(isinstance(t, str) and "\x00" not in t for t in message.texts)
