"""Claude Code transcript JSONL bytes -> user/assistant messages with linked tool calls. Pure."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from cortex.core.extract.transcript_blocks import (
    BRIEFING_MARKER,
    clean_text,
    is_injected,
    parse_blocks,
    parse_refusal_feedback,
    parse_task_notification,
    parse_tool_result,
    parse_user_text,
)
from cortex.core.extract.transcript_model import (
    Message,
    ParsedChunk,
    Role,
    SlashCommand,
    ToolResult,
    ToolUse,
)

__all__ = [
    "BRIEFING_MARKER",
    "Message",
    "ParsedChunk",
    "Role",
    "SlashCommand",
    "ToolResult",
    "ToolUse",
    "line_identity",
    "parse_chunk",
]

_SKIP_FLAGS = ("isMeta", "isCompactSummary", "repeatsCompactSummary", "isVisibleInTranscriptOnly")


@dataclass(slots=True)
class _Pending:
    """Mutable accumulator for one message while the chunk is scanned."""

    role: Role
    head: Mapping[str, object]
    uuids: list[str] = field(default_factory=list)
    end_offset: int = 0
    texts: list[str] = field(default_factory=list)
    uses: list[tuple[str, str, Mapping[str, object]]] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)
    command: SlashCommand | None = None
    has_thinking: bool = False
    compacted: str = ""


def line_identity(line: bytes) -> str:
    """The uuid of a JSONL line, or a content fingerprint when it has none (or is not JSON)."""
    obj = _loads(line.rstrip(b"\r\n"))
    return _identity(obj, line.rstrip(b"\r\n"))


def parse_chunk(data: bytes, start_offset: int, *, include_sidechains: bool = False) -> ParsedChunk:
    """Parse the complete JSONL lines of `data`, which starts at byte `start_offset` of a file."""
    scan = _Scan(include_sidechains)
    malformed = skipped = lines = 0
    last_identity: str | None = None
    pos = 0
    while True:
        nl = data.find(b"\n", pos)
        if nl < 0:
            break
        raw = data[pos:nl].rstrip(b"\r")
        end = start_offset + nl + 1
        pos = nl + 1
        lines += 1
        if not raw.strip():
            skipped += 1
            last_identity = _identity(None, raw)
            continue
        records = _loads_records(raw)
        last_identity = _identity(records[-1] if records else None, raw)
        if not records:
            malformed += 1
            continue
        try:
            kept = [scan.take(obj, end) for obj in records]
        except Exception:  # the format is internal and changes between versions: never stop capture
            malformed += 1
            continue
        if not any(kept):
            skipped += 1
    return ParsedChunk(
        messages=_finish(scan.pending),
        next_offset=start_offset + pos,
        last_uuid=last_identity,
        malformed=malformed,
        skipped=skipped,
        lines=lines,
        compact_boundaries=tuple(scan.boundaries),
    )


def _loads_records(raw: bytes) -> list[dict[str, object]]:
    """The records of one line: one object, or the objects of an array (a `chat.json`-style
    log written as one JSON array on a line); [] when the line holds none."""
    if raw.lstrip()[:1] != b"[":
        obj = _loads(raw)
        return [obj] if obj is not None else []
    try:
        items = json.loads(raw.decode("utf-8")) if b"\x00" not in raw else None
    except (ValueError, RecursionError):
        return []
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def _loads(raw: bytes) -> dict[str, object] | None:
    if b"\x00" in raw:
        return None
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None
    return obj if isinstance(obj, dict) else None


def _identity(obj: Mapping[str, object] | None, raw: bytes) -> str:
    uuid = obj.get("uuid") if obj is not None else None
    if isinstance(uuid, str) and uuid:
        return uuid
    return "sha256:" + hashlib.sha256(raw).hexdigest()[:32]


class _Scan:
    """The messages of one chunk as they accumulate, assistant lines grouped by message id."""

    def __init__(self, include_sidechains: bool) -> None:
        self.include_sidechains = include_sidechains
        self.pending: list[_Pending] = []
        self.by_message_id: dict[str, _Pending] = {}
        self.boundaries: list[int] = []

    def take(self, obj: Mapping[str, object], end: int) -> bool:
        """Fold one record in; False when it is not something we keep."""
        kind = obj.get("type")
        if kind == "system":
            if obj.get("subtype") == "compact_boundary":
                self.boundaries.append(end)
                return True
            return False
        if kind not in ("user", "assistant"):
            return False
        if obj.get("isSidechain") is True and not self.include_sidechains:
            return False
        message = obj.get("message")
        if not isinstance(message, Mapping):
            return False
        if kind == "user" and obj.get("isCompactSummary") is True and not obj.get("repeatsCompactSummary"):
            return self._take_summary(obj, message, end)
        if any(obj.get(flag) for flag in _SKIP_FLAGS):
            return False
        if kind == "assistant":
            self._take_assistant(obj, message, end)
            return True
        return self._take_user(obj, message, end)

    def _take_assistant(self, obj: Mapping[str, object], message: Mapping[str, object], end: int) -> None:
        mid = message.get("id")
        acc = self.by_message_id.get(mid) if isinstance(mid, str) else None
        if acc is None:
            acc = _Pending(Role.ASSISTANT, obj)
            if isinstance(mid, str):
                self.by_message_id[mid] = acc
            self.pending.append(acc)
        _add_uuid(acc, obj, end)
        for block in parse_blocks(message.get("content")):
            btype = block.get("type")
            if btype == "text":
                text = clean_text(block.get("text"))
                if text and not is_injected(text):
                    acc.texts.append(text)
            elif btype in ("thinking", "redacted_thinking"):
                acc.has_thinking = True
            elif btype == "tool_use":
                tid, name, tool_input = block.get("id"), block.get("name"), block.get("input")
                if isinstance(tid, str) and isinstance(name, str):
                    inp = tool_input if isinstance(tool_input, Mapping) else {}
                    acc.uses.append((tid, name, inp))

    def _take_summary(self, obj: Mapping[str, object], message: Mapping[str, object], end: int) -> bool:
        """A compacted conversation's summary: kept as what it is, never as a prompt."""
        blocks = parse_blocks(message.get("content"))
        text = "\n".join(t for b in blocks if b.get("type") == "text" and (t := clean_text(b.get("text"))))
        if not text:
            return False
        acc = _Pending(Role.USER, obj, compacted=text)
        _add_uuid(acc, obj, end)
        self.pending.append(acc)
        return True

    def _take_user(self, obj: Mapping[str, object], message: Mapping[str, object], end: int) -> bool:
        acc = _Pending(Role.USER, obj)
        top = obj.get("toolUseResult")
        for block in parse_blocks(message.get("content")):
            btype = block.get("type")
            if btype == "text":
                notice = parse_task_notification(clean_text(block.get("text")))
                if notice is not None:  # the client's word that a background task stopped
                    acc.results.append(notice)
                    continue
                text, command = parse_user_text(clean_text(block.get("text")))
                if text:
                    acc.texts.append(text)
                acc.command = acc.command or command
            elif btype == "tool_result":
                result = parse_tool_result(block, top)
                if result is not None:
                    acc.results.append(result)
                    feedback = parse_refusal_feedback(result)
                    if feedback:  # the user's words in a refusal are a prompt like any other
                        acc.texts.append(feedback)
        if not (acc.texts or acc.results or acc.command):
            return False
        _add_uuid(acc, obj, end)
        self.pending.append(acc)
        return True


def _add_uuid(acc: _Pending, obj: Mapping[str, object], end: int) -> None:
    uuid = obj.get("uuid")
    if isinstance(uuid, str):
        acc.uuids.append(uuid)
    acc.end_offset = max(acc.end_offset, end)


def _str(obj: Mapping[str, object], key: str) -> str | None:
    value = obj.get(key)
    return value if isinstance(value, str) and value else None


def _timestamp(obj: Mapping[str, object]) -> datetime | None:
    value = _str(obj, "timestamp")
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def _finish(pending: list[_Pending]) -> tuple[Message, ...]:
    # A notice is not linked to its call: the call's own result ("Async agent launched") stays,
    # so a session read turn by turn and in one go link the same results.
    results = {r.tool_use_id: r for acc in pending for r in acc.results if not r.notice}
    messages = []
    for acc in pending:
        head = acc.head
        message = head.get("message")
        mid = message.get("id") if isinstance(message, Mapping) else None
        uses = tuple(ToolUse(tid, name, inp, results.get(tid)) for tid, name, inp in acc.uses)
        if acc.role is Role.ASSISTANT and not (acc.texts or uses or acc.has_thinking):
            continue
        messages.append(
            Message(
                role=acc.role,
                uuids=tuple(acc.uuids),
                end_offset=acc.end_offset,
                message_id=mid if isinstance(mid, str) else None,
                timestamp=_timestamp(head),
                git_branch=_str(head, "gitBranch"),
                cwd=_str(head, "cwd"),
                session_id=_str(head, "sessionId"),
                texts=tuple(acc.texts),
                tool_uses=uses,
                tool_results=tuple(acc.results),
                command=acc.command,
                has_thinking=acc.has_thinking,
                is_sidechain=head.get("isSidechain") is True,
                compacted=acc.compacted,
            )
        )
    return tuple(messages)
