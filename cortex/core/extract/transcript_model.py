"""Values parsed from a Claude Code transcript: messages, tool calls and results. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

EDIT_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})  # the tools that write a file


class Role(StrEnum):
    """Who wrote a message."""

    USER = "user"
    ASSISTANT = "assistant"


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of one tool call, as the user record reports it."""

    tool_use_id: str
    content: str
    is_error: bool = False
    rejected: bool = False  # the user refused the call; nothing ran
    exit_code: int | None = None
    interrupted: bool = False
    # An async task's notification (2.1.x `<task-notification>` user record): a background
    # subagent's closing report (`content`, empty for a background command), not a prompt.
    notice: bool = False
    # A Write that replaced an existing file: the client's patch of it as (old, new) sides, one
    # per hunk with its context lines, the way an Edit's old_string/new_string read.
    patch: tuple[tuple[str, str], ...] = ()
    # The user's answers to AskUserQuestion (the record's `toolUseResult`): (question, answer,
    # the description of the option chosen, or "" for an answer in the user's own words).
    answers: tuple[tuple[str, str, str], ...] = ()
    # An Edit or MultiEdit of a decision record: the record's whole text after the edit (the
    # client's copy of the file before it, with the edit applied), read as a rewrite would be.
    edited: str = ""


@dataclass(frozen=True, slots=True)
class ToolUse:
    """One tool call; `result` is linked when the result line is in the same chunk."""

    id: str
    name: str
    input: Mapping[str, object]
    result: ToolResult | None = None

    @property
    def failed(self) -> bool | None:
        """True/False once the result is known, None while it is not."""
        if self.result is None:
            return None
        return self.result.is_error or self.result.rejected or bool(self.result.exit_code)


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """A slash command the user ran (`/compact`, `/cortex:remember`), echoed in the transcript."""

    name: str
    args: str


@dataclass(frozen=True, slots=True)
class Message:
    """A user message or one whole assistant API message (its lines grouped by message id)."""

    role: Role
    uuids: tuple[str, ...]
    end_offset: int  # byte offset just past the newline of its last line
    message_id: str | None = None
    timestamp: datetime | None = None
    git_branch: str | None = None
    cwd: str | None = None
    session_id: str | None = None
    texts: tuple[str, ...] = ()
    tool_uses: tuple[ToolUse, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()
    command: SlashCommand | None = None
    has_thinking: bool = False
    is_sidechain: bool = False
    # The summary Claude Code wrote in place of a compacted conversation (a user record flagged
    # `isCompactSummary`): the session's own digest of what came before, not a prompt.
    compacted: str = ""

    @property
    def record(self) -> str | None:
        """The uuid of its first record: what names it wherever the transcript is copied."""
        return self.uuids[0] if self.uuids else None


@dataclass(frozen=True, slots=True)
class ParsedChunk:
    """What one read of a transcript yielded, and where the next read starts."""

    messages: tuple[Message, ...]
    next_offset: int  # where the next read starts: after the last complete line
    last_uuid: str | None  # identity of the last consumed line (see `line_identity`)
    malformed: int
    skipped: int
    lines: int
    compact_boundaries: tuple[int, ...] = field(default=())  # end offsets of compact_boundary
