"""The chunk side of a store's vectors: extra windows of long memories in their own vec0 index.

Each embedder's chunk index is registered like any other (`vec_indexes`) under the key
`<embedder key>#chunks`, so rebuild and doctor see it; a chunk's rowid is
`memory row number * CHUNK_SLOTS + window`, so no extra table maps chunks to memories.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from cortex.core.write.chunks import CHUNK_SLOTS
from cortex.store.sqlite import vector_matrix, vectors
from cortex.store.sqlite.codec import marks
from cortex.store.sqlite.connection import Connection

CHUNK_KEY_SUFFIX = "#chunks"


def chunk_index_key(embedder_key: str) -> str:
    """The `vec_indexes` key of an embedder's chunk index."""
    return embedder_key + CHUNK_KEY_SUFFIX


def existing_chunk_index(conn: Connection, embedder_key: str) -> str | None:
    """The chunk table of this embedder, if one was ever created."""
    found = vectors.existing_index(conn, chunk_index_key(embedder_key))
    return found[0] if found else None


def ensure_chunk_index(conn: Connection, embedder_key: str, dim: int, at: datetime) -> str:
    """Create the chunk vec0 table for an embedder once; returns its name."""
    return vectors.ensure_index(conn, chunk_index_key(embedder_key), dim, at)


def write_chunk_vectors(conn: Connection, table: str, rows: Sequence[tuple[int, Sequence[bytes]]]) -> None:
    """Replace the chunk vectors of memory row numbers (an empty list clears them); mark done."""
    if not rows:
        return
    for n, _ in rows:
        low = n * CHUNK_SLOTS
        conn.execute(f"DELETE FROM {table} WHERE rowid >= ? AND rowid < ?", (low, low + CHUNK_SLOTS))
    conn.executemany(
        f"INSERT INTO {table}(rowid, embedding) VALUES (?, ?)",
        [(n * CHUNK_SLOTS + i, blob) for n, blobs in rows for i, blob in enumerate(blobs[:CHUNK_SLOTS])],
    )
    vector_matrix.note_written()
    conn.executemany(
        "INSERT OR IGNORE INTO embedded (n, index_name) VALUES (?, ?)",
        [(n, table) for n, _ in rows],
    )


def delete_chunk_vectors(conn: Connection, table: str, ns: Sequence[int]) -> None:
    """Drop every window of these memory row numbers and their `embedded` marks."""
    if not ns:
        return
    if conn.vectors:  # the vec0 table is there to write only with the extension loaded
        for n in ns:
            low = n * CHUNK_SLOTS
            conn.execute(f"DELETE FROM {table} WHERE rowid >= ? AND rowid < ?", (low, low + CHUNK_SLOTS))
    vector_matrix.note_written()
    conn.execute(f"DELETE FROM embedded WHERE index_name = ? AND n IN ({marks(ns)})", (table, *ns))


def knn_chunks(conn: Connection, table: str, query: bytes, k: int) -> list[tuple[int, float]]:
    """(memory row number, best cosine distance over its chunks) among the k nearest chunks."""
    best: dict[int, float] = {}
    for rowid, distance in vectors.nearest(conn, table, query, k):
        n = rowid // CHUNK_SLOTS
        if n not in best or distance < best[n]:
            best[n] = distance
    return sorted(best.items(), key=lambda item: item[1])
