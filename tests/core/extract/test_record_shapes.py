"""Record shapes of every client version: refusals, interruptions and IDE notes are not statements
or runs; the request quoted in a progress note is what the user typed."""

from __future__ import annotations

import pytest

from cortex.core.extract.structural import extract_structural
from cortex.core.extract.transcript import parse_chunk
from tests.support.transcript_builders import (
    INTERRUPTED_FOR_TOOL,
    REJECT_ACTION,
    REJECT_PROCEED,
    V1_0,
    V2_0,
    V2_1,
    VERSIONS,
    bash_result_record,
    bash_use_record,
    envelope,
    jsonl,
    prompt_record,
    refused_result_record,
    tool_result_record,
)

ROOT = "/home/dev/proj"
IDE_FILE = (
    "<ide_opened_file>The user opened the file /home/dev/proj/src/icons.ts in the IDE. This may "
    "or may not be related to the current task.</ide_opened_file>"
)
IDE_SELECTION = (
    "<ide_selection>The user selected the lines 3 to 9 from /home/dev/proj/src/icons.ts:\n"
    "export const morning = 'sun';\n\nThis may or may not be related to the current task."
    "</ide_selection>"
)


def edit_record(tid: str, path: str, version: str = V2_1) -> dict[str, object]:
    block = {"type": "tool_use", "id": tid, "name": "Edit", "input": {"file_path": path}}
    message = {"id": f"msg_{tid}", "type": "message", "role": "assistant", "content": [block]}
    return {**envelope("assistant", f"a-{tid}", version), "message": message}


def edit_done(tid: str, version: str = V2_1) -> dict[str, object]:
    top = {"filePath": "x", "oldString": "a", "newString": "b", "userModified": False}
    return tool_result_record(tid, "The file has been updated.", is_error=False, top=top, version=version)


@pytest.mark.parametrize(
    "content",
    [
        [{"type": "text", "text": IDE_FILE}, {"type": "text", "text": "make the morning icon bigger"}],
        f"{IDE_FILE}\nmake the morning icon bigger",
        [{"type": "text", "text": f"{IDE_SELECTION}\nmake the morning icon bigger"}],
    ],
)
def test_ide_notes_are_not_the_users_request(content: object) -> None:
    chunk = parse_chunk(
        jsonl([prompt_record(content), edit_record("t1", f"{ROOT}/src/icons.ts"), edit_done("t1")]), 0
    )
    assert [m.texts for m in chunk.messages if m.texts] == [("make the morning icon bigger",)]
    (note,) = [c.content for c, _ in extract_structural(chunk.messages, project_root=ROOT)]
    assert note == 'Edited src/icons.ts (request: "make the morning icon bigger")'


def test_a_prompt_that_is_only_an_ide_note_is_no_prompt() -> None:
    chunk = parse_chunk(jsonl([prompt_record([{"type": "text", "text": IDE_FILE}])]), 0)
    assert chunk.messages == ()


@pytest.mark.parametrize(
    ("wording", "top", "version"),
    [
        (REJECT_PROCEED, f"Error: {REJECT_PROCEED}", V1_0),
        (REJECT_PROCEED, f"Error: {REJECT_PROCEED}", V2_0),
        (REJECT_PROCEED, "User rejected tool use", V2_1),
        (REJECT_PROCEED, f"Error: {REJECT_PROCEED}", V2_1),
        (REJECT_ACTION, f"Error: {REJECT_ACTION}", V2_1),
        ("Permission to use Bash has been auto-denied (prompts unavailable).", None, V2_1),
        ("Bash operation blocked by hook:\n- no force pushes", "Error: Bash operation blocked by hook", V1_0),
    ],
)
def test_refusals_of_every_wording_are_rejected_and_never_failures(
    wording: str, top: object, version: str
) -> None:
    records = [
        prompt_record("push the branch", version=version),
        bash_use_record("t1", "npm run build", version=version),
        refused_result_record("t1", wording, top, version=version),
    ]
    chunk = parse_chunk(jsonl(records), 0)
    (use,) = [u for m in chunk.messages for u in m.tool_uses]
    assert use.result is not None and use.result.rejected and not use.result.interrupted
    found = [c.content for c, _ in extract_structural(chunk.messages, project_root=ROOT)]
    # No "Command failing" and no verdict; a project hook's refusal is its rule, nothing else.
    by_hook = "blocked by hook" in wording
    assert found == (["A project hook blocks `npm run build`: no force pushes"] if by_hook else [])


@pytest.mark.parametrize("version", VERSIONS)
def test_an_interrupted_call_is_marked_interrupted_and_never_a_failure(version: str) -> None:
    # The user stopping a long-running `npx convex dev` (a real 2.0.22 record shape) says
    # nothing of whether it works: no "Command failing" note.
    records = [
        prompt_record("start the backend", version=version),
        bash_use_record("t1", "npm run build", version=version),
        refused_result_record("t1", INTERRUPTED_FOR_TOOL, f"Error: {INTERRUPTED_FOR_TOOL}", version=version),
    ]
    chunk = parse_chunk(jsonl(records), 0)
    (use,) = [u for m in chunk.messages for u in m.tool_uses]
    assert use.result is not None and use.result.interrupted and not use.result.rejected
    assert extract_structural(chunk.messages, project_root=ROOT) == []


def test_output_that_quotes_a_refusal_is_not_a_refusal() -> None:
    quoted = f"grep found:\n{REJECT_PROCEED}"
    records = [
        bash_use_record("t1", "grep -r proceed docs"),
        bash_result_record("t1", REJECT_PROCEED),
        bash_use_record("t2", "grep -r proceed notes"),
        bash_result_record("t2", quoted, exit_code=1, version=V2_1),
    ]
    uses = [u for m in parse_chunk(jsonl(records), 0).messages for u in m.tool_uses]
    assert [u.result is not None and u.result.rejected for u in uses] == [False, False]


@pytest.mark.parametrize("version", VERSIONS)
def test_what_the_user_typed_in_a_refusal_is_their_prompt(version: str) -> None:
    said = f"{REJECT_PROCEED.split(' STOP')[0]} To tell you how to proceed, the user said:\n"
    typed = "Never use npm in this repo, always use pnpm because the lockfile is pnpm's."
    records = [
        prompt_record("install the date library", version=version),
        bash_use_record("t1", "npm install dayjs", version=version),
        refused_result_record("t1", said + typed, f"Error: {said}{typed}", version=version),
        bash_use_record("t2", "pnpm add dayjs", version=version),
        bash_result_record("t2", "+ dayjs 1.11.13", version=version),
    ]
    chunk = parse_chunk(jsonl(records), 0)
    assert [m.texts for m in chunk.messages if m.texts] == [("install the date library",), (typed,)]
    (use,) = [u for m in chunk.messages for u in m.tool_uses if u.id == "t1"]
    assert use.result is not None and use.result.rejected
    clarify = said + "The user wants to clarify these questions.\n    This means they may have more."
    chunk = parse_chunk(jsonl([refused_result_record("t9", clarify, "User rejected tool use")]), 0)
    assert [m.texts for m in chunk.messages] == [()]  # the client's words, not the user's
