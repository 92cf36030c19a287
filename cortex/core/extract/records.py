"""Layer 2, decision records: an ADR or a decision log the session wrote. Pure.

A decision record (`docs/adr/0003-use-postgres.md`, `doc/decisions/0007-....md`,
`ADR-012-queue.md`) is a decision written down on purpose: a title, a status and a "Decision"
section that says what was decided and why. A Write of one becomes a note keyed by its file, so
a later write of the same record (Proposed, then Accepted; Accepted, then Superseded by ADR-0005)
replaces it. An accepted record, or one that gives no status, is a decision; a proposed one is
context until it is accepted; one superseded, deprecated or rejected says so. An edit of a
decision log (`DECISIONS.md`) that adds an entry is a decision note of what it adds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from cortex.core.extract.commands import clip
from cortex.core.extract.manifests import edit_pairs, edit_sides
from cortex.core.extract.record_files import MAX_RECORD_CHARS, RECORD_DIR, record_kind
from cortex.core.extract.speech import LIST_ITEM
from cortex.core.extract.summary import MIN_SECTION_WORDS, clean_report, word_count
from cortex.core.extract.transcript import Message, ToolUse
from cortex.core.model import Candidate, Layer, MemoryType
from cortex.core.write.state import state_tag

RECORD_TAG = "decision-record"
MAX_NOTE_CHARS = 700
RECORD_CONFIDENCE = 0.75
RECORD_PRIORITY = 6
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_STATUS_LINE = re.compile(r"^\W*status\W*[:：]\s*(.+)$", re.IGNORECASE)
_DECISION_HEADING = re.compile(r"^(?:the\s+)?decision(?:\s+outcome)?$|^chosen\s+option", re.IGNORECASE)
_OPEN = frozenset({"proposed", "draft", "open", "pending", "discussing"})
_ENDED = frozenset({"superseded", "deprecated", "rejected", "obsolete", "replaced", "withdrawn"})


def kept_record_fields(tool_input: Mapping[str, object]) -> dict[str, object]:
    """What this layer reads of a call that writes a decision record (nothing for other files):
    a Write's text, and a decision log's edit sides (an edited record is read from the text the
    parser rebuilt, `ToolResult.edited`)."""
    path = tool_input.get("file_path")
    kind = record_kind(path) if isinstance(path, str) else None
    if kind is None:
        return {}
    out = edit_sides(tool_input, MAX_RECORD_CHARS) if kind == "log" else {}
    content = tool_input.get("content")
    if isinstance(content, str):
        out["content"] = content[:MAX_RECORD_CHARS]
    return out


def extract_decision_records(turn: Sequence[Message]) -> list[tuple[Candidate, Message]]:
    """A note per decision record the turn wrote, and per entry it added to a decision log."""
    found: list[tuple[Candidate, Message]] = []
    for message in turn:
        for use in message.tool_uses:
            path = use.input.get("file_path")
            if use.result is None or use.failed or not isinstance(path, str):
                continue
            kind = record_kind(path)
            note = _record_note(use, path) if kind == "record" else _log_note(use, path) if kind else None
            if note is not None:
                found.append((note, message))
    return found


def _record_note(use: ToolUse, path: str) -> Candidate | None:
    """A record written whole, or edited (its status flipped, a "Superseded by" line added):
    read from the text the edit left, which the parser rebuilt from the client's copy."""
    content = use.input.get("content") if use.name == "Write" else use.result and use.result.edited
    if not isinstance(content, str) or not content:
        return None
    lines = content.splitlines()
    title = next((m.group(1) for line in lines if (m := _HEADING.match(line))), "")
    title = title.replace("**", "").strip()
    status = _status(lines)
    decision = _section_text(lines, _DECISION_HEADING)
    if not title or not (decision or word_count(title) >= 3):
        return None
    word = status.split()[0].strip(".,;:()").casefold() if status else ""
    said = f" ({status})" if status else ""
    text = clip(f"Decision record {_name(path)}: {title}{said}. {decision}".strip(), MAX_NOTE_CHARS)
    rejected = word == "rejected"  # decided against: a decision still
    in_force = rejected or word not in _OPEN | _ENDED  # accepted, or no status given
    kind = MemoryType.DECISION if in_force else MemoryType.CONTEXT
    tags = (RECORD_TAG, state_tag(f"record:{_name(path)}"), *(("rejected",) if rejected else ()))
    return _candidate(text, kind, tags)


def _log_note(use: ToolUse, path: str) -> Candidate | None:
    """What an edit or a rewrite added to a decision log: its new lines, as one decision."""
    content = use.input.get("content")
    pairs = [("", content)] if use.name == "Write" and isinstance(content, str) else edit_pairs(use.input)
    old_lines = {line.strip() for old, _ in pairs for line in old.splitlines()}
    added = [line for _, new in pairs for line in new.splitlines() if line.strip() not in old_lines]
    body = " ".join(LIST_ITEM.sub("", line).strip() for line in clean_report("\n".join(added)))
    if word_count(body) < MIN_SECTION_WORDS:
        return None
    text = clip(f"Decision log {_name(path)}: {body}", MAX_NOTE_CHARS)
    return _candidate(text, MemoryType.DECISION, (RECORD_TAG,))


def _status(lines: Sequence[str]) -> str:
    """The record's status: a "Status" heading's first line, or a "Status: ..." line."""
    under = _section_text(lines, re.compile(r"^status$", re.IGNORECASE))
    if under:
        return clip(under, 80)
    for line in lines:
        m = _STATUS_LINE.match(line.replace("*", ""))
        if m:
            return clip(m.group(1).strip(), 80)
    return ""


def _section_text(lines: Sequence[str], heading: re.Pattern[str]) -> str:
    """The body under the first heading whose words match, up to the next heading, on one line."""
    body: list[str] | None = None
    for line in lines:
        m = _HEADING.match(line)
        if m is not None:
            if body is not None:
                break
            if heading.search(m.group(1).replace("*", "").strip().rstrip(":")):
                body = []
            continue
        if body is not None:
            body.append(line)
    cleaned = [LIST_ITEM.sub("", line).strip() for line in clean_report("\n".join(body or []))]
    return " ".join(line for line in cleaned if line)


def _name(path: str) -> str:
    """The record's folder and file (`adr/0003-use-postgres.md`), or its file alone outside such
    a folder (`DECISIONS.md`): the same wherever the project is."""
    parts = path.replace("\\", "/").rstrip("/").split("/")
    folders = [i for i, part in enumerate(parts[:-1]) if RECORD_DIR.search(f"/{part}/")]
    return "/".join(parts[folders[-1] :]) if folders else parts[-1]


def _candidate(text: str, kind: MemoryType, tags: tuple[str, ...]) -> Candidate:
    return Candidate(
        text, kind, Layer.STRUCTURAL, confidence=RECORD_CONFIDENCE, priority=RECORD_PRIORITY, tags=tags
    )
