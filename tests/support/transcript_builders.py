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
    command: str, output: str = "", *, error: bool = False, tid: str = "t", rejected: bool = False
) -> ToolUse:
    result = ToolResult(tid, output, is_error=error, rejected=rejected)
    return ToolUse(tid, "Bash", {"command": command}, result)


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
