"""All SQL over one cortex store: memories, FTS5, edges, the journal, cursors and meta."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from cortex.core.model import Edge, EdgeStatus, EdgeType, Memory, MemoryType, Scope, Source, Status
from cortex.core.serial import dumps, format_time, memory_to_dict, parse_time
from cortex.errors import StoreError
from cortex.store.sqlite import connection as db
from cortex.store.sqlite import migrations

_COLUMNS = (
    "id, content, summary, type, scope, confidence, priority, pinned, source_session, "
    "source_offset, source_branch, source_commit, source_files, tags, access_count, "
    "last_accessed, created, updated, status, content_hash, low_since, status_changed, centrality"
)
_PLACEHOLDERS = ", ".join("?" * len(_COLUMNS.split(",")))
LIVE = (Status.ACTIVE.value,)


_TYPES = {t.value: t for t in MemoryType}
_SCOPES = {s.value: s for s in Scope}
_STATUSES = {s.value: s for s in Status}
_TIMES: dict[str, datetime] = {}  # timestamps repeat (created == updated): parse each text once


def _time(text: str | None) -> datetime | None:
    if not text:
        return None
    parsed = _TIMES.get(text)
    if parsed is None:
        parsed = parse_time(text)
        assert parsed is not None
        if len(_TIMES) > 100_000:
            _TIMES.clear()
        _TIMES[text] = parsed
    return parsed


def _strings(text: str | None) -> tuple[str, ...]:
    return () if not text or text == "[]" else tuple(json.loads(text))


def _row_to_memory(row: Sequence[Any]) -> Memory:
    # Recall turns a few hundred rows into Memory values per query: keep this loop lean.
    created = _time(row[16])
    updated = _time(row[17])
    assert created is not None and updated is not None
    return Memory(
        id=row[0],
        content=row[1],
        summary=row[2],
        type=_TYPES[row[3]],
        scope=_SCOPES[row[4]],
        confidence=float(row[5]),
        priority=int(row[6]),
        pinned=bool(row[7]),
        source=Source(row[8], row[9], row[10], row[11], _strings(row[12])),
        tags=_strings(row[13]),
        access_count=int(row[14]),
        last_accessed=_time(row[15]),
        created=created,
        updated=updated,
        status=_STATUSES[row[18]],
        content_hash=row[19],
        low_since=_time(row[20]),
        status_changed=_time(row[21]),
        centrality=float(row[22]),
    )


def _memory_to_row(m: Memory) -> tuple[Any, ...]:
    return (
        m.id,
        m.content,
        m.summary,
        m.type.value,
        m.scope.value,
        m.confidence,
        m.priority,
        int(m.pinned),
        m.source.session_id,
        m.source.transcript_offset,
        m.source.branch,
        m.source.commit,
        json.dumps(list(m.source.files), ensure_ascii=False),
        json.dumps(list(m.tags), ensure_ascii=False),
        m.access_count,
        format_time(m.last_accessed),
        format_time(m.created),
        format_time(m.updated),
        m.status.value,
        m.content_hash,
        format_time(m.low_since),
        format_time(m.status_changed),
        m.centrality,
    )


def _in(values: Sequence[Any]) -> str:
    return ", ".join("?" * len(values))


@dataclass(frozen=True, slots=True)
class CursorRow:
    """Where the worker stopped reading one session's transcript."""

    session_id: str
    transcript_path: str
    byte_offset: int
    last_uuid: str | None
    malformed: int
    closed: bool


class Store:
    """One SQLite store (project or global) and every query cortex runs on it."""

    def __init__(self, conn: db.Connection, scope: Scope) -> None:
        self.conn = conn
        self.scope = scope

    @property
    def path(self) -> Path:
        """The store file."""
        return self.conn.path

    @property
    def vectors(self) -> bool:
        """Whether sqlite-vec is loaded in this store's connection."""
        return self.conn.vectors

    @classmethod
    def open(cls, path: Path, scope: Scope, *, readonly: bool = False) -> Store:
        """Open (and migrate) a store; refuses corrupt or foreign files without writing to them."""
        conn = db.connect(path, readonly=readonly)
        try:
            # Identify the file before any pragma: switching a foreign database to WAL rewrites it.
            version = migrations.check_identity(conn)
            if readonly:
                if version != migrations.LATEST_VERSION:
                    raise StoreError(
                        f"{path} needs a schema upgrade but can only be opened read-only",
                        "make its directory writable and run `cortex status` once to upgrade it",
                    )
            else:
                db.apply_pragmas(conn)
                migrations.migrate(conn)
        except StoreError:
            conn.close()
            raise
        except Exception as exc:
            conn.close()
            raise db.translate(exc, path) from exc
        return cls(conn, scope)

    def close(self) -> None:
        """Close the store's connection."""
        self.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[Store]:
        """A short write transaction (BEGIN IMMEDIATE)."""
        with db.transaction(self.conn):
            yield self

    # -- journal -------------------------------------------------------------------------
    def journal(self, actor: str, op: str, memory_id: str | None, payload: Any, at: datetime) -> None:
        """Append one mutation record; call inside the transaction that makes the mutation."""
        self.conn.execute(
            "INSERT INTO journal (at, actor, op, memory_id, payload) VALUES (?, ?, ?, ?, ?)",
            (format_time(at), actor, op, memory_id, dumps(payload)),
        )

    def journal_rows(self, after_seq: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
        """Journal records after `after_seq`, oldest first."""
        sql = "SELECT seq, at, actor, op, memory_id, payload FROM journal WHERE seq > ? ORDER BY seq"
        params: list[Any] = [after_seq]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [
            {
                "seq": r[0],
                "at": r[1],
                "actor": r[2],
                "op": r[3],
                "memory_id": r[4],
                "payload": json.loads(r[5]),
            }
            for r in self.conn.execute(sql, params)
        ]

    # -- memories ------------------------------------------------------------------------
    def insert_memory(self, m: Memory, actor: str, at: datetime, op: str = "insert") -> int:
        """Insert a memory and journal it; returns its internal row number."""
        cur = self.conn.execute(
            f"INSERT INTO memories ({_COLUMNS}) VALUES ({_PLACEHOLDERS})", _memory_to_row(m)
        )
        self.journal(actor, op, m.id, memory_to_dict(m), at)
        return int(cur.lastrowid)

    def update_memory(self, old: Memory, new: Memory, actor: str, at: datetime, op: str) -> None:
        """Write `new` over `old` (same id) and journal the changed fields."""
        before, after = memory_to_dict(old), memory_to_dict(new)
        changed = {k: after[k] for k in after if after[k] != before[k] and k != "centrality"}
        if not changed:
            return
        sets = ", ".join(f"{c.strip()} = ?" for c in _COLUMNS.split(",")[1:])
        self.conn.execute(f"UPDATE memories SET {sets} WHERE id = ?", (*_memory_to_row(new)[1:], new.id))
        self.journal(actor, op, new.id, changed, at)

    def get(self, memory_id: str) -> Memory | None:
        """One memory by exact id, or None."""
        row = self.conn.execute(f"SELECT {_COLUMNS} FROM memories WHERE id = ?", (memory_id,)).fetchone()
        return _row_to_memory(row) if row else None

    def get_many(self, ids: Iterable[str]) -> dict[str, Memory]:
        """Memories by id (missing ids are absent from the result)."""
        ids = list(dict.fromkeys(ids))
        out: dict[str, Memory] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            for row in self.conn.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE id IN ({_in(chunk)})", chunk
            ):
                out[row[0]] = _row_to_memory(row)
        return out

    def find_prefix(self, prefix: str, limit: int = 5) -> list[Memory]:
        """Memories whose id starts with `prefix` (ids are hex, so no LIKE escaping is needed)."""
        if not prefix or not all(c in "0123456789abcdef" for c in prefix.lower()):
            return []
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
            (prefix.lower(), prefix.lower() + "g", limit),
        )
        return [_row_to_memory(r) for r in rows]

    def by_hash(self, content_hash: str) -> Memory | None:
        """The memory with this content hash, live ones first."""
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM memories WHERE content_hash = ? "
            "ORDER BY status IN ('active', 'archived') DESC, created LIMIT 1",
            (content_hash,),
        ).fetchone()
        return _row_to_memory(row) if row else None

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
            where.append(f"status IN ({_in(statuses)})")
            params.extend(statuses)
        if types:
            where.append(f"type IN ({_in(types)})")
            params.extend(types)
        sql = f"SELECT {_COLUMNS} FROM memories"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created DESC, id"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [_row_to_memory(r) for r in self.conn.execute(sql, params)]

    def counts(self) -> dict[str, dict[str, int]]:
        """Counts by status and, for active memories, by type."""
        by_status = dict(self.conn.execute("SELECT status, count(*) FROM memories GROUP BY status"))
        by_type = dict(
            self.conn.execute("SELECT type, count(*) FROM memories WHERE status = 'active' GROUP BY type")
        )
        return {"status": by_status, "type": by_type}

    def row_numbers(self, ids: Sequence[str]) -> dict[str, int]:
        """Internal row numbers (FTS/vec0 rowids) for memory ids."""
        out: dict[str, int] = {}
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            for mid, n in self.conn.execute(f"SELECT id, n FROM memories WHERE id IN ({_in(chunk)})", chunk):
                out[mid] = int(n)
        return out

    def ids_for_rows(self, rows: Sequence[int]) -> dict[int, tuple[str, str]]:
        """Row number -> (id, status)."""
        out: dict[int, tuple[str, str]] = {}
        for start in range(0, len(rows), 500):
            chunk = list(rows[start : start + 500])
            for n, mid, status in self.conn.execute(
                f"SELECT n, id, status FROM memories WHERE n IN ({_in(chunk)})", chunk
            ):
                out[int(n)] = (mid, status)
        return out

    def record_access(self, ids: Sequence[str], at: datetime, actor: str) -> None:
        """Count a recall of these memories (one journal record for the batch)."""
        if not ids:
            return
        self.conn.execute(
            f"UPDATE memories SET access_count = access_count + 1, last_accessed = ? "
            f"WHERE id IN ({_in(ids)})",
            (format_time(at), *ids),
        )
        self.journal(actor, "access", None, {"ids": list(ids)}, at)

    # -- full-text search ----------------------------------------------------------------
    def fts_search(self, match: str, limit: int, statuses: Sequence[str] = LIVE) -> list[tuple[str, float]]:
        """(id, bm25) best first; bm25 is negated so that larger is better."""
        rows = self.conn.execute(
            "SELECT m.id, bm25(memories_fts, 1.0, 0.6, 0.4) FROM memories_fts "
            "JOIN memories m ON m.n = memories_fts.rowid "
            f"WHERE memories_fts MATCH ? AND m.status IN ({_in(statuses)}) "
            "ORDER BY bm25(memories_fts, 1.0, 0.6, 0.4) LIMIT ?",
            (match, *statuses, limit),
        )
        return [(r[0], -float(r[1])) for r in rows]

    def rebuild_fts(self) -> None:
        """Rebuild the FTS5 index from the memories table."""
        self.conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")

    # -- edges ---------------------------------------------------------------------------
    def upsert_edge(self, e: Edge, actor: str, at: datetime) -> None:
        """Insert or update an edge (unique per source, target, type) and journal it."""
        self.conn.execute(
            "INSERT INTO edges (source, target, type, strength, status, created, updated) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (source, target, type) DO UPDATE SET "
            "strength = excluded.strength, status = excluded.status, updated = excluded.updated",
            (
                e.source,
                e.target,
                e.type.value,
                e.strength,
                e.status.value,
                format_time(e.created or at),
                format_time(at),
            ),
        )
        self.journal(
            actor,
            "edge",
            e.source,
            {
                "source": e.source,
                "target": e.target,
                "type": e.type.value,
                "strength": e.strength,
                "status": e.status.value,
            },
            at,
        )

    def delete_edge(self, source: str, target: str, etype: str, actor: str, at: datetime) -> None:
        """Remove one edge and journal it."""
        self.conn.execute(
            "DELETE FROM edges WHERE source = ? AND target = ? AND type = ?",
            (source, target, etype),
        )
        self.journal(actor, "edge_delete", source, {"source": source, "target": target, "type": etype}, at)

    def edges(self, ids: Sequence[str] | None = None, status: str | None = None) -> list[Edge]:
        """Edges touching `ids` (either end), or all edges when `ids` is None."""
        sql = "SELECT source, target, type, strength, status, created FROM edges"
        where: list[str] = []
        params: list[Any] = []
        if ids is not None:
            if not ids:
                return []
            where.append(f"(source IN ({_in(ids)}) OR target IN ({_in(ids)}))")
            params.extend([*ids, *ids])
        if status is not None:
            where.append("status = ?")
            params.append(status)
        if where:
            sql += " WHERE " + " AND ".join(where)
        return [
            Edge(r[0], r[1], EdgeType(r[2]), float(r[3]), EdgeStatus(r[4]), parse_time(r[5]))
            for r in self.conn.execute(sql + " ORDER BY source, target, type", params)
        ]

    def write_centrality(self, scores: dict[str, float]) -> None:
        """Store derived centrality (not journaled: it is rebuilt from edges)."""
        self.conn.execute("UPDATE memories SET centrality = 0 WHERE centrality != 0")
        self.conn.executemany(
            "UPDATE memories SET centrality = ? WHERE id = ?",
            [(v, k) for k, v in scores.items() if v],
        )

    # -- cursors and meta ----------------------------------------------------------------
    def read_cursor(self, session_id: str) -> CursorRow | None:
        """The transcript cursor of a session, if any."""
        row = self.conn.execute(
            "SELECT session_id, transcript_path, byte_offset, last_uuid, malformed, closed "
            "FROM cursors WHERE session_id = ?",
            (session_id,),
        ).fetchone()
        return CursorRow(row[0], row[1], int(row[2]), row[3], int(row[4]), bool(row[5])) if row else None

    def write_cursor(self, c: CursorRow, at: datetime) -> None:
        """Insert or replace a session's transcript cursor."""
        self.conn.execute(
            "INSERT INTO cursors (session_id, transcript_path, byte_offset, last_uuid, malformed, "
            "closed, updated) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET "
            "transcript_path = excluded.transcript_path, byte_offset = excluded.byte_offset, "
            "last_uuid = excluded.last_uuid, malformed = excluded.malformed, "
            "closed = excluded.closed, updated = excluded.updated",
            (
                c.session_id,
                c.transcript_path,
                c.byte_offset,
                c.last_uuid,
                c.malformed,
                int(c.closed),
                format_time(at),
            ),
        )

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        """A value from the meta table, or `default`."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        """Insert or replace a value in the meta table."""
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )
