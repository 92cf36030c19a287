"""Memory rows <-> `Memory` values, and the row numbers that key a memory in FTS5 and vec0."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from cortex.core.model import Memory, MemoryType, Scope, Source, Status
from cortex.core.serial import format_time, parse_time
from cortex.store.sqlite.connection import Connection

COLUMNS = (
    "id, content, summary, type, scope, confidence, priority, pinned, source_session, "
    "source_offset, source_branch, source_commit, source_files, tags, access_count, "
    "last_accessed, created, updated, status, content_hash, low_since, status_changed, centrality, "
    "source_time, source_record"
)
PLACEHOLDERS = ", ".join("?" * len(COLUMNS.split(",")))
BATCH = 500  # ids per `IN (...)`: well under SQLite's bound-parameter limit

_TYPES = {t.value: t for t in MemoryType}
_SCOPES = {s.value: s for s in Scope}
_STATUSES = {s.value: s for s in Status}
_TIMES: dict[str, datetime] = {}  # timestamps repeat (created == updated): parse each text once
_LISTS: dict[str, tuple[str, ...]] = {}  # tag and file lists repeat from memory to memory too


def marks(values: Sequence[Any]) -> str:
    """`?, ?, ...`: one placeholder per value."""
    return ", ".join("?" * len(values))


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


def read_memories(conn: Connection, sql: str, params: Sequence[Any] = ()) -> list[Memory]:
    """The memories a `SELECT COLUMNS ...` statement returns, in its order."""
    return [row_to_memory(r) for r in conn.execute(sql, params)]


def row_numbers(conn: Connection, ids: Sequence[str]) -> dict[str, int]:
    """Internal row numbers (FTS5 and vec0 rowids) of memory ids; unknown ids are absent."""
    out: dict[str, int] = {}
    for start in range(0, len(ids), BATCH):
        chunk = list(ids[start : start + BATCH])
        for mid, n in conn.execute(f"SELECT id, n FROM memories WHERE id IN ({marks(chunk)})", chunk):
            out[mid] = int(n)
    return out


def ids_for_rows(conn: Connection, rows: Sequence[int]) -> dict[int, tuple[str, str]]:
    """Row number -> (id, status)."""
    out: dict[int, tuple[str, str]] = {}
    for start in range(0, len(rows), BATCH):
        chunk = list(rows[start : start + BATCH])
        for n, mid, status in conn.execute(
            f"SELECT n, id, status FROM memories WHERE n IN ({marks(chunk)})", chunk
        ):
            out[int(n)] = (mid, status)
    return out
