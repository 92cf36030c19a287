"""The vec0 side of a store by row number: one index per embedder and dimension, KNN, and the
embedding queue (memories with no vector yet in an index)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from cortex.core.serial import format_time
from cortex.store.sqlite import vector_codes, vector_matrix
from cortex.store.sqlite.codec import marks
from cortex.store.sqlite.connection import Connection

SCAN_OVER = 2_000  # more row numbers than this, and ...
SCAN_SHARE = 4  # ... at least a quarter of the table: read it whole instead of by rowid

# Live memories that belong in a vector index: raw code is found by its description instead.
EMBEDDABLE = "m.status IN ('active', 'archived') AND m.type != 'code'"


def index_name(embedder_key: str, dim: int) -> str:
    """A safe vec0 table name for an embedder; hosted and local keys never share one."""
    slug = re.sub(r"[^a-z0-9]+", "_", embedder_key.lower()).strip("_")
    return f"vec_{slug}_{dim}" if not slug.endswith(str(dim)) else f"vec_{slug}"


def existing_index(conn: Connection, embedder_key: str) -> tuple[str, int] | None:
    """(table, dim) of the index registered for this embedder, if any."""
    row = conn.execute("SELECT name, dim FROM vec_indexes WHERE embedder_key = ?", (embedder_key,)).fetchone()
    return (row[0], int(row[1])) if row else None


def ensure_index(conn: Connection, embedder_key: str, dim: int, at: datetime) -> str:
    """Create the vec0 table for an embedder once (needs sqlite-vec in this connection)."""
    found = existing_index(conn, embedder_key)
    if found:
        if found[1] != dim:
            raise ValueError(f"index for {embedder_key} has dim {found[1]}, not {dim}")
        if not vector_codes.ready(conn, found[0]):  # codes could not be built when it was migrated
            vector_codes.backfill(conn, found[0])
        return found[0]
    name = index_name(embedder_key, dim)
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING vec0(embedding float[{dim}] distance_metric=cosine)"
    )
    vector_codes.create(conn, name)
    conn.execute(
        "INSERT OR IGNORE INTO vec_indexes (name, embedder_key, dim, created) VALUES (?, ?, ?, ?)",
        (name, embedder_key, dim, format_time(at)),
    )
    return name


def list_indexes(conn: Connection) -> list[tuple[str, str, int]]:
    """(table, embedder key, dim) of every registered vec0 index, by name."""
    rows = conn.execute("SELECT name, embedder_key, dim FROM vec_indexes ORDER BY name")
    return [(r[0], r[1], int(r[2])) for r in rows]


def write_vectors(conn: Connection, table: str, rows: Sequence[tuple[int, bytes]]) -> None:
    """Store vectors for memory row numbers (replacing old ones) and mark them embedded."""
    if not rows:
        return
    ns = [n for n, _ in rows]
    # A statement per row: vec0 finds `rowid = ?` by its rowid index but walks every rowid for
    # `rowid IN (...)` (~1.8 s per write at 1,000,000 vectors, after every turn).
    conn.executemany(f"DELETE FROM {table} WHERE rowid = ?", [(n,) for n in ns])
    conn.executemany(f"INSERT INTO {table}(rowid, embedding) VALUES (?, ?)", rows)
    vector_codes.write(conn, table, rows)
    vector_matrix.note_written()
    conn.executemany("INSERT OR IGNORE INTO embedded (n, index_name) VALUES (?, ?)", [(n, table) for n in ns])


def delete_vectors(conn: Connection, table: str, ns: Sequence[int]) -> None:
    """Drop vectors of removed memories."""
    if not ns:
        return
    if conn.vectors:  # by rowid, one at a time (see `write_vectors`)
        conn.executemany(f"DELETE FROM {table} WHERE rowid = ?", [(n,) for n in ns])
    vector_codes.delete(conn, table, ns)
    vector_matrix.note_written()
    conn.execute(f"DELETE FROM embedded WHERE index_name = ? AND n IN ({marks(ns)})", (table, *ns))


def knn(conn: Connection, table: str, query: bytes, k: int) -> list[tuple[int, float]]:
    """(row number, cosine distance) of the k nearest vectors, straight from vec0."""
    rows = conn.execute(
        f"SELECT rowid, distance FROM {table} WHERE embedding MATCH ? AND k = ? ORDER BY distance",
        (query, k),
    )
    return [(int(r[0]), float(r[1])) for r in rows]


def nearest(conn: Connection, table: str, query: bytes, k: int) -> list[tuple[int, float]]:
    """Like `knn`: by binary codes re-ranked on float vectors when the table is large
    (`vector_codes`), else exactly, from the process's in-memory copy of the table when one is
    held, else in vec0. (Asked first, the copy would count a large vec0 table at every search.)"""
    held = vector_codes.knn(conn, table, query, k)
    if held is None:
        held = vector_matrix.held_knn(conn, table, query, k)
    return knn(conn, table, query, k) if held is None else held


def read_vectors(conn: Connection, table: str, ns: Sequence[int], *, exact: bool = True) -> dict[int, bytes]:
    """Stored vectors of row numbers that have one; unless `exact`, the unit-length rows of the
    in-memory copy when one is held."""
    if not exact:
        held = vector_matrix.held_read(conn, table, ns)
        if held is not None:
            return held
    if len(ns) > SCAN_OVER and len(ns) * SCAN_SHARE >= count_vectors(conn, table):
        wanted = set(ns)  # most of the table: one scan (~20 us a vector, a lookup by rowid ~0.2 ms)
        rows = conn.execute(f"SELECT rowid, embedding FROM {table}")
        return {int(n): bytes(blob) for n, blob in rows if n in wanted}
    # One lookup per row: vec0 answers `rowid = ?` from its rowid index, while `rowid IN (...)`
    # first walks every rowid (~60 ms more a statement at 100,000 vectors, however few rows).
    sql = f"SELECT embedding FROM {table} WHERE rowid = ?"
    out: dict[int, bytes] = {}
    for n in dict.fromkeys(ns):
        row = conn.execute(sql, (n,)).fetchone()
        if row is not None:
            out[int(n)] = bytes(row[0])
    return out


def count_vectors(conn: Connection, table: str) -> int:
    """How many vectors a vec0 table holds."""
    return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def read_all_vectors(conn: Connection, table: str) -> dict[int, bytes]:
    """Every vector of a vec0 table by memory row number."""
    return {int(n): bytes(blob) for n, blob in conn.execute(f"SELECT rowid, embedding FROM {table}")}


def embeddable_rows(conn: Connection) -> dict[int, str]:
    """Row number -> id of the memories that belong in a vector index."""
    return {int(n): mid for n, mid in conn.execute(f"SELECT n, id FROM memories m WHERE {EMBEDDABLE}")}


def pending(conn: Connection, table: str | None, limit: int | None = None) -> list[tuple[int, str]]:
    """(row number, id) of embeddable memories with no vector in `table` yet (all, if no table)."""
    sql = (
        f"SELECT m.n, m.id FROM memories m WHERE {EMBEDDABLE} AND NOT EXISTS "
        "(SELECT 1 FROM embedded e WHERE e.n = m.n AND e.index_name = ?) ORDER BY m.n"
    )
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return [(int(n), mid) for n, mid in conn.execute(sql, (table or "",))]


# A row of `embedded` for this index, looked up by memory row number (parameter 1: the index).
_HAS_VECTOR = "EXISTS (SELECT 1 FROM embedded e WHERE e.n = m.n AND e.index_name = ?1)"
# Not live, as index ranges: `status NOT IN (...)` would walk every memory's index entry.
_NOT_LIVE = (
    "(m.status < 'active' OR (m.status > 'active' AND m.status < 'archived') OR m.status > 'archived')"
)
# Embeddable memories less the index's vectors, plus the vectors it keeps for memories that no
# longer belong in it (superseded, pruned, code): the same number as the anti-join
# `embeddable AND NOT EXISTS (vector)`, since every row of `embedded` names a memory (memories
# are never deleted, only their status changes). The anti-join looks up every embeddable
# memory's vector (~94 ms at 100,000 memories on 2 cores, once per new recall process); this
# counts index ranges and looks up only the few memories that are not embeddable (~13 ms).
# Live memories by status (a range count each) less live code: `type != 'code'` tested entry by
# entry took twice as long.
_EMBEDDABLE_COUNT = (
    "(SELECT count(*) FROM memories WHERE status = 'active') + (SELECT count(*) FROM memories "
    "WHERE status = 'archived') - (SELECT count(*) FROM memories WHERE status IN ('active', 'archived') "
    "AND type = 'code')"
)
_KEPT_FOR_OTHERS = (
    f" + (SELECT count(*) FROM memories m WHERE {_NOT_LIVE} AND {_HAS_VECTOR})"
    f" + (SELECT count(*) FROM memories m WHERE m.status IN ('active', 'archived') AND m.type = 'code'"
    f" AND {_HAS_VECTOR})"
)
# The index's vectors: every row of `embedded` when it is the only index registered (dropping an
# index deletes its rows), a count from the table's pages (~1 ms, not ~10 ms for a filtered walk).
_COUNT_PENDING = (
    f"SELECT {_EMBEDDABLE_COUNT} - (SELECT count(*) FROM embedded WHERE index_name = ?1){_KEPT_FOR_OTHERS}"
)
_COUNT_PENDING_ONLY_INDEX = f"SELECT {_EMBEDDABLE_COUNT} - (SELECT count(*) FROM embedded){_KEPT_FOR_OTHERS}"


def count_pending(conn: Connection, table: str | None) -> int:
    """How many embeddable memories have no vector in `table` yet (`pending`'s length)."""
    names = [r[0] for r in conn.execute("SELECT name FROM vec_indexes LIMIT 2")]
    sql = _COUNT_PENDING_ONLY_INDEX if table and names == [table] else _COUNT_PENDING
    return int(conn.execute(sql, (table or "",)).fetchone()[0])


def drop_index(conn: Connection, table: str) -> None:
    """Drop a vec0 table and its bookkeeping (rebuild re-creates it)."""
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    vector_codes.drop(conn, table)
    vector_matrix.note_written()
    conn.execute("DELETE FROM embedded WHERE index_name = ?", (table,))


def recreate_index(conn: Connection, table: str, key: str, dim: int, at: datetime) -> str:
    """Drop a vec0 table with its registration and create it empty again."""
    drop_index(conn, table)
    conn.execute("DELETE FROM vec_indexes WHERE name = ?", (table,))
    return ensure_index(conn, key, dim, at)
