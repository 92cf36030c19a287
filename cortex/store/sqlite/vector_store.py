"""The vector methods of a store, by memory id: row numbers stay inside the adapter."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from cortex.store.port import VectorHit, VectorIndex
from cortex.store.sqlite import chunk_vectors, codec, vector_matrix, vectors
from cortex.store.sqlite.connection import Connection, data_version

MAX_PENDING_KEYS = 64
# (connection id, table) -> (connection, store version, count): recall asks on every query,
# the answer changes only when the store does.
_PENDING: dict[tuple[int, str], tuple[Any, tuple[Any, ...], int]] = {}


def pending_version(conn: Connection) -> tuple[int, int, int]:
    """What a held count of `count_unembedded` is valid for: any commit of another connection,
    any write of this one, any vector written in this process."""
    return (data_version(conn), conn.raw.total_changes, vector_matrix.generation())


def carry_pending(conn: Connection, before: tuple[int, int, int]) -> None:
    """Keep the counts held at `before` across this connection's writes since, which touched
    nothing that decides them (recall's access counts: never a status, type or vector)."""
    after = pending_version(conn)
    if after[0] != before[0] or after[2] != before[2]:
        return  # another connection committed, or vectors were written: count again
    for key, held in list(_PENDING.items()):
        if held[0] is conn.raw and held[1] == before:
            _PENDING[key] = (held[0], after, held[2])


def drop_vectors(conn: Connection, ns: Sequence[int]) -> None:
    """Drop the vectors of these memory row numbers from every index, windows included: they
    are embedded again by the next pass (the worker's, or `cortex backfill`)."""
    for table, key, _ in vectors.list_indexes(conn):
        if key.endswith(chunk_vectors.CHUNK_KEY_SUFFIX):
            chunk_vectors.delete_chunk_vectors(conn, table, ns)
        else:
            vectors.delete_vectors(conn, table, ns)


class VectorMethods:
    """Vector indexes, vectors and nearest-neighbour search of one store."""

    conn: Connection

    def vector_index(self, embedder_key: str) -> VectorIndex | None:
        """The index registered for this embedder, if any."""
        found = vectors.existing_index(self.conn, embedder_key)
        return VectorIndex(found[0], embedder_key, found[1]) if found else None

    def ensure_vector_index(self, embedder_key: str, dim: int, at: datetime) -> str:
        """The index of this embedder, created on first use (needs sqlite-vec in this connection)."""
        return vectors.ensure_index(self.conn, embedder_key, dim, at)

    def ensure_chunk_index(self, embedder_key: str, dim: int, at: datetime) -> str:
        """The index of this embedder's extra windows of long memories, created on first use."""
        return chunk_vectors.ensure_chunk_index(self.conn, embedder_key, dim, at)

    def write_vectors(self, index: str, vectors_by_id: Sequence[tuple[str, bytes]]) -> None:
        """Store (or replace) memories' own vectors; ids of no memory here are skipped."""
        rows = codec.row_numbers(self.conn, [mid for mid, _ in vectors_by_id])
        vectors.write_vectors(
            self.conn, index, [(rows[mid], blob) for mid, blob in vectors_by_id if mid in rows]
        )

    def write_chunk_vectors(self, index: str, vectors_by_id: Sequence[tuple[str, Sequence[bytes]]]) -> None:
        """Replace the window vectors of memories (an empty list clears them)."""
        rows = codec.row_numbers(self.conn, [mid for mid, _ in vectors_by_id])
        chunk_vectors.write_chunk_vectors(
            self.conn, index, [(rows[mid], blobs) for mid, blobs in vectors_by_id if mid in rows]
        )

    def unembedded(self, index: str | None, limit: int | None = None) -> list[str]:
        """Ids of live memories (code excepted) with no vector in `index` yet, oldest first."""
        return [mid for _, mid in vectors.pending(self.conn, index, limit)]

    def count_unembedded(self, index: str | None) -> int:
        """How many memories `unembedded` would return, counted once per change of the store."""
        conn = self.conn
        # Another connection's commit moves data_version; this connection's own writes (a new
        # memory, a vector, a status change) move total_changes. Neither reads the store, so a
        # warm recall at 100,000 memories no longer counts them per query (~40 ms).
        version = pending_version(conn)
        key = (id(conn.raw), index or "")
        held = _PENDING.get(key)
        if held is not None and held[0] is conn.raw and held[1] == version:
            return held[2]
        count = vectors.count_pending(conn, index)
        if len(_PENDING) > MAX_PENDING_KEYS:
            _PENDING.clear()
        _PENDING[key] = (conn.raw, version, count)
        return count

    def nearest(self, embedder_key: str, query: bytes, k: int, *, chunk_k: int = 0) -> list[VectorHit]:
        """The k memories nearest `query` among this embedder's vectors, nearest first. With
        `chunk_k`, the windows of long memories count too: that many nearest windows are
        fetched and a memory is as near as its nearest vector (max-pooling)."""
        found = vectors.existing_index(self.conn, embedder_key) if self.conn.vectors else None
        if found is None:
            return []
        best = dict(vectors.nearest(self.conn, found[0], query, k))
        chunk_table = chunk_vectors.existing_chunk_index(self.conn, embedder_key) if chunk_k > 0 else None
        if chunk_table is not None:
            for n, distance in chunk_vectors.knn_chunks(self.conn, chunk_table, query, chunk_k):
                if distance < best.get(n, 2.0):
                    best[n] = distance
        near = sorted(best.items(), key=lambda item: item[1])[:k]
        rows = codec.ids_for_rows(self.conn, [n for n, _ in near])
        return [VectorHit(rows[n][0], rows[n][1], d) for n, d in near if n in rows]

    def read_vectors(self, index: str, ids: Sequence[str], *, exact: bool = True) -> dict[str, bytes]:
        """Stored vectors of memories that have one in `index`; unless `exact`, unit-length
        copies may come from memory (cheaper for a process that searches often)."""
        rows = codec.row_numbers(self.conn, list(ids))
        by_row = {n: mid for mid, n in rows.items()}
        found = vectors.read_vectors(self.conn, index, list(by_row), exact=exact)
        return {by_row[n]: blob for n, blob in found.items()}
