"""Memory rows <-> `Memory` values, and the row numbers that key a memory in FTS5 and vec0."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cortex.core.model import Memory
from cortex.store.memory_rows import COLUMNS, row_to_memory
from cortex.store.sqlite.connection import Connection

PLACEHOLDERS = ", ".join("?" * len(COLUMNS.split(",")))
BATCH = 500  # ids per `IN (...)`: well under SQLite's bound-parameter limit


def marks(values: Sequence[Any]) -> str:
    """`?, ?, ...`: one placeholder per value."""
    return ", ".join("?" * len(values))


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
