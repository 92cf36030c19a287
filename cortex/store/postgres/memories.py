"""The memories table of a PostgreSQL store: write, read, filter and keyword-search memories."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime

from cortex.core.model import Memory, Scope
from cortex.core.recall.query import TextQuery
from cortex.core.serial import format_time, memory_to_dict
from cortex.store.memory_rows import COLUMNS, memory_to_row
from cortex.store.port import LIVE
from cortex.store.postgres import codec, text_search, vectors
from cortex.store.postgres.codec import PLACEHOLDERS, SETS
from cortex.store.postgres.connection import Session
from cortex.store.postgres.records import write_journal


class MemoryTable:
    """Memory reads and writes; every write is journaled in the same transaction."""

    session: Session
    scope: Scope

    def insert_memory(self, m: Memory, actor: str, at: datetime, op: str = "insert") -> None:
        """Insert a memory and journal it."""
        with self.session.writing() as conn:
            conn.execute(f"INSERT INTO memories ({COLUMNS}) VALUES ({PLACEHOLDERS})", memory_to_row(m))
            write_journal(conn, actor, op, m.id, memory_to_dict(m), at)

    def update_memory(self, old: Memory, new: Memory, actor: str, at: datetime, op: str) -> None:
        """Write `new` over `old` (same id) and journal the changed fields."""
        before, after = memory_to_dict(old), memory_to_dict(new)
        changed = {k: after[k] for k in after if after[k] != before[k] and k != "centrality"}
        if not changed:
            return
        with self.session.writing() as conn:
            conn.execute(f"UPDATE memories SET {SETS} WHERE id = %s", (*memory_to_row(new)[1:], new.id))
            write_journal(conn, actor, op, new.id, changed, at)
            if "content" in changed or "type" in changed:  # what its vectors embed: they are stale
                vectors.drop(conn, list(vectors.row_numbers(conn, [new.id]).values()))

    def get(self, memory_id: str) -> Memory | None:
        """One memory by exact id, or None."""
        with self.session.reading() as conn:
            found = codec.read_memories(conn, f"SELECT {COLUMNS} FROM memories WHERE id = %s", (memory_id,))
        return found[0] if found else None

    def get_many(self, ids: Iterable[str]) -> dict[str, Memory]:
        """Memories by id (missing ids are absent from the result)."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        with self.session.reading() as conn:
            found = codec.read_memories(conn, f"SELECT {COLUMNS} FROM memories WHERE id = ANY(%s)", (wanted,))
        return {m.id: m for m in found}

    def find_prefix(self, prefix: str, limit: int = 5) -> list[Memory]:
        """Memories whose id starts with `prefix` (ids are hex)."""
        if not prefix or not all(c in "0123456789abcdef" for c in prefix.lower()):
            return []
        with self.session.reading() as conn:
            return codec.read_memories(
                conn,
                f"SELECT {COLUMNS} FROM memories WHERE id >= %s AND id < %s ORDER BY id LIMIT %s",
                (prefix.lower(), prefix.lower() + "g", limit),
            )

    def by_hash(self, content_hash: str) -> Memory | None:
        """The memory with this content hash, live ones first."""
        with self.session.reading() as conn:
            found = codec.read_memories(
                conn,
                f"SELECT {COLUMNS} FROM memories WHERE content_hash = %s "
                "ORDER BY status IN ('active', 'archived') DESC, created LIMIT 1",
                (content_hash,),
            )
        return found[0] if found else None

    def list_memories(
        self,
        statuses: Sequence[str] | None = LIVE,
        types: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[Memory]:
        """Memories filtered by status and type, newest first."""
        where: list[str] = []
        params: list[object] = []
        if statuses:
            where.append("status = ANY(%s)")
            params.append(list(statuses))
        if types:
            where.append("type = ANY(%s)")
            params.append(list(types))
        sql = f"SELECT {COLUMNS} FROM memories"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created DESC, id"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self.session.reading() as conn:
            return codec.read_memories(conn, sql, params)

    def counts(self) -> dict[str, dict[str, int]]:
        """Counts by status and, for active memories, by type."""
        with self.session.reading() as conn:
            by_status = {
                r[0]: int(r[1]) for r in conn.execute("SELECT status, count(*) FROM memories GROUP BY status")
            }
            by_type = {
                r[0]: int(r[1])
                for r in conn.execute(
                    "SELECT type, count(*) FROM memories WHERE status = 'active' GROUP BY type"
                )
            }
        return {"status": by_status, "type": by_type}

    def record_access(self, ids: Sequence[str], at: datetime, actor: str) -> None:
        """Count a recall of these memories (one journal record for the batch)."""
        if not ids:
            return
        with self.session.writing() as conn:
            conn.execute(
                "UPDATE memories SET access_count = access_count + 1, last_accessed = %s WHERE id = ANY(%s)",
                (format_time(at), list(ids)),
            )
            write_journal(conn, actor, "access", None, {"ids": list(ids)}, at)

    def search_text(
        self, query: TextQuery, limit: int, statuses: Sequence[str] = LIVE
    ) -> list[tuple[str, float]]:
        """(id, rank) best first; a larger rank is a better match."""
        text = text_search.query_text(query)
        if text is None:
            return []
        sql = text_search.search_sql("m.status = ANY(%s)")
        with self.session.reading() as conn:
            return [(r[0], float(r[1])) for r in conn.execute(sql, (text, list(statuses), limit))]

    def tagged(self, tag: str, types: Sequence[str]) -> list[Memory]:
        """Active and archived memories of these types carrying `tag`."""
        return self._by_tag(json.dumps(tag, ensure_ascii=False), "t = %s", tag, types)

    def tag_prefix(self, prefix: str, types: Sequence[str]) -> list[Memory]:
        """Active and archived memories of these types with a tag starting with `prefix`."""
        return self._by_tag(json.dumps(prefix, ensure_ascii=False)[:-1], "starts_with(t, %s)", prefix, types)

    def _by_tag(self, fragment: str, test: str, value: str, types: Sequence[str]) -> list[Memory]:
        # The LIKE filter (trigram-indexed) narrows the rows; the JSON test decides.
        sql = (
            f"SELECT {COLUMNS} FROM memories WHERE type = ANY(%s) AND status IN ('active', 'archived') "
            "AND tags LIKE %s AND EXISTS (SELECT 1 FROM jsonb_array_elements_text(tags::jsonb) t "
            f"WHERE {test}) ORDER BY n"
        )
        with self.session.reading() as conn:
            return codec.read_memories(conn, sql, (list(types), text_search.like_pattern(fragment), value))

    def active_ids(self) -> list[str]:
        """Ids of the active memories (the nodes centrality is computed over)."""
        with self.session.reading() as conn:
            return [r[0] for r in conn.execute("SELECT id FROM memories WHERE status = 'active'")]
