"""The upkeep half of a PostgreSQL store: whole-store reads, verbatim imports, index rebuilds."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from cortex.core.digest import StateDigest, digest_state
from cortex.core.model import Edge, Memory, MemoryType
from cortex.core.serial import dumps, format_time
from cortex.core.write.chunks import CHUNK_SLOTS
from cortex.store.memory_rows import COLUMNS, memory_to_row
from cortex.store.packing import pack
from cortex.store.port import StoreStats, VectorIndex, VectorRebuild
from cortex.store.postgres import codec, migrations, text_search, vectors
from cortex.store.postgres.codec import PLACEHOLDERS
from cortex.store.postgres.records import JOURNAL_INSERT, Records

if TYPE_CHECKING:
    from cortex.core.write.similar import Text

# Journal ops that never change what a memory says nor bring one back into play.
QUIET_OPS = [
    "decay",
    "archive",
    "prune",
    "forget",
    "supersede",
    "access",
    "edge",
    "edge_delete",
    "usage_priority",
]


def journal_fingerprint(row: dict[str, Any]) -> str:
    """Identity of a journal record apart from its sequence number (import dedupes on it)."""
    text = dumps([row["at"], row["actor"], row["op"], row["memory_id"], row["payload"]])
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class Maintenance(Records):
    """Reads over the whole store and the writes that bypass the journal's usual path."""

    key: str

    def count_active(self) -> int:
        """Active memories in the store."""
        with self.session.reading() as conn:
            return int(conn.execute("SELECT count(*) FROM memories WHERE status = 'active'").fetchone()[0])

    def all_memories(self) -> list[Memory]:
        """Every memory whatever its status, by id."""
        with self.session.reading() as conn:
            return codec.read_memories(conn, f"SELECT {COLUMNS} FROM memories ORDER BY id")

    def state_digest(self) -> StateDigest:
        """The logical-state digest of the store (memories and edges), read in one snapshot."""
        with self.session.snapshot():
            return digest_state(self.all_memories(), self.edges())

    def tick_candidates(
        self, cutoffs: dict[MemoryType, datetime], prune_before: datetime, floor: float
    ) -> list[Memory]:
        """The memories a tick could change (see the SQLite adapter: the same rule)."""
        decaying = " OR ".join("(type = %s AND updated <= %s)" for _ in cutoffs)
        params: list[Any] = [v for t, at in cutoffs.items() for v in (t.value, format_time(at))]
        sql = (
            f"SELECT {COLUMNS} FROM memories WHERE "
            f"(status = 'active' AND (low_since IS NOT NULL OR confidence < %s "
            f"OR (pinned = 0 AND ({decaying or 'false'})))) "
            "OR (status = 'archived' AND greatest(updated, coalesce(status_changed, ''), "
            "coalesce(last_accessed, '')) <= %s) ORDER BY n"
        )
        with self.session.reading() as conn:
            return codec.read_memories(conn, sql, (floor, *params, format_time(prune_before)))

    def active_texts(self) -> list[Text]:
        """(id, type, content) of every active memory."""
        from cortex.core.write.similar import Text  # only consolidation needs it

        with self.session.reading() as conn:
            rows = conn.execute("SELECT id, type, content FROM memories WHERE status = 'active'").fetchall()
        return [Text(r[0], r[1], r[2]) for r in rows]

    def journal_seq(self) -> int:
        """The newest journal sequence number (0 when empty)."""
        with self.session.reading() as conn:
            return int(conn.execute("SELECT coalesce(max(seq), 0) FROM journal").fetchone()[0])

    def changed_ids(self, after_seq: int) -> set[str]:
        """Memories written, reworded or revived since journal record `after_seq`."""
        with self.session.reading() as conn:
            rows = conn.execute(
                "SELECT DISTINCT memory_id FROM journal WHERE seq > %s AND memory_id IS NOT NULL "
                "AND op != ALL(%s)",
                (after_seq, QUIET_OPS),
            ).fetchall()
        return {r[0] for r in rows}

    def import_memory(self, m: Memory) -> None:
        """Insert a memory whose history arrives with it; the caller journals."""
        with self.session.writing() as conn:
            conn.execute(f"INSERT INTO memories ({COLUMNS}) VALUES ({PLACEHOLDERS})", memory_to_row(m))

    def import_edge(self, e: Edge, at: datetime) -> bool:
        """Insert an edge unless one with its key exists (not journaled); True when inserted."""
        created = format_time(e.created or at)
        with self.session.writing() as conn:
            cur = conn.execute(
                "INSERT INTO edges (source, target, type, strength, status, created, updated) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (e.source, e.target, e.type.value, e.strength, e.status.value, created, created),
            )
            return bool(cur.rowcount)

    def append_journal(self, rows: Iterable[dict[str, Any]]) -> int:
        """Copy journal records verbatim, skipping those the store already holds; how many."""
        with self.session.writing() as conn:
            seen = {journal_fingerprint(r) for r in self.journal_rows()}
            n = 0
            for r in rows:
                if journal_fingerprint(r) in seen:
                    continue
                conn.execute(
                    JOURNAL_INSERT, (r["at"], r["actor"], r["op"], r["memory_id"], dumps(r["payload"]))
                )
                n += 1
            return n

    def vector_indexes(self) -> list[VectorIndex]:
        """Every vector index of the store (chunk indexes included), by name."""
        with self.session.reading() as conn:
            rows = conn.execute("SELECT name, embedder_key, dim FROM vec_indexes ORDER BY name").fetchall()
        return [VectorIndex(r[0], r[1], int(r[2])) for r in rows]

    def delete_vectors(self, ids: Sequence[str]) -> None:
        """Drop the vectors of these memories from every index (pruned memories leave search)."""
        if not ids:
            return
        with self.session.writing() as conn:
            vectors.drop(conn, list(vectors.row_numbers(conn, ids).values()))

    def rebuild_text_index(self) -> None:
        """Rebuild the keyword index from the memories table."""
        with self.session.writing() as conn:
            conn.execute("REINDEX INDEX memories_document")

    def check_text_index(self) -> bool:
        """True when every stored search document equals the one its row's text gives."""
        with self.session.reading() as conn:
            row = conn.execute(
                f"SELECT count(*) FROM memories WHERE document IS DISTINCT FROM ({text_search.DOCUMENT})"
            )
            return int(row.fetchone()[0]) == 0

    def rebuild_vector_index(self, index: VectorIndex, at: datetime) -> VectorRebuild:
        """Recreate one vector index holding only live, non-code memories, keeping their vectors."""
        with self.session.writing() as conn:
            wanted = {int(r[0]) for r in conn.execute(f"SELECT n FROM memories m WHERE {vectors.EMBEDDABLE}")}
            chunk = index.embedder_key.endswith(vectors.CHUNK_KEY_SUFFIX)
            saved = [
                (int(r[0]), r[1])
                for r in conn.execute(f"SELECT n, embedding::real[] FROM {index.name}")
                if (int(r[0]) // CHUNK_SLOTS if chunk else int(r[0])) in wanted
            ]
            conn.execute(f"DROP TABLE IF EXISTS {index.name}")
            conn.execute("DELETE FROM vec_indexes WHERE name = %s", (index.name,))
            conn.execute("DELETE FROM embedded WHERE index_name = %s", (index.name,))
            fresh = vectors.create(conn, index.embedder_key, index.dim, at)
            vectors.write(conn, fresh, [(n, pack(floats)) for n, floats in saved])
            owners = sorted({n // CHUNK_SLOTS if chunk else n for n, _ in saved})
            vectors.mark(conn, fresh, owners)
        return VectorRebuild(len(owners), len(wanted) - len(owners), None)

    def stats(self) -> StoreStats:
        """Schema, edge and journal counts, size of the store's tables and indexes, oldest index."""
        with self.session.reading() as conn:
            row = conn.execute(
                "SELECT (SELECT version FROM cortex_store), (SELECT count(*) FROM edges), "
                "(SELECT count(*) FROM journal), "
                "(SELECT name FROM vec_indexes ORDER BY created, name LIMIT 1), "
                "(SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                " JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = %s AND c.relkind = 'r')",
                (self.session.schema,),
            ).fetchone()
        return StoreStats(int(row[0]), int(row[1]), int(row[2]), int(row[4]), row[3])

    def migrate(self) -> int:
        """Bring the schema up to date (after a restore from an older checkpoint); the version."""
        return migrations.migrate(self.session, self.key)
