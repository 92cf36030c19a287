"""SQL the lifecycle, portability and code-index use cases need beyond `Store`'s everyday queries."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from cortex.core.digest import StateDigest, digest_state
from cortex.core.model import Edge, Memory, MemoryType
from cortex.core.serial import dumps, format_time
from cortex.core.write.similar import Text
from cortex.store.sqlite import vectors
from cortex.store.sqlite.store import _COLUMNS, _PLACEHOLDERS, Store, _memory_to_row, _row_to_memory


def count_active(store: Store) -> int:
    """Active memories in the store."""
    row = store.conn.execute("SELECT count(*) FROM memories WHERE status = 'active'").fetchone()
    return int(row[0])


def read_all_memories(store: Store) -> list[Memory]:
    """Every memory whatever its status, by id."""
    rows = store.conn.execute(f"SELECT {_COLUMNS} FROM memories ORDER BY id")
    return [_row_to_memory(r) for r in rows]


def read_state_digest(store: Store) -> StateDigest:
    """The logical-state digest of a store (memories and edges)."""
    return digest_state(read_all_memories(store), store.edges())


def read_tick_candidates(
    store: Store, cutoffs: dict[MemoryType, datetime], prune_before: datetime, floor: float
) -> list[Memory]:
    """The memories a tick could change: decaying ones old enough to move, low ones, and
    archived ones due for pruning. Pinned and lasting memories above the floor are skipped."""
    decaying = " OR ".join("(type = ? AND updated <= ?)" for _ in cutoffs)
    params: list[Any] = [v for t, at in cutoffs.items() for v in (t.value, format_time(at))]
    sql = (
        f"SELECT {_COLUMNS} FROM memories WHERE "
        f"(status = 'active' AND (low_since IS NOT NULL OR confidence < ? "
        f"OR (pinned = 0 AND ({decaying or '0'})))) "
        "OR (status = 'archived' AND max(updated, coalesce(status_changed, ''), "
        "coalesce(last_accessed, '')) <= ?) ORDER BY n"
    )
    rows = store.conn.execute(sql, (floor, *params, format_time(prune_before)))
    return [_row_to_memory(r) for r in rows]


def read_active_texts(store: Store) -> list[Text]:
    """(id, type, content) of every active memory: all that finding duplicates needs."""
    rows = store.conn.execute("SELECT id, type, content FROM memories WHERE status = 'active'")
    return [Text(r[0], r[1], r[2]) for r in rows]


# Journal ops that never change what a memory says nor bring one back into play.
QUIET_OPS = ("decay", "archive", "prune", "forget", "supersede", "access", "edge", "edge_delete")


def read_journal_seq(store: Store) -> int:
    """The newest journal sequence number (0 when empty)."""
    return int(store.conn.execute("SELECT coalesce(max(seq), 0) FROM journal").fetchone()[0])


def read_changed_ids(store: Store, after_seq: int) -> set[str]:
    """Memories written, reworded or revived since journal record `after_seq`."""
    marks = ", ".join("?" * len(QUIET_OPS))
    rows = store.conn.execute(
        f"SELECT DISTINCT memory_id FROM journal WHERE seq > ? AND memory_id IS NOT NULL "
        f"AND op NOT IN ({marks})",
        (after_seq, *QUIET_OPS),
    )
    return {r[0] for r in rows}


def read_active_ids(store: Store) -> list[str]:
    """Ids of the active memories (the nodes centrality is computed over)."""
    return [r[0] for r in store.conn.execute("SELECT id FROM memories WHERE status = 'active'")]


def read_tagged(store: Store, tag: str, types: Sequence[str]) -> list[Memory]:
    """Active and archived memories of these types carrying `tag`."""
    marks = ", ".join("?" * len(types))
    rows = store.conn.execute(
        f"SELECT {_COLUMNS} FROM memories WHERE type IN ({marks}) "
        "AND status IN ('active', 'archived') "
        "AND EXISTS (SELECT 1 FROM json_each(memories.tags) WHERE value = ?) ORDER BY n",
        (*types, tag),
    )
    return [_row_to_memory(r) for r in rows]


def read_tag_prefix(store: Store, prefix: str, types: Sequence[str]) -> list[Memory]:
    """Active and archived memories of these types with a tag starting with `prefix`."""
    marks = ", ".join("?" * len(types))
    rows = store.conn.execute(
        f"SELECT {_COLUMNS} FROM memories WHERE type IN ({marks}) "
        "AND status IN ('active', 'archived') AND EXISTS (SELECT 1 FROM json_each(memories.tags) "
        "WHERE substr(value, 1, ?) = ?) ORDER BY n",
        (*types, len(prefix), prefix),
    )
    return [_row_to_memory(r) for r in rows]


# -- raw writes for import (the imported journal records describe them) ------------------------
def insert_memory_unjournaled(store: Store, m: Memory) -> None:
    """Insert a memory whose history arrives with it (import); the caller journals."""
    store.conn.execute(f"INSERT INTO memories ({_COLUMNS}) VALUES ({_PLACEHOLDERS})", _memory_to_row(m))


def insert_edge_unjournaled(store: Store, e: Edge, at: datetime) -> bool:
    """Insert an edge unless one with its key exists; True when inserted."""
    created = format_time(e.created or at)
    cur = store.conn.execute(
        "INSERT OR IGNORE INTO edges (source, target, type, strength, status, created, updated) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (e.source, e.target, e.type.value, e.strength, e.status.value, created, created),
    )
    return bool(cur.rowcount)


def journal_fingerprint(row: dict[str, Any]) -> str:
    """Identity of a journal record apart from its sequence number (import dedupes on it)."""
    text = dumps([row["at"], row["actor"], row["op"], row["memory_id"], row["payload"]])
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def read_journal_fingerprints(store: Store) -> set[str]:
    """Fingerprints of every journal record in the store."""
    return {journal_fingerprint(r) for r in store.journal_rows()}


def append_journal_rows(store: Store, rows: Iterable[dict[str, Any]]) -> int:
    """Copy journal records (at, actor, op, memory_id, payload) verbatim; returns how many."""
    n = 0
    for r in rows:
        store.conn.execute(
            "INSERT INTO journal (at, actor, op, memory_id, payload) VALUES (?, ?, ?, ?, ?)",
            (r["at"], r["actor"], r["op"], r["memory_id"], dumps(r["payload"])),
        )
        n += 1
    return n


# -- derived indexes ---------------------------------------------------------------------------
def read_vector_indexes(store: Store) -> list[tuple[str, str, int]]:
    """(table, embedder key, dim) of every registered vec0 index."""
    rows = store.conn.execute("SELECT name, embedder_key, dim FROM vec_indexes ORDER BY name")
    return [(r[0], r[1], int(r[2])) for r in rows]


def read_all_vectors(store: Store, table: str) -> dict[int, bytes]:
    """Every vector of a vec0 table by memory row number."""
    return {int(n): bytes(blob) for n, blob in store.conn.execute(f"SELECT rowid, embedding FROM {table}")}


def read_embeddable_rows(store: Store) -> dict[int, str]:
    """Row number -> id of memories that belong in a vector index (live, not raw code)."""
    rows = store.conn.execute(
        "SELECT n, id FROM memories WHERE status IN ('active', 'archived') AND type != 'code'"
    )
    return {int(n): mid for n, mid in rows}


def recreate_vector_index(store: Store, table: str, key: str, dim: int, at: datetime) -> str:
    """Drop a vec0 table with its bookkeeping and create it empty again."""
    vectors.drop_index(store, table)
    store.conn.execute("DELETE FROM vec_indexes WHERE name = ?", (table,))
    return vectors.ensure_index(store, key, dim, at)


def delete_vectors_of(store: Store, ids: Sequence[str]) -> None:
    """Drop the vectors of these memories from every index (pruned memories leave KNN)."""
    if not ids:
        return
    rows = list(store.row_numbers(list(ids)).values())
    for table, _, _ in read_vector_indexes(store):
        vectors.delete_vectors(store, table, rows)


def check_fts(store: Store) -> bool:
    """True when the FTS index agrees with the memories table."""
    try:
        store.conn.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)")
        return True
    except Exception:
        return False
