"""The vec0 side of a store: one index per embedder and dimension, KNN, and the embedding queue."""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from cortex.core.serial import format_time
from cortex.store.sqlite import vector_matrix
from cortex.store.sqlite.store import Store


def index_name(embedder_key: str, dim: int) -> str:
    """A safe vec0 table name for an embedder; hosted and local keys never share one."""
    slug = re.sub(r"[^a-z0-9]+", "_", embedder_key.lower()).strip("_")
    return f"vec_{slug}_{dim}" if not slug.endswith(str(dim)) else f"vec_{slug}"


def pack(vector: Sequence[float]) -> bytes:
    """float32 little-endian bytes, the format vec0 expects."""
    return struct.pack(f"<{len(vector)}f", *vector)


def unpack(blob: bytes) -> tuple[float, ...]:
    """Inverse of `pack`."""
    return struct.unpack(f"<{len(blob) // 4}f", blob)


def unit_rows(blobs: Sequence[bytes], dtype: str = "float32") -> Any:
    """Packed vectors (one dimension for all) as a numpy matrix of unit-norm rows in `dtype`;
    a zero vector stays zero."""
    import numpy as np

    matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1).astype(dtype)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms > 0, norms, 1.0)).astype(dtype, copy=False)


def existing_index(store: Store, embedder_key: str) -> tuple[str, int] | None:
    """(table, dim) of the index registered for this embedder, if any."""
    row = store.conn.execute(
        "SELECT name, dim FROM vec_indexes WHERE embedder_key = ?", (embedder_key,)
    ).fetchone()
    return (row[0], int(row[1])) if row else None


def ensure_index(store: Store, embedder_key: str, dim: int, at: datetime) -> str:
    """Create the vec0 table for an embedder once (needs sqlite-vec in this connection)."""
    found = existing_index(store, embedder_key)
    if found:
        if found[1] != dim:
            raise ValueError(f"index for {embedder_key} has dim {found[1]}, not {dim}")
        return found[0]
    name = index_name(embedder_key, dim)
    store.conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING vec0(embedding float[{dim}] distance_metric=cosine)"
    )
    store.conn.execute(
        "INSERT OR IGNORE INTO vec_indexes (name, embedder_key, dim, created) VALUES (?, ?, ?, ?)",
        (name, embedder_key, dim, format_time(at)),
    )
    return name


def write_vectors(store: Store, table: str, rows: Sequence[tuple[int, bytes]]) -> None:
    """Store vectors for memory row numbers (replacing old ones) and mark them embedded."""
    if not rows:
        return
    ns = [n for n, _ in rows]
    marks = ", ".join("?" * len(ns))
    store.conn.execute(f"DELETE FROM {table} WHERE rowid IN ({marks})", ns)
    store.conn.executemany(f"INSERT INTO {table}(rowid, embedding) VALUES (?, ?)", rows)
    vector_matrix.note_written()
    store.conn.executemany(
        "INSERT OR IGNORE INTO embedded (n, index_name) VALUES (?, ?)", [(n, table) for n in ns]
    )


def delete_vectors(store: Store, table: str, ns: Sequence[int]) -> None:
    """Drop vectors of removed memories."""
    if not ns:
        return
    marks = ", ".join("?" * len(ns))
    if store.vectors:
        store.conn.execute(f"DELETE FROM {table} WHERE rowid IN ({marks})", list(ns))
        vector_matrix.note_written()
    store.conn.execute(f"DELETE FROM embedded WHERE index_name = ? AND n IN ({marks})", (table, *ns))


def knn(store: Store, table: str, query: bytes, k: int) -> list[tuple[int, float]]:
    """(row number, cosine distance) of the k nearest vectors."""
    rows = store.conn.execute(
        f"SELECT rowid, distance FROM {table} WHERE embedding MATCH ? AND k = ? ORDER BY distance",
        (query, k),
    )
    return [(int(r[0]), float(r[1])) for r in rows]


def read_vectors(store: Store, table: str, ns: Sequence[int]) -> dict[int, bytes]:
    """Raw vectors for row numbers that have one."""
    out: dict[int, bytes] = {}
    for start in range(0, len(ns), 500):
        chunk = list(ns[start : start + 500])
        marks = ", ".join("?" * len(chunk))
        for n, blob in store.conn.execute(
            f"SELECT rowid, embedding FROM {table} WHERE rowid IN ({marks})", chunk
        ):
            out[int(n)] = bytes(blob)
    return out


def pending(store: Store, table: str | None, limit: int | None = None) -> list[tuple[int, str]]:
    """(row number, id) of active/archived memories with no vector in `table` yet (all, if no table)."""
    sql = (
        "SELECT m.n, m.id FROM memories m WHERE m.status IN ('active', 'archived') "
        "AND m.type != 'code' AND NOT EXISTS (SELECT 1 FROM embedded e WHERE e.n = m.n "
        "AND e.index_name = ?) ORDER BY m.n"
    )
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return [(int(n), mid) for n, mid in store.conn.execute(sql, (table or "",))]


def count_pending(store: Store, table: str | None) -> int:
    """How many active/archived memories (code excepted) have no vector in `table` yet."""
    row = store.conn.execute(
        "SELECT count(*) FROM memories m WHERE m.status IN ('active', 'archived') "
        "AND m.type != 'code' AND NOT EXISTS (SELECT 1 FROM embedded e WHERE e.n = m.n "
        "AND e.index_name = ?)",
        (table or "",),
    ).fetchone()
    return int(row[0])


def drop_index(store: Store, table: str) -> None:
    """Drop a vec0 table and its bookkeeping (rebuild re-creates it)."""
    store.conn.execute(f"DROP TABLE IF EXISTS {table}")
    vector_matrix.note_written()
    store.conn.execute("DELETE FROM embedded WHERE index_name = ?", (table,))
