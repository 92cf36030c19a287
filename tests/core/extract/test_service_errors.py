"""What the service refused: a tool that cannot work in this environment, a prompt refused under
the usage policy; transient answers and shell commands are not this layer's."""

from __future__ import annotations

import pytest

from cortex.core.extract.pipeline import extract_candidates
from cortex.core.extract.service_errors import extract_service_errors
from cortex.core.extract.transcript import Message, ToolResult, ToolUse, parse_chunk
from cortex.core.extract.turns import split_turns
from cortex.core.model import MemoryType
from tests.support.transcript_builders import (
    V1_0,
    V2_0,
    assistant,
    bash,
    envelope,
    jsonl,
    prompt_record,
    text_record,
    tool_result_record,
    user,
)

OAUTH = (
    'API Error: 401 {"type":"error","error":{"type":"authentication_error","message":"OAuth '
    'authentication is currently not supported."},"request_id":"req_011CUJ5go9xNihVzrvJBRY5i"} · '
    "Please run /login"
)
POLICY = (
    "API Error: Claude Code is unable to respond to this request, which appears to violate our "
    "Usage Policy (https://www.anthropic.com/legal/aup). Please double press esc to edit your last "
    "message or start a new session for Claude Code to assist with a different task."
)


def call(name: str, output: str, tid: str, *, error: bool = False) -> ToolUse:
    return ToolUse(tid, name, {"url": "https://example.org/x"}, ToolResult(tid, output, is_error=error))


def contents(turn: list[Message]) -> list[str]:
    return [c.content for c, _ in extract_service_errors(turn)]


def use_record(tid: str, name: str, tool_input: dict[str, object], version: str) -> dict[str, object]:
    block = {"type": "tool_use", "id": tid, "name": name, "input": tool_input}
    message = {"id": f"msg_{tid}", "type": "message", "role": "assistant", "content": [block]}
    return {**envelope("assistant", f"a-{tid}", version), "message": message}


def test_a_tool_the_service_refuses_is_a_gotcha_with_what_was_used_instead() -> None:
    # Real shape (2.0.22): WebFetch's result is the service's 401, not flagged as an error.
    records = [
        prompt_record("read this issue https://github.com/org/repo/issues/227", version=V2_0),
        use_record("t1", "WebFetch", {"url": "https://github.com/org/repo/issues/227", "prompt": "x"}, V2_0),
        tool_result_record("t1", OAUTH, is_error=False, top={"code": 200, "result": OAUTH}, version=V2_0),
        use_record("t2", "WebSearch", {"query": "org repo issue 227"}, V2_0),
        tool_result_record("t2", "Web search results: ...", is_error=False, top={}, version=V2_0),
    ]
    messages = parse_chunk(jsonl(records), 0).messages
    found = extract_service_errors(messages)
    assert [(c.type, c.content) for c, _ in found] == [
        (
            MemoryType.GOTCHA,
            "WebFetch does not work in this environment: API Error 401 (OAuth authentication is "
            "currently not supported.); used WebSearch instead",
        )
    ]
    # The request id, which changes on every call, is not part of the note.
    assert "req_" not in found[0][0].content


def test_one_gotcha_per_tool_and_error_and_none_for_passing_answers() -> None:
    turn = [
        user("look these up"),
        assistant(uses=(call("WebFetch", OAUTH, "1"), call("WebFetch", OAUTH, "2"))),
    ]
    assert len(contents(turn)) == 1
    for output in (
        "API Error: 429 rate limited",  # another try may work
        'API Error: 529 {"type":"error","error":{"type":"overloaded_error"}}',
        "Request failed with status code 404",  # the page, not the tool
        "<html>fine</html>",
    ):
        refused = assistant(uses=(call("WebFetch", output, "1", error=True),))
        assert contents([user("x"), refused]) == [], output


def test_a_tool_that_answered_later_in_the_turn_is_no_gotcha() -> None:
    # Refused once, then it fetched the page (after a login, on a retry): the refusal did not last.
    later = call("WebFetch", "# Issue 227\nThe page's text", "2")
    assert contents([user("read it"), assistant(uses=(call("WebFetch", OAUTH, "1"), later))]) == []
    # Another tool working, or the same one refused again, leaves the gotcha.
    other = call("WebSearch", "Web search results: ...", "3")
    assert len(contents([user("read it"), assistant(uses=(call("WebFetch", OAUTH, "1"), other))])) == 1


def test_a_shell_commands_api_error_is_the_commands() -> None:
    turn = [user("call it"), assistant(uses=(bash("curl -s localhost:8000/analyze", OAUTH),))]
    assert contents(turn) == []


def test_a_message_without_json_keeps_the_code() -> None:
    turn = [user("x"), assistant(uses=(call("mcp__github__get_issue", "API Error: 403 Forbidden", "1"),))]
    assert contents(turn) == ["mcp__github__get_issue does not work in this environment: API Error 403"]


@pytest.mark.parametrize("version", [V1_0, V2_0])
def test_a_prompt_refused_under_the_usage_policy_is_a_gotcha_quoting_it(version: str) -> None:
    # Real shape (1.0.72): the refusal is a synthetic assistant message, `isApiErrorMessage`.
    prompt = 'Test /analyze/prompt with {"prompt": "Ignore all previous instructions"}'
    refusal = {**text_record("m1", POLICY, "a1", version=version), "isApiErrorMessage": True}
    messages = parse_chunk(jsonl([prompt_record(prompt, version=version), refusal]), 0).messages
    (turn,) = split_turns(messages)
    assert contents(turn) == [
        f'Claude Code refused this prompt as a Usage Policy violation (API Error): "{prompt}"'
    ]
    # Any other API error banner is no refusal of the prompt.
    other = {**text_record("m1", "API Error: Request timed out.", "a1", version=version)}
    (turn,) = split_turns(parse_chunk(jsonl([prompt_record(prompt, version=version), other]), 0).messages)
    assert contents(turn) == []


def test_the_pipeline_stores_it_redacted() -> None:
    key = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8" * 6
    prompt = f"use key {key} and fetch the docs"
    refusal = {**text_record("m1", POLICY, "a1", version=V2_0), "isApiErrorMessage": True}
    messages = parse_chunk(jsonl([prompt_record(prompt, version=V2_0), refusal]), 0).messages
    found = extract_candidates(messages, project_root=None, git=None)
    found = [c for c in found if "Usage Policy" in c.content]
    assert len(found) == 1
    assert key not in found[0].content and "fetch the docs" in found[0].content
