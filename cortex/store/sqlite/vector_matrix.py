"""Nearest-vector search over a store's vec0 tables, from a process-wide matrix copy when it pays.

A vec0 KNN scans every stored vector in SQLite (~20 ms at 10,000 memories on 2 cores); the same
scan as one numpy product takes ~2 ms. A process that recalls once (the CLI, a hook) searches
vec0 directly; a process that recalls the same table a second time (the worker, a long-lived
host, the benchmarks) loads the table once into memory and searches that. The copy is dropped
when the store changes: another connection committed (its data version moved) or this process
wrote vectors (`note_written`, called by every vector writer in `cortex.store.sqlite.vectors`).
This module only holds copies: `cortex.store.sqlite.vectors` asks it first and falls back to vec0.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cortex.store.packing import unit_rows
from cortex.store.sqlite.connection import Connection, data_version

MAX_CACHED_VECTORS = 50_000  # ~77 MB at 384 dimensions; bigger stores keep using vec0
MAX_COPIES = 8  # tables held at once (a closed store's copy ages out)
LOAD_AFTER_SEARCHES = 2  # a table searched this often by one connection is worth holding

_LOCK = threading.Lock()
_GENERATION = itertools.count()
_generation = next(_GENERATION)


@dataclass(slots=True)
class _Copy:
    conn: Any  # the DB-API connection it was read through; held, so its id is never reused
    version: tuple[int, int]  # (data_version, local write generation) it was read at
    rows: Any  # int64 rowids
    matrix: Any  # float32, unit-norm rows
    position: dict[int, int]  # rowid -> row of `matrix`


_COPIES: dict[tuple[int, str], _Copy] = {}
_SEARCHES: dict[tuple[int, str], int] = {}


def note_written() -> None:
    """Forget every in-memory copy: this process changed some vec0 table. The search counts
    start again too: a process that writes between searches (`remember` after `remember`, the
    write gate) keeps asking vec0 instead of reloading a whole table after every write."""
    global _generation
    with _LOCK:
        _generation = next(_GENERATION)
        _COPIES.clear()
        _SEARCHES.clear()


def generation() -> int:
    """A number that changes whenever this process writes vectors."""
    return _generation


def _version(conn: Connection) -> tuple[int, int]:
    return data_version(conn), _generation


def _load(conn: Connection, table: str, version: tuple[int, int]) -> _Copy | None:
    import numpy as np

    count = int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    if count > MAX_CACHED_VECTORS:
        return None
    found = conn.execute(f"SELECT rowid, embedding FROM {table}").fetchall()
    rows = np.fromiter((int(r[0]) for r in found), dtype=np.int64, count=len(found))
    matrix = unit_rows([bytes(r[1]) for r in found]) if found else np.zeros((0, 0), dtype=np.float32)
    return _Copy(conn.raw, version, rows, matrix, {int(n): i for i, n in enumerate(rows)})


def _copy(conn: Connection, table: str, count_search: bool) -> _Copy | None:
    """The current in-memory copy of a table, loading it once the table has earned it."""
    if getattr(conn.raw, "in_transaction", False):
        return None  # uncommitted rows could be rolled back without any version change
    key = (id(conn.raw), table)
    version = _version(conn)
    with _LOCK:
        held = _COPIES.get(key)
        if held is not None and held.conn is conn.raw and held.version == version:
            return held
        if count_search:
            _SEARCHES[key] = _SEARCHES.get(key, 0) + 1
        if _SEARCHES.get(key, 0) < LOAD_AFTER_SEARCHES:
            return None
    fresh = _load(conn, table, version)
    with _LOCK:
        if fresh is not None and version[1] == _generation:
            _COPIES.pop(key, None)
            _COPIES[key] = fresh
            while len(_COPIES) > MAX_COPIES:
                del _COPIES[next(iter(_COPIES))]
    return fresh


def held_knn(conn: Connection, table: str, query: bytes, k: int) -> list[tuple[int, float]] | None:
    """(rowid, cosine distance) of the k nearest vectors, nearest first, from the copy; None
    while no copy is held (the caller asks vec0)."""
    held = _copy(conn, table, count_search=True)
    if held is None:
        return None
    if k <= 0 or not len(held.rows):
        return []
    import numpy as np

    q = np.frombuffer(query, dtype="<f4")
    q = q / (float(np.linalg.norm(q)) or 1.0)
    sims = held.matrix @ q
    k = min(k, len(sims))
    top = np.argpartition(-sims, k - 1)[:k] if k < len(sims) else np.arange(len(sims))
    top = top[np.lexsort((held.rows[top], -sims[top]))]
    return [(int(held.rows[i]), float(1.0 - sims[i])) for i in top]


def held_read(conn: Connection, table: str, ns: Sequence[int]) -> dict[int, bytes] | None:
    """Unit-length vectors of row numbers that have one, from the copy; None while none is held."""
    held = _copy(conn, table, count_search=False)
    if held is None:
        return None
    return {n: held.matrix[held.position[n]].tobytes() for n in ns if n in held.position}


def forget_all() -> None:
    """Drop every copy and search count (tests)."""
    with _LOCK:
        _COPIES.clear()
        _SEARCHES.clear()
