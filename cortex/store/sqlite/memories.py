"""The memories table of a store: write, read, filter and keyword-search memories."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from cortex.core.model import Memory, Scope
from cortex.core.recall.query import TextQuery
from cortex.core.serial import format_time, memory_to_dict
from cortex.store.memory_rows import COLUMNS, memory_to_row
from cortex.store.port import LIVE
from cortex.store.sqlite import codec, fts
from cortex.store.sqlite.codec import PLACEHOLDERS, marks
from cortex.store.sqlite.connection import Connection
from cortex.store.sqlite.records import write_journal
from cortex.store.sqlite.vector_store import carry_pending, drop_vectors, pending_version

# Not live, as ranges of the status index (`status NOT IN (...)` walks every row, and without
# INDEXED BY SQLite walks every row in order of creation instead).
_NOT_LIVE = (
    "INDEXED BY memories_status_type WHERE "
    "(status < 'active' OR (status > 'active' AND status < 'archived') OR status > 'archived')"
)
TOP_OVERFETCH = 4  # keyword search: rows ranked by the index alone per result wanted
SCORE_ALL_MAX = 5_000  # keyword matches always ranked in full; beyond, rows holding every word first
SCORED_MAX = 5_000  # rows scored per keyword query at most: of more matches, the newest ...
SCORED_ALL_UNDER = 50_000  # ... in a store of this many memories or more (below, every match)
_NAMES = [c.strip() for c in COLUMNS.split(",")]
_INDEXED = ("content", "summary", "tags")  # the keyword index's columns (`fts.SCHEMA_1`)


class MemoryTable:
    """Memory reads and writes; every write is journaled in the same transaction."""

    conn: Connection
    scope: Scope

    def insert_memory(self, m: Memory, actor: str, at: datetime, op: str = "insert") -> None:
        """Insert a memory and journal it."""
        self.conn.execute(f"INSERT INTO memories ({COLUMNS}) VALUES ({PLACEHOLDERS})", memory_to_row(m))
        write_journal(self.conn, actor, op, m.id, memory_to_dict(m), at)

    def update_memory(self, old: Memory, new: Memory, actor: str, at: datetime, op: str) -> None:
        """Write `new` over `old` (same id) and journal the changed fields."""
        before, after = memory_to_dict(old), memory_to_dict(new)
        changed = {k: after[k] for k in after if after[k] != before[k] and k != "centrality"}
        if not changed:
            return
        # The keyword index's columns are set only when they change: setting one re-indexes the
        # row (its trigger fires on any SET of them), and that index write lands at commit.
        old_row, new_row = memory_to_row(old), memory_to_row(new)
        kept = [i for i in range(1, len(_NAMES)) if _NAMES[i] not in _INDEXED or old_row[i] != new_row[i]]
        sets = ", ".join(f"{_NAMES[i]} = ?" for i in kept)
        held = pending_version(self.conn)
        self.conn.execute(f"UPDATE memories SET {sets} WHERE id = ?", (*(new_row[i] for i in kept), new.id))
        write_journal(self.conn, actor, op, new.id, changed, at)
        if "content" in changed or "type" in changed:  # what its vectors embed: they are stale
            drop_vectors(self.conn, list(codec.row_numbers(self.conn, [new.id]).values()))
        elif _embeddable(before) == _embeddable(after):  # e.g. recall restoring an archived memory
            carry_pending(self.conn, held)

    def get(self, memory_id: str) -> Memory | None:
        """One memory by exact id, or None."""
        found = codec.read_memories(self.conn, f"SELECT {COLUMNS} FROM memories WHERE id = ?", (memory_id,))
        return found[0] if found else None

    def get_many(self, ids: Iterable[str]) -> dict[str, Memory]:
        """Memories by id (missing ids are absent from the result)."""
        ids = list(dict.fromkeys(ids))
        out: dict[str, Memory] = {}
        for start in range(0, len(ids), codec.BATCH):
            chunk = ids[start : start + codec.BATCH]
            sql = f"SELECT {COLUMNS} FROM memories WHERE id IN ({marks(chunk)})"
            out.update((m.id, m) for m in codec.read_memories(self.conn, sql, chunk))
        return out

    def find_prefix(self, prefix: str, limit: int = 5) -> list[Memory]:
        """Memories whose id starts with `prefix` (ids are hex, so no LIKE escaping is needed)."""
        if not prefix or not all(c in "0123456789abcdef" for c in prefix.lower()):
            return []
        return codec.read_memories(
            self.conn,
            f"SELECT {COLUMNS} FROM memories WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
            (prefix.lower(), prefix.lower() + "g", limit),
        )

    def by_hash(self, content_hash: str) -> Memory | None:
        """The memory with this content hash, live ones first: a live one through the index of
        live hashes, else the oldest of the others through the status index, among the memories
        that are not live only (a walk of every memory took ~1 s at 1,000,000, per candidate)."""
        for where in ("WHERE status IN ('active', 'archived')", _NOT_LIVE):
            found = codec.read_memories(
                self.conn,
                f"SELECT {COLUMNS} FROM memories {where} AND content_hash = ? ORDER BY created LIMIT 1",
                (content_hash,),
            )
            if found:
                return found[0]
        return None

    def list_memories(
        self,
        statuses: Sequence[str] | None = LIVE,
        types: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[Memory]:
        """Memories filtered by status and type, newest first."""
        where: list[str] = []
        params: list[Any] = []
        if statuses:
            where.append(f"status IN ({marks(statuses)})")
            params.extend(statuses)
        if types:
            where.append(f"type IN ({marks(types)})")
            params.extend(types)
        sql = f"SELECT {COLUMNS} FROM memories"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created DESC, id"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return codec.read_memories(self.conn, sql, params)

    def counts(self) -> dict[str, dict[str, int]]:
        """Counts by status and, for active memories, by type."""
        by_status = dict(self.conn.execute("SELECT status, count(*) FROM memories GROUP BY status"))
        by_type = dict(
            self.conn.execute("SELECT type, count(*) FROM memories WHERE status = 'active' GROUP BY type")
        )
        return {"status": by_status, "type": by_type}

    def row_numbers(self, ids: Sequence[str]) -> dict[str, int]:
        """Internal row numbers (FTS5 and vec0 rowids) for memory ids."""
        return codec.row_numbers(self.conn, ids)

    def ids_for_rows(self, rows: Sequence[int]) -> dict[int, tuple[str, str]]:
        """Row number -> (id, status)."""
        return codec.ids_for_rows(self.conn, rows)

    def record_access(self, ids: Sequence[str], at: datetime, actor: str) -> None:
        """Count a recall of these memories (one journal record for the batch)."""
        if not ids:
            return
        before = pending_version(self.conn)
        self.conn.execute(
            "UPDATE memories SET access_count = access_count + 1, last_accessed = ? "
            f"WHERE id IN ({marks(ids)})",
            (format_time(at), *ids),
        )
        write_journal(self.conn, actor, "access", None, {"ids": list(ids)}, at)
        carry_pending(self.conn, before)  # no memory joined or left the embedding queue

    def search_text(
        self, query: TextQuery, limit: int, statuses: Sequence[str] = LIVE
    ) -> list[tuple[str, float]]:
        """(id, bm25) best first; bm25 is negated so that larger is better."""
        match = fts.match_text(query)
        if match is None:
            return []
        # The index ranks on its own first; the memories of its best rows are then checked for
        # status. Only when too few of those qualify does the ranking join the matches. In a large
        # store no query scores more than the newest `SCORED_MAX` matching rows (a common word
        # matches ~200,000 rows at 1,000,000 memories: ~0.5 s to score them all).
        fetch = limit * TOP_OVERFETCH
        window = max(SCORED_MAX, fetch) if _size(self.conn) >= SCORED_ALL_UNDER else -1  # -1: no limit
        every = _every_word_first(self.conn, query, match, fetch, limit, window)
        top = (
            every
            if every is not None
            else self.conn.execute(fts.top_sql(), (match, window, fetch)).fetchall()
        )
        if not top:
            return []
        # Most rows qualify: the best few are looked up first, the rest only when they fall short.
        rows = codec.ids_for_rows(self.conn, [n for n, _ in top[: limit + limit // 4]])
        allowed = set(statuses)
        if sum(1 for mid, status in rows.values() if status in allowed) < limit:
            rows.update(codec.ids_for_rows(self.conn, [n for n, _ in top[limit + limit // 4 :]]))
        kept = [(rows[n][0], -float(score)) for n, score in top if n in rows and rows[n][1] in allowed]
        if len(kept) >= limit or (len(top) < fetch and every is None):  # enough, or every match seen
            return kept[:limit]
        sql = fts.newest_search_sql("m.id", f"m.status IN ({marks(statuses)})")
        return [(r[0], -float(r[1])) for r in self.conn.execute(sql, (match, window, *statuses, limit))]

    def tagged(self, tag: str, types: Sequence[str]) -> list[Memory]:
        """Active and archived memories of these types carrying `tag`."""
        exact = "EXISTS (SELECT 1 FROM json_each(m.tags) WHERE value = ?)"
        words = tag if _indexed_tag(tag) else None
        return self._tagged(words, json.dumps(tag, ensure_ascii=False), exact, (tag,), types)

    def tag_prefix(self, prefix: str, types: Sequence[str]) -> list[Memory]:
        """Active and archived memories of these types with a tag starting with `prefix`."""
        exact = "EXISTS (SELECT 1 FROM json_each(m.tags) WHERE substr(value, 1, ?) = ?)"
        # Its words are whole only when it ends between words ("state:"): the index then holds them.
        words = prefix if _indexed_tag(prefix) and not prefix[-1].isalnum() else None
        return self._tagged(
            words, json.dumps(prefix, ensure_ascii=False)[:-1], exact, (len(prefix), prefix), types
        )

    def _tagged(
        self, words: str | None, text: str, exact: str, params: tuple[Any, ...], types: Sequence[str]
    ) -> list[Memory]:
        """Live memories of `types` whose tags pass `exact`: found through the keyword index's
        tags column when `words` is set (the rows holding those words, a superset), so a turn
        costs what the tag holds and not a walk of every memory of these types (~1 s each at
        1,000,000 memories); else by that walk, a cheap text filter first."""
        columns = ", ".join("m." + c for c in _NAMES)
        live = f"+m.type IN ({marks(types)}) AND +m.status IN ('active', 'archived')"
        if words is not None:
            sql = f"SELECT {columns} FROM memories m WHERE m.n IN ({fts.tag_rows_sql()}) AND {live}"
            head: tuple[Any, ...] = (fts.match_tag(words),)
        else:
            sql = f"SELECT {columns} FROM memories m WHERE {live.replace('+', '')} AND instr(m.tags, ?) > 0"
            head, params = (), (text, *params)
        return codec.read_memories(self.conn, f"{sql} AND {exact} ORDER BY m.n", (*head, *types, *params))

    def active_ids(self) -> list[str]:
        """Ids of the active memories (the nodes centrality is computed over)."""
        return [r[0] for r in self.conn.execute("SELECT id FROM memories WHERE status = 'active'")]


def _size(conn: Connection) -> int:
    """The highest memory row number: the store's size, give or take, from one index lookup."""
    return int(conn.execute("SELECT coalesce(max(n), 0) FROM memories").fetchone()[0])


def _embeddable(fields: dict[str, Any]) -> bool:
    """Whether a memory belongs in a vector index (`vectors.EMBEDDABLE`, on its serial form)."""
    return fields["status"] in ("active", "archived") and fields["type"] != "code"


def _indexed_tag(tag: str) -> bool:
    """Whether the keyword index finds every memory carrying `tag` by its words (plain ASCII
    with a word in it: the index folds case and splits at every other character)."""
    return tag.isascii() and any(c.isalnum() for c in tag)


def _every_word_first(
    conn: Connection, query: TextQuery, match: str, fetch: int, least: int, window: int
) -> list[Any] | None:
    """The best `fetch` (row, bm25) of the rows holding every term that matches anything (of
    the newest `window` of them), when more than `SCORE_ALL_MAX` rows match the query and at
    least `least` hold every such term; else None (rank every match).

    FTS5's BM25 is a sum over the query's terms, each scored on its own row by row, so these
    rows get the very scores the whole query gives them (a term no row holds adds nothing),
    and ranking them skips scoring the many rows that hold only some of the words: common words
    at 100,000 memories match ~20,000 rows (~1.7 us of scoring each). Approximate: a row
    missing a word may outrank one holding them all. On the latency benchmark's 16 queries at
    100,000 memories the best 50 were those of the full ranking, in its order (9 of the 16 take
    this path); below `SCORE_ALL_MAX` matches nothing changes. Fewer than `fetch` rows (but at
    least the `least` wanted) are all there is of them: the caller ranks every match when too
    few of them have a status it wants. They are counted before any is scored: BM25 reads every
    row of each term once per query to weigh it (~0.07 us a row), so a query scored twice pays
    that twice.
    """
    if query.match_all or len(query.terms) < 2:
        return None
    if conn.execute(fts.count_sql(), (match, SCORE_ALL_MAX + 1)).fetchone()[0] <= SCORE_ALL_MAX:
        return None
    present = tuple(
        term
        for term in query.terms
        if conn.execute(fts.count_sql(), (fts.match_text(replace(query, terms=(term,))), 1)).fetchone()[0]
    )
    every = fts.match_text(replace(query, terms=present, match_all=True)) if len(present) > 1 else None
    if every is None or conn.execute(fts.count_sql(), (every, max(least, 1))).fetchone()[0] < max(least, 1):
        return None
    return conn.execute(fts.top_sql(), (every, window, fetch)).fetchall()
