"""Vectors of a PostgreSQL store in pgvector: one table per embedder (and one for the windows of
long memories), each with an HNSW index on cosine distance, and the embedding queue.

Tables and row numbers mirror the SQLite adapter: a table keys vectors by the memory's row
number `n`, a window's key is `n * CHUNK_SLOTS + window`, `vec_indexes` registers every table
and `embedded` says which memories have a vector in which table.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from cortex.core.serial import format_time
from cortex.core.write.chunks import CHUNK_SLOTS
from cortex.store.packing import pack, unpack
from cortex.store.port import VectorHit, VectorIndex
from cortex.store.postgres.connection import Session

CHUNK_KEY_SUFFIX = "#chunks"
EMBEDDABLE = "m.status IN ('active', 'archived') AND m.type != 'code'"
MIN_EF_SEARCH = 40  # pgvector's default; raised to k so that k neighbours can come back
BULK_ROWS = 5_000  # vectors written at once from which the HNSW index is rebuilt, not updated
BUILD_MEMORY = "256MB"  # maintenance_work_mem of such a build: a 100,000 x 384 graph fits
HNSW = "CREATE INDEX IF NOT EXISTS {table}_hnsw ON {table} USING hnsw (embedding vector_cosine_ops)"


def index_name(embedder_key: str, dim: int) -> str:
    """A safe table name for an embedder; hosted and local keys never share one."""
    slug = re.sub(r"[^a-z0-9]+", "_", embedder_key.lower()).strip("_")[:40]
    return f"vec_{slug}_{dim}" if not slug.endswith(str(dim)) else f"vec_{slug}"


def as_text(blob: bytes) -> str:
    """Packed float32 bytes as pgvector's text form (exact: every float32 prints back to itself)."""
    return "[" + ",".join(repr(v) for v in unpack(blob)) + "]"


def existing(conn: Any, embedder_key: str) -> tuple[str, int] | None:
    row = conn.execute(
        "SELECT name, dim FROM vec_indexes WHERE embedder_key = %s", (embedder_key,)
    ).fetchone()
    return (row[0], int(row[1])) if row else None


def create(conn: Any, embedder_key: str, dim: int, at: datetime) -> str:
    """The table of an embedder, created with its HNSW index on first use."""
    found = existing(conn, embedder_key)
    if found:
        if found[1] != dim:
            raise ValueError(f"index for {embedder_key} has dim {found[1]}, not {dim}")
        return found[0]
    name = index_name(embedder_key, dim)
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {name} (n BIGINT PRIMARY KEY, embedding vector({int(dim)}) NOT NULL)"
    )
    conn.execute(HNSW.format(table=name))
    conn.execute(
        "INSERT INTO vec_indexes (name, embedder_key, dim, created) VALUES (%s, %s, %s, %s) "
        "ON CONFLICT DO NOTHING",
        (name, embedder_key, dim, format_time(at)),
    )
    return name


def write(conn: Any, table: str, rows: Sequence[tuple[int, bytes]]) -> None:
    """Store vectors for memory row numbers (replacing old ones). A batch of `BULK_ROWS` or more
    (a backfill, an import, a rebuild) drops the HNSW index and builds it again afterwards, which
    is many times faster than inserting into the graph row by row."""
    if not rows:
        return
    bulk = len(rows) >= BULK_ROWS
    if bulk:
        conn.execute(f"DROP INDEX IF EXISTS {table}_hnsw")
    with conn.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {table} (n, embedding) VALUES (%s, %s::vector) "
            "ON CONFLICT (n) DO UPDATE SET embedding = excluded.embedding",
            ((n, as_text(blob)) for n, blob in rows),
        )
    if bulk:
        conn.execute(f"SET LOCAL maintenance_work_mem = '{BUILD_MEMORY}'")
        conn.execute(HNSW.format(table=table))


def mark(conn: Any, table: str, ns: Sequence[int]) -> None:
    conn.execute(
        "INSERT INTO embedded (n, index_name) SELECT unnest(%s::bigint[]), %s ON CONFLICT DO NOTHING",
        (list(ns), table),
    )


def knn(conn: Any, table: str, query: bytes, k: int) -> list[tuple[int, float]]:
    """(key, cosine distance) of the k nearest vectors through the HNSW index."""
    if k <= 0:
        return []
    conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(max(MIN_EF_SEARCH, min(k, 1000))),))
    rows = conn.execute(
        f"SELECT n, embedding <=> %s::vector AS d FROM {table} ORDER BY d LIMIT %s", (as_text(query), k)
    )
    return [(int(r[0]), float(r[1])) for r in rows]


def drop(conn: Any, ns: Sequence[int]) -> None:
    """Drop the vectors of these memory row numbers from every table, windows included: they
    are embedded again by the next pass (the worker's, or `cortex backfill`)."""
    if not ns:
        return
    for name, key in conn.execute("SELECT name, embedder_key FROM vec_indexes ORDER BY name").fetchall():
        chunk = key.endswith(CHUNK_KEY_SUFFIX)
        keys = [n * CHUNK_SLOTS + i for n in ns for i in range(CHUNK_SLOTS)] if chunk else list(ns)
        conn.execute(f"DELETE FROM {name} WHERE n = ANY(%s)", (keys,))
        conn.execute("DELETE FROM embedded WHERE index_name = %s AND n = ANY(%s)", (name, list(ns)))


def row_numbers(conn: Any, ids: Sequence[str]) -> dict[str, int]:
    rows = conn.execute("SELECT id, n FROM memories WHERE id = ANY(%s)", (list(ids),))
    return {r[0]: int(r[1]) for r in rows}


class VectorMethods:
    """Vector indexes, vectors and nearest-neighbour search of one store."""

    session: Session

    def vector_index(self, embedder_key: str) -> VectorIndex | None:
        """The index registered for this embedder, if any."""
        with self.session.reading() as conn:
            found = existing(conn, embedder_key)
        return VectorIndex(found[0], embedder_key, found[1]) if found else None

    def ensure_vector_index(self, embedder_key: str, dim: int, at: datetime) -> str:
        """The index of this embedder, created on first use."""
        with self.session.writing() as conn:
            return create(conn, embedder_key, dim, at)

    def ensure_chunk_index(self, embedder_key: str, dim: int, at: datetime) -> str:
        """The index of this embedder's extra windows of long memories, created on first use."""
        with self.session.writing() as conn:
            return create(conn, embedder_key + CHUNK_KEY_SUFFIX, dim, at)

    def write_vectors(self, index: str, vectors_by_id: Sequence[tuple[str, bytes]]) -> None:
        """Store (or replace) memories' own vectors; ids of no memory here are skipped."""
        with self.session.writing() as conn:
            rows = row_numbers(conn, [mid for mid, _ in vectors_by_id])
            kept = [(rows[mid], blob) for mid, blob in vectors_by_id if mid in rows]
            write(conn, index, kept)
            mark(conn, index, [n for n, _ in kept])

    def write_chunk_vectors(self, index: str, vectors_by_id: Sequence[tuple[str, Sequence[bytes]]]) -> None:
        """Replace the window vectors of memories (an empty list clears them)."""
        with self.session.writing() as conn:
            rows = row_numbers(conn, [mid for mid, _ in vectors_by_id])
            kept = [(rows[mid], blobs) for mid, blobs in vectors_by_id if mid in rows]
            for n, _ in kept:
                low = n * CHUNK_SLOTS
                conn.execute(f"DELETE FROM {index} WHERE n >= %s AND n < %s", (low, low + CHUNK_SLOTS))
            write(
                conn,
                index,
                [(n * CHUNK_SLOTS + i, b) for n, blobs in kept for i, b in enumerate(blobs[:CHUNK_SLOTS])],
            )
            mark(conn, index, [n for n, _ in kept])

    def unembedded(self, index: str | None, limit: int | None = None) -> list[str]:
        """Ids of live memories (code excepted) with no vector in `index` yet, oldest first."""
        sql = (
            f"SELECT m.id FROM memories m WHERE {EMBEDDABLE} AND NOT EXISTS "
            "(SELECT 1 FROM embedded e WHERE e.n = m.n AND e.index_name = %s) ORDER BY m.n"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self.session.reading() as conn:
            return [r[0] for r in conn.execute(sql, (index or "",))]

    def count_unembedded(self, index: str | None) -> int:
        """How many memories `unembedded` would return."""
        with self.session.reading() as conn:
            row = conn.execute(
                f"SELECT count(*) FROM memories m WHERE {EMBEDDABLE} AND NOT EXISTS "
                "(SELECT 1 FROM embedded e WHERE e.n = m.n AND e.index_name = %s)",
                (index or "",),
            ).fetchone()
        return int(row[0])

    def nearest(self, embedder_key: str, query: bytes, k: int, *, chunk_k: int = 0) -> list[VectorHit]:
        """The k memories nearest `query`, nearest first; with `chunk_k`, that many nearest
        windows of long memories count too and a memory is as near as its nearest vector."""
        with self.session.reading() as conn:
            found = existing(conn, embedder_key)
            if found is None:
                return []
            best = dict(knn(conn, found[0], query, k))
            chunks = existing(conn, embedder_key + CHUNK_KEY_SUFFIX) if chunk_k > 0 else None
            if chunks is not None:
                for key, distance in knn(conn, chunks[0], query, chunk_k):
                    n = key // CHUNK_SLOTS
                    if distance < best.get(n, 2.0):
                        best[n] = distance
            near = sorted(best.items(), key=lambda item: item[1])[:k]
            rows = conn.execute(
                "SELECT n, id, status FROM memories WHERE n = ANY(%s)", ([n for n, _ in near],)
            ).fetchall()
        by_n = {int(r[0]): (r[1], r[2]) for r in rows}
        return [VectorHit(by_n[n][0], by_n[n][1], d) for n, d in near if n in by_n]

    def read_vectors(self, index: str, ids: Sequence[str], *, exact: bool = True) -> dict[str, bytes]:
        """Stored vectors of memories that have one in `index` (always the stored values here)."""
        with self.session.reading() as conn:
            rows = conn.execute(
                f"SELECT m.id, v.embedding::real[] FROM {index} v "
                "JOIN memories m ON m.n = v.n WHERE m.id = ANY(%s)",
                (list(ids),),
            ).fetchall()
        return {r[0]: pack(r[1]) for r in rows}
