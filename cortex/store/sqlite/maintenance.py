"""The upkeep half of `Store`: whole-store reads, verbatim imports, index rebuilds, checkpoints.

What the lifecycle, rebuild, import/export, status and recovery use cases ask beyond a store's
everyday queries (`StoreAdmin` in the port).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from cortex.core.digest import StateDigest, digest_state
from cortex.core.model import Edge, Memory, MemoryType
from cortex.core.serial import dumps, format_time
from cortex.store.memory_rows import COLUMNS, memory_to_row
from cortex.store.port import Checkpoint, StoreStats, VectorIndex, VectorRebuild
from cortex.store.sqlite import checkpoint, codec, fts, migrations, vectors
from cortex.store.sqlite.codec import PLACEHOLDERS
from cortex.store.sqlite.records import Records
from cortex.store.sqlite.vector_store import drop_vectors

if TYPE_CHECKING:
    from cortex.core.write.similar import Text

log = logging.getLogger("cortex.store.sqlite")

# Journal ops that never change what a memory says nor bring one back into play.
QUIET_OPS = (
    "decay",
    "archive",
    "prune",
    "forget",
    "supersede",
    "access",
    "edge",
    "edge_delete",
    "usage_priority",
)


def journal_fingerprint(row: dict[str, Any]) -> str:
    """Identity of a journal record apart from its sequence number (import dedupes on it)."""
    text = dumps([row["at"], row["actor"], row["op"], row["memory_id"], row["payload"]])
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class Maintenance(Records):
    """Reads over the whole store and the writes that bypass the journal's usual path."""

    # -- whole-store reads ---------------------------------------------------------------
    def count_active(self) -> int:
        """Active memories in the store."""
        return int(self.conn.execute("SELECT count(*) FROM memories WHERE status = 'active'").fetchone()[0])

    def all_memories(self) -> list[Memory]:
        """Every memory whatever its status, by id."""
        return codec.read_memories(self.conn, f"SELECT {COLUMNS} FROM memories ORDER BY id")

    def state_digest(self) -> StateDigest:
        """The logical-state digest of the store (memories and edges)."""
        return digest_state(self.all_memories(), self.edges())

    def tick_candidates(
        self, cutoffs: dict[MemoryType, datetime], prune_before: datetime, floor: float
    ) -> list[Memory]:
        """The memories a tick could change: decaying ones old enough to move, low ones, and
        archived ones due for pruning. Pinned and lasting memories above the floor are skipped."""
        decaying = " OR ".join("(type = ? AND updated <= ?)" for _ in cutoffs)
        params: list[Any] = [v for t, at in cutoffs.items() for v in (t.value, format_time(at))]
        sql = (
            f"SELECT {COLUMNS} FROM memories WHERE "
            f"(status = 'active' AND (low_since IS NOT NULL OR confidence < ? "
            f"OR (pinned = 0 AND ({decaying or '0'})))) "
            "OR (status = 'archived' AND max(updated, coalesce(status_changed, ''), "
            "coalesce(last_accessed, '')) <= ?) ORDER BY n"
        )
        return codec.read_memories(self.conn, sql, (floor, *params, format_time(prune_before)))

    def active_texts(self) -> list[Text]:
        """(id, type, content) of every active memory: all that finding duplicates needs."""
        rows = self.conn.execute("SELECT id, type, content FROM memories WHERE status = 'active'")
        from cortex.core.write.similar import Text  # only consolidation needs it

        return [Text(r[0], r[1], r[2]) for r in rows]

    def word_rows(self, words: Sequence[str]) -> dict[str, Any]:
        """Row numbers of the memories (any status) holding each word, an integer array
        each: the text index's posting lists, so stems match too (a superset; see `WordSearch`)."""
        import numpy as np  # only consolidation asks

        sql = fts.holders_sql()
        out: dict[str, Any] = {}
        for w in words:
            joined = self.conn.execute(sql, (fts.quote(w),)).fetchone()[0] or ""
            out[w] = np.fromstring(joined, dtype=np.int64, sep=",")  # text mode: C speed
        return out

    def texts_at(self, rows: Sequence[int], types: Sequence[str]) -> list[Text]:
        """The active memories of `types` among these row numbers (`word_rows`'s)."""
        from cortex.core.write.similar import Text  # only consolidation needs it

        out: list[Text] = []
        for start in range(0, len(rows) if types else 0, codec.BATCH):
            chunk = list(rows[start : start + codec.BATCH])
            sql = (
                f"SELECT id, type, content FROM memories WHERE n IN ({codec.marks(chunk)}) "
                f"AND status = 'active' AND type IN ({codec.marks(types)})"
            )
            out += [Text(r[0], r[1], r[2]) for r in self.conn.execute(sql, (*chunk, *types))]
        return out

    def word_counts(self, words: Sequence[str], cap: int) -> dict[str, int]:
        """Memories holding each word (stems count), up to `cap`: the index's posting lists."""
        sql = fts.count_sql()
        return {w: int(self.conn.execute(sql, (fts.quote(w), cap)).fetchone()[0]) for w in words}

    def journal_seq(self) -> int:
        """The newest journal sequence number (0 when empty)."""
        return int(self.conn.execute("SELECT coalesce(max(seq), 0) FROM journal").fetchone()[0])

    def changed_ids(self, after_seq: int) -> set[str]:
        """Memories written, reworded or revived since journal record `after_seq`."""
        rows = self.conn.execute(
            "SELECT DISTINCT memory_id FROM journal WHERE seq > ? AND memory_id IS NOT NULL "
            f"AND op NOT IN ({codec.marks(QUIET_OPS)})",
            (after_seq, *QUIET_OPS),
        )
        return {r[0] for r in rows}

    # -- verbatim writes for import (the imported journal records describe them) ---------
    def import_memory(self, m: Memory) -> None:
        """Insert a memory whose history arrives with it; the caller journals."""
        self.conn.execute(f"INSERT INTO memories ({COLUMNS}) VALUES ({PLACEHOLDERS})", memory_to_row(m))

    def import_edge(self, e: Edge, at: datetime) -> bool:
        """Insert an edge unless one with its key exists (not journaled); True when inserted."""
        created = format_time(e.created or at)
        cur = self.conn.execute(
            "INSERT OR IGNORE INTO edges (source, target, type, strength, status, created, updated) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (e.source, e.target, e.type.value, e.strength, e.status.value, created, created),
        )
        return bool(cur.rowcount)

    def append_journal(self, rows: Iterable[dict[str, Any]]) -> int:
        """Copy journal records (at, actor, op, memory_id, payload) verbatim, skipping those the
        store already holds; returns how many were copied."""
        seen = {journal_fingerprint(r) for r in self.journal_rows()}
        n = 0
        for r in rows:
            if journal_fingerprint(r) in seen:
                continue
            self.conn.execute(
                "INSERT INTO journal (at, actor, op, memory_id, payload) VALUES (?, ?, ?, ?, ?)",
                (r["at"], r["actor"], r["op"], r["memory_id"], dumps(r["payload"])),
            )
            n += 1
        return n

    def rewrite_journal_payloads(self, payloads: dict[int, Any]) -> int:
        """Replace the payloads of these journal records (by seq) in place; how many changed.

        The one exception to an append-only journal: `cortex scrub` takes a secret out of
        history this way (and journals that it did)."""
        for seq, payload in payloads.items():
            self.conn.execute("UPDATE journal SET payload = ? WHERE seq = ?", (dumps(payload), seq))
        return len(payloads)

    def purge_free_space(self) -> None:
        """Rewrite the file without free pages and empty the WAL, so text overwritten or deleted
        is gone from the files on disk too (not only from the tables)."""
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.conn.execute("VACUUM")
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- derived indexes -----------------------------------------------------------------
    def vector_indexes(self) -> list[VectorIndex]:
        """Every vector index of the store (chunk indexes included), by name."""
        return [VectorIndex(*row) for row in vectors.list_indexes(self.conn)]

    def delete_vectors(self, ids: Sequence[str]) -> None:
        """Drop the vectors of these memories from every index (pruned memories leave search)."""
        if not ids:
            return
        drop_vectors(self.conn, list(codec.row_numbers(self.conn, list(ids)).values()))

    def rebuild_text_index(self) -> None:
        """Rebuild the keyword index from the memories table."""
        self.conn.execute(fts.REBUILD_SQL)

    def check_text_index(self) -> bool:
        """True when the keyword index agrees with the memories table."""
        try:
            self.conn.execute(fts.INTEGRITY_CHECK_SQL)
            return True
        except Exception:
            return False

    def rebuild_vector_index(self, index: VectorIndex, at: datetime) -> VectorRebuild:
        """Recreate one vector index holding only live, non-code memories, keeping their vectors."""
        wanted = vectors.embeddable_rows(self.conn)
        problem = None
        try:
            saved = {
                n: blob for n, blob in vectors.read_all_vectors(self.conn, index.name).items() if n in wanted
            }
        except Exception as exc:  # a damaged index: its memories wait for backfill
            log.warning("could not read %s while rebuilding: %s", index.name, exc)
            problem = f"{type(exc).__name__}: {exc}"
            saved = {}
        fresh = vectors.recreate_index(self.conn, index.name, index.embedder_key, index.dim, at)
        vectors.write_vectors(self.conn, fresh, sorted(saved.items()))
        return VectorRebuild(len(saved), len(wanted) - len(saved), problem)

    # -- the file ------------------------------------------------------------------------
    def stats(self) -> StoreStats:
        """Schema, edge and journal counts, size on disk (with -wal and -shm), oldest index."""
        row = self.conn.execute(
            "SELECT (SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM edges), "
            "(SELECT count(*) FROM journal), (SELECT name FROM vec_indexes ORDER BY created LIMIT 1)"
        ).fetchone()
        path = self.conn.path
        size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())
        return StoreStats(int(row[0]), int(row[1]), int(row[2]), size, row[3])

    def migrate(self) -> int:
        """Bring the schema up to date (after a restore from an older checkpoint); the version."""
        return migrations.migrate(self.conn)

    def write_checkpoint(self, *, reason: str, run: str, at: datetime) -> Checkpoint:
        """Save the store beside itself, with the digest of exactly what was saved."""
        return checkpoint.write_checkpoint(
            self.conn, reason=reason, run=run, at=at, digest=lambda: self.state_digest().digest
        )

    def restore_checkpoint(self, cp: Checkpoint) -> None:
        """Replace the store's content with a checkpoint's, in one atomic step."""
        checkpoint.restore_checkpoint(self.conn, cp)
        vectors.vector_matrix.note_written()  # the restore wrote through this very connection
