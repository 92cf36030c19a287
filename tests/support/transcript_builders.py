"""Small builders for transcript messages and JSONL records, shared by the capture tests."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from cortex.core.extract.transcript import Message, Role, ToolResult, ToolUse

FIXTURES = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "transcripts"


def fixture_files() -> list[Path]:
    """Every transcript fixture (JSONL), or [] when the shared directory is absent."""
    return sorted(FIXTURES.rglob("*.jsonl")) if FIXTURES.is_dir() else []


def user(*texts: str, branch: str | None = "main", offset: int = 0) -> Message:
    return Message(Role.USER, (f"u{offset}",), offset, texts=texts, git_branch=branch)


def assistant(
    *texts: str, uses: tuple[ToolUse, ...] = (), branch: str | None = "main", offset: int = 0
) -> Message:
    return Message(Role.ASSISTANT, (f"a{offset}",), offset, texts=texts, tool_uses=uses, git_branch=branch)


def bash(
    command: str,
    output: str = "",
    *,
    error: bool = False,
    tid: str = "t",
    rejected: bool = False,
    description: str | None = None,
) -> ToolUse:
    result = ToolResult(tid, output, is_error=error, rejected=rejected)
    said = {"description": description} if description is not None else {}
    return ToolUse(tid, "Bash", {"command": command, **said}, result)


def bash_output(tid: str, shell: str, status: str, exit_code: int, stderr: str) -> ToolUse:
    """BashOutput reporting how the background command `shell` ended (Claude Code 1.0.x)."""
    body = f"<status>{status}</status>\n\n<exit_code>{exit_code}</exit_code>\n\n<stderr>\n{stderr}\n</stderr>"
    return ToolUse(tid, "BashOutput", {"bash_id": shell}, ToolResult(tid, body))


def tool(name: str, tool_input: Mapping[str, object], *, error: bool = False, tid: str = "t") -> ToolUse:
    return ToolUse(tid, name, tool_input, ToolResult(tid, "", is_error=error))


def line(record: Mapping[str, object]) -> bytes:
    return json.dumps(record).encode() + b"\n"


def user_record(content: object, uuid: str = "u1", **extra: object) -> dict[str, object]:
    return {
        "type": "user",
        "uuid": uuid,
        "sessionId": "s1",
        "cwd": "/home/dev/proj",
        "gitBranch": "main",
        "timestamp": "2026-02-10T21:11:56.846Z",
        "message": {"role": "user", "content": content},
        **extra,
    }


def assistant_record(
    message_id: str, block: Mapping[str, object], uuid: str = "a1", **extra: object
) -> dict[str, object]:
    return {
        "type": "assistant",
        "uuid": uuid,
        "sessionId": "s1",
        "gitBranch": "main",
        "message": {"id": message_id, "role": "assistant", "content": [block]},
        **extra,
    }


# --- record shapes by client version ----------------------------------------------------------
# The JSON structure each Claude Code version writes, with synthetic content. 1.0.x reports a
# failed command's output with no exit code; 2.x prefixes `Exit code N`; 2.1.x adds
# `noOutputExpected` and `caller`. Refusals and interruptions changed wording over time.

V1_0, V2_0, V2_1 = "1.0.77", "2.0.22", "2.1.191"
VERSIONS = (V1_0, V2_0, V2_1)
REJECT_PROCEED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it "
    "was a file edit, the new_string was NOT written to the file). STOP what you are doing and "
    "wait for the user to tell you how to proceed."
)
REJECT_ACTION = (
    "The user doesn't want to take this action right now. STOP what you are doing and wait for "
    "the user to tell you how to proceed."
)
INTERRUPTED_FOR_TOOL = "[Request interrupted by user for tool use]"


def envelope(kind: str, uuid: str, version: str, **extra: object) -> dict[str, object]:
    """The fields every conversation record carries."""
    record: dict[str, object] = {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/dev/proj",
        "sessionId": "s1",
        "version": version,
        "gitBranch": "main",
        "type": kind,
        "uuid": uuid,
        "timestamp": "2026-02-10T21:11:56.846Z",
    }
    if version >= "2.1":
        record["entrypoint"] = "cli"
    return {**record, **extra}


def tool_use_record(
    tid: str,
    name: str,
    tool_input: Mapping[str, object],
    *,
    version: str = V2_1,
    uuid: str | None = None,
    **extra: object,
) -> dict[str, object]:
    """An assistant record holding one tool call (`extra`: envelope fields, e.g. isSidechain)."""
    block: dict[str, object] = {"type": "tool_use", "id": tid, "name": name, "input": dict(tool_input)}
    if version >= "2.1":
        block["caller"] = {"type": "direct"}
    message = {"id": f"msg_{tid}", "type": "message", "role": "assistant", "content": [block]}
    return {**envelope("assistant", uuid or f"a-{tid}", version, **extra), "message": message}


def bash_use_record(
    tid: str, command: str, *, version: str = V2_1, uuid: str | None = None
) -> dict[str, object]:
    """An assistant record holding one Bash tool call."""
    return tool_use_record(tid, "Bash", {"command": command}, version=version, uuid=uuid)


def tool_result_record(
    tid: str,
    content: str,
    *,
    is_error: bool,
    top: object,
    version: str = V2_1,
    uuid: str | None = None,
) -> dict[str, object]:
    """A user record answering a tool call: the `tool_result` block and `toolUseResult`."""
    block = {"tool_use_id": tid, "type": "tool_result", "content": content, "is_error": is_error}
    message = {"role": "user", "content": [block]}
    return {**envelope("user", uuid or f"r-{tid}", version), "message": message, "toolUseResult": top}


def bash_result_record(
    tid: str, output: str, *, exit_code: int = 0, version: str = V2_1, uuid: str | None = None
) -> dict[str, object]:
    """A finished Bash call's result as `version` writes it (exit code 0 is success)."""
    if exit_code == 0:
        top: dict[str, object] = {"stdout": output, "stderr": "", "interrupted": False, "isImage": False}
        if version >= "2.1":
            top["noOutputExpected"] = False
        return tool_result_record(tid, output, is_error=False, top=top, version=version, uuid=uuid)
    shown = output if version < "2.0" else f"Exit code {exit_code}\n{output}"
    return tool_result_record(tid, shown, is_error=True, top=f"Error: {shown}", version=version, uuid=uuid)


def edit_records(
    tid: str, path: str, before: str, old: str, new: str, *, version: str = V2_1, uuid: str | None = None
) -> list[dict[str, object]]:
    """An Edit of `path` and its result as the client writes it (1.0.x to 2.1.x): the record's
    `toolUseResult` holds the file as it was (`originalFile`) and the replacement made."""
    edit = {"file_path": path, "old_string": old, "new_string": new, "replace_all": False}
    done = {
        "filePath": path,
        "oldString": old,
        "newString": new,
        "originalFile": before,
        "structuredPatch": [],
        "userModified": False,
        "replaceAll": False,
    }
    said = "The file has been updated."
    return [
        tool_use_record(tid, "Edit", edit, version=version, uuid=uuid and f"{uuid}a"),
        tool_result_record(tid, said, is_error=False, top=done, version=version, uuid=uuid and f"{uuid}r"),
    ]


def refused_result_record(tid: str, wording: str, top: object, *, version: str = V2_1) -> dict[str, object]:
    """A refused or interrupted call: `wording` in the block, `top` as the record's `toolUseResult`."""
    return tool_result_record(tid, wording, is_error=True, top=top, version=version)


def prompt_record(content: object, uuid: str = "p1", *, version: str = V2_1) -> dict[str, object]:
    """A typed prompt: a string, or a list of text blocks (IDE notes come as extra blocks)."""
    return {**envelope("user", uuid, version), "message": {"role": "user", "content": content}}


def text_record(message_id: str, text: str, uuid: str, *, version: str = V2_1) -> dict[str, object]:
    """An assistant record holding one text block."""
    message = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
    }
    return {**envelope("assistant", uuid, version), "message": message}


def jsonl(records: list[dict[str, object]]) -> bytes:
    """Records as transcript bytes, one JSON object per line."""
    return b"".join(line(r) for r in records)
