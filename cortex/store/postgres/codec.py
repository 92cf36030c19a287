"""Memory rows <-> `Memory` values (the same columns and text encodings as the SQLite adapter)."""

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
PLACEHOLDERS = ", ".join(["%s"] * len(COLUMNS.split(",")))
SETS = ", ".join(f"{c.strip()} = %s" for c in COLUMNS.split(",")[1:])


def _time(text: str | None) -> datetime | None:
    return parse_time(text) if text else None


def _strings(text: str | None) -> tuple[str, ...]:
    return () if not text or text == "[]" else tuple(json.loads(text))


def row_to_memory(row: Sequence[Any]) -> Memory:
    """A `COLUMNS` row as a Memory."""
    created, updated = _time(row[16]), _time(row[17])
    assert created is not None and updated is not None
    return Memory(
        id=row[0],
        content=row[1],
        summary=row[2],
        type=MemoryType(row[3]),
        scope=Scope(row[4]),
        confidence=float(row[5]),
        priority=int(row[6]),
        pinned=bool(row[7]),
        source=Source(row[8], row[9], row[10], row[11], _strings(row[12]), _time(row[23]), row[24]),
        tags=_strings(row[13]),
        access_count=int(row[14]),
        last_accessed=_time(row[15]),
        created=created,
        updated=updated,
        status=Status(row[18]),
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


def read_memories(conn: Any, sql: str, params: Sequence[Any] = ()) -> list[Memory]:
    """The memories a `SELECT COLUMNS ...` statement returns, in its order."""
    return [row_to_memory(r) for r in conn.execute(sql, params)]
