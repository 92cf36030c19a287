"""Memory rows <-> `Memory` values: the columns of the `memories` table and their text encodings
(ISO times, JSON lists), the same in every storage adapter (SQLite, PostgreSQL). No SQL here: each
adapter binds these values with its own placeholders."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from cortex.core.model import Memory, MemoryType, Scope, Source, Status
from cortex.core.serial import format_time, parse_time

COLUMNS = (
    "id, content, summary, type, scope, confidence, priority, pinned, source_session, "
    "source_offset, source_branch, source_commit, source_files, tags, access_count, "
    "last_accessed, created, updated, status, content_hash, low_since, status_changed, centrality, "
    "source_time, source_record"
)
_TYPES = {t.value: t for t in MemoryType}
_SCOPES = {s.value: s for s in Scope}
_STATUSES = {s.value: s for s in Status}
_TIMES: dict[str, datetime] = {}  # timestamps repeat (created == updated): parse each text once
_LISTS: dict[str, tuple[str, ...]] = {}  # tag and file lists repeat from memory to memory too


def _time(text: str | None) -> datetime | None:
    if not text:
        return None
    parsed = _TIMES.get(text)
    if parsed is None:
        parsed = parse_time(text)
        assert parsed is not None
        if len(_TIMES) > 100_000:
            _TIMES.clear()
        _TIMES[text] = parsed
    return parsed


def _strings(text: str | None) -> tuple[str, ...]:
    if not text or text == "[]":
        return ()
    parsed = _LISTS.get(text)
    if parsed is None:
        parsed = tuple(json.loads(text))
        if len(_LISTS) > 100_000:
            _LISTS.clear()
        _LISTS[text] = parsed
    return parsed


def row_to_memory(row: Sequence[Any]) -> Memory:
    """A `COLUMNS` row as a Memory."""
    # Recall turns a few hundred rows into Memory values per query: keep this loop lean.
    created = _time(row[16])
    updated = _time(row[17])
    assert created is not None and updated is not None
    return Memory(
        id=row[0],
        content=row[1],
        summary=row[2],
        type=_TYPES[row[3]],
        scope=_SCOPES[row[4]],
        confidence=float(row[5]),
        priority=int(row[6]),
        pinned=bool(row[7]),
        source=Source(row[8], row[9], row[10], row[11], _strings(row[12]), _time(row[23]), row[24]),
        tags=_strings(row[13]),
        access_count=int(row[14]),
        last_accessed=_time(row[15]),
        created=created,
        updated=updated,
        status=_STATUSES[row[18]],
        content_hash=row[19],
        low_since=_time(row[20]),
        status_changed=_time(row[21]),
        centrality=float(row[22]),
    )


def memory_to_row(m: Memory) -> tuple[Any, ...]:
    """A Memory as values for `COLUMNS`."""
    return (
        m.id,
        m.content,
        m.summary,
        m.type.value,
        m.scope.value,
        m.confidence,
        m.priority,
        int(m.pinned),
        m.source.session_id,
        m.source.transcript_offset,
        m.source.branch,
        m.source.commit,
        json.dumps(list(m.source.files), ensure_ascii=False),
        json.dumps(list(m.tags), ensure_ascii=False),
        m.access_count,
        format_time(m.last_accessed),
        format_time(m.created),
        format_time(m.updated),
        m.status.value,
        m.content_hash,
        format_time(m.low_since),
        format_time(m.status_changed),
        m.centrality,
        format_time(m.source.said_at),
        m.source.record,
    )
