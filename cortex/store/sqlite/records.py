"""The rest of a store beside its memories: the journal, edges, transcript cursors and meta."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from cortex.core.model import Edge, EdgeStatus, EdgeType
from cortex.core.serial import dumps, edge_to_dict, format_time, parse_time
from cortex.store.port import CursorRow
from cortex.store.sqlite.codec import marks
from cortex.store.sqlite.connection import Connection


def write_journal(
    conn: Connection, actor: str, op: str, memory_id: str | None, payload: Any, at: datetime
) -> None:
    """Append one mutation record (inside the transaction that makes the mutation)."""
    conn.execute(
        "INSERT INTO journal (at, actor, op, memory_id, payload) VALUES (?, ?, ?, ?, ?)",
        (format_time(at), actor, op, memory_id, dumps(payload)),
    )


_IN_BATCH = 500  # ids per IN (...) list


class Records:
    """Journal, edges, cursors, read records and meta of one store."""

    conn: Connection

    # -- journal -------------------------------------------------------------------------
    def journal(self, actor: str, op: str, memory_id: str | None, payload: Any, at: datetime) -> None:
        """Append one mutation record; call inside the transaction that makes the mutation."""
        write_journal(self.conn, actor, op, memory_id, payload, at)

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
        self.journal(actor, "edge", e.source, edge_to_dict(replace(e, created=e.created or at)), at)

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
            where.append(f"(source IN ({marks(ids)}) OR target IN ({marks(ids)}))")
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

    def read_records(self, records: Collection[str]) -> set[str]:
        """Which of these transcript records (uuids) capture has read before: it took memories
        from them, or gave them to the LLM layer."""
        wanted = sorted(set(records))
        found: set[str] = set()
        for i in range(0, len(wanted), _IN_BATCH):
            batch = wanted[i : i + _IN_BATCH]
            sql = f"SELECT record FROM read_records WHERE record IN ({marks(batch)})"
            found.update(r[0] for r in self.conn.execute(sql, batch))
        return found

    def mark_read(self, records: Collection[str], at: datetime) -> None:
        """Record that capture took memories from these records, or gave them to the LLM layer
        (the first time is kept)."""
        self.conn.executemany(
            "INSERT INTO read_records (record, first_read) VALUES (?, ?) ON CONFLICT (record) DO NOTHING",
            [(r, format_time(at)) for r in sorted(set(records))],
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
