"""Memory rows <-> `Memory` values (the same columns and text encodings as the SQLite adapter)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cortex.core.model import Memory
from cortex.store.memory_rows import COLUMNS, row_to_memory

PLACEHOLDERS = ", ".join(["%s"] * len(COLUMNS.split(",")))
SETS = ", ".join(f"{c.strip()} = %s" for c in COLUMNS.split(",")[1:])


def read_memories(conn: Any, sql: str, params: Sequence[Any] = ()) -> list[Memory]:
    """The memories a `SELECT COLUMNS ...` statement returns, in its order."""
    return [row_to_memory(r) for r in conn.execute(sql, params)]
