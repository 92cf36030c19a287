"""Code anchors of memories (schema 4): what each memory saw of the files and symbols it names."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from cortex.core.serial import format_time, parse_time
from cortex.store.sqlite.connection import Connection

if TYPE_CHECKING:  # every store open imports this module: the class loads when rows do
    from cortex.core.code.anchors import Anchor

SCHEMA_4 = (
    "CREATE TABLE anchors (memory_id TEXT NOT NULL, path TEXT NOT NULL, symbol TEXT NOT NULL, "
    "hash TEXT NOT NULL, commit_sha TEXT, at TEXT NOT NULL, flagged TEXT, blob TEXT, "
    "PRIMARY KEY (memory_id, path, symbol)) WITHOUT ROWID",
    "CREATE INDEX anchors_path ON anchors(path)",
)
_COLUMNS = "memory_id, path, symbol, hash, commit_sha, at, flagged, blob"
_CHUNK = 500  # ids per IN (...) list


def _anchor(row: Sequence[str | None]) -> tuple[str, Anchor]:
    from cortex.core.code.anchors import Anchor

    at = parse_time(row[5])
    assert at is not None
    return str(row[0]), Anchor(str(row[1]), str(row[2]), str(row[3]), row[4], at, row[6], row[7])


class AnchorRows:
    """The anchors table of one store."""

    conn: Connection

    def write_anchors(self, memory_id: str, anchors: Sequence[Anchor]) -> None:
        """Replace the anchors of one memory (none: it names no code now)."""
        self.conn.execute("DELETE FROM anchors WHERE memory_id = ?", (memory_id,))
        self.conn.executemany(
            f"INSERT OR REPLACE INTO anchors ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (memory_id, a.path, a.symbol, a.hash, a.commit, format_time(a.at), a.flagged, a.blob)
                for a in anchors
            ],
        )

    def read_anchors(self, ids: Iterable[str] | None = None) -> dict[str, list[Anchor]]:
        """Anchors by memory id: of `ids` (any status), or of every active memory."""
        out: dict[str, list[Anchor]] = {}
        if ids is None:
            rows = self.conn.execute(
                f"SELECT {', '.join('a.' + c.strip() for c in _COLUMNS.split(','))} FROM anchors a "
                "JOIN memories m ON m.id = a.memory_id WHERE m.status = 'active' "
                "ORDER BY a.memory_id, a.path, a.symbol"
            ).fetchall()
        else:
            wanted = sorted(set(ids))
            rows = []
            for i in range(0, len(wanted), _CHUNK):
                chunk = wanted[i : i + _CHUNK]
                rows += self.conn.execute(
                    f"SELECT {_COLUMNS} FROM anchors WHERE memory_id IN ({','.join('?' * len(chunk))}) "
                    "ORDER BY memory_id, path, symbol",
                    chunk,
                ).fetchall()
        for row in rows:
            mid, anchor = _anchor(row)
            out.setdefault(mid, []).append(anchor)
        return out

    def anchored_paths(self) -> list[str]:
        """Every path an anchor names (of any memory), once each."""
        return [r[0] for r in self.conn.execute("SELECT DISTINCT path FROM anchors ORDER BY path")]

    def read_moved_anchors(self, blobs: Mapping[str, str | None]) -> dict[str, list[Anchor]]:
        """Anchors of active memories on the paths of `blobs` whose file is not the blob given
        there (None: not a file now): the only ones a check must look at."""
        cols = ", ".join("a." + c.strip() for c in _COLUMNS.split(","))
        rows = self.conn.execute(
            f"SELECT {cols} FROM json_each(?) cur JOIN anchors a ON a.path = cur.key "
            "JOIN memories m ON m.id = a.memory_id WHERE m.status = 'active' AND (cur.value IS NULL "
            "OR coalesce(a.blob, CASE WHEN a.symbol = '' THEN a.hash END) IS NOT cur.value) "
            "ORDER BY a.memory_id, a.path, a.symbol",
            (json.dumps(dict(blobs)),),
        ).fetchall()
        out: dict[str, list[Anchor]] = {}
        for row in rows:
            mid, anchor = _anchor(row)
            out.setdefault(mid, []).append(anchor)
        return out

    def flag_anchors(self, memory_id: str, anchors: Sequence[Anchor], head: str) -> None:
        """Record that these anchors of a memory were found changed at `head`."""
        self.conn.executemany(
            "UPDATE anchors SET flagged = ? WHERE memory_id = ? AND path = ? AND symbol = ?",
            [(head, memory_id, a.path, a.symbol) for a in anchors],
        )
