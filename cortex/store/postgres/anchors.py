"""Code anchors of memories (schema 2 here, SQLite's 4): what each memory saw of the files and
symbols it names, as in `cortex.store.sqlite.anchors`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cortex.core.serial import format_time, parse_time
from cortex.store.postgres.connection import Session

if TYPE_CHECKING:  # every store open imports this module: the class loads when rows do
    from cortex.core.code.anchors import Anchor

T = 'TEXT COLLATE "C"'
SCHEMA = (
    f"CREATE TABLE anchors (memory_id {T} NOT NULL, path {T} NOT NULL, symbol {T} NOT NULL, "
    f"hash TEXT NOT NULL, commit_sha TEXT, at {T} NOT NULL, flagged TEXT, blob TEXT, "
    "PRIMARY KEY (memory_id, path, symbol))",
    "CREATE INDEX anchors_path ON anchors(path)",
)
_COLUMNS = "memory_id, path, symbol, hash, commit_sha, at, flagged, blob"


def _anchor(row: Sequence[Any]) -> tuple[str, Anchor]:
    from cortex.core.code.anchors import Anchor

    at = parse_time(row[5])
    assert at is not None
    return str(row[0]), Anchor(str(row[1]), str(row[2]), str(row[3]), row[4], at, row[6], row[7])


class AnchorRows:
    """The anchors table of one store."""

    session: Session

    def write_anchors(self, memory_id: str, anchors: Sequence[Anchor]) -> None:
        """Replace the anchors of one memory (none: it names no code now)."""
        with self.session.writing() as conn:
            conn.execute("DELETE FROM anchors WHERE memory_id = %s", (memory_id,))
            for a in {(a.path, a.symbol): a for a in anchors}.values():
                conn.execute(
                    f"INSERT INTO anchors ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                    (memory_id, a.path, a.symbol, a.hash, a.commit, format_time(a.at), a.flagged, a.blob),
                )

    def read_anchors(self, ids: Iterable[str] | None = None) -> dict[str, list[Anchor]]:
        """Anchors by memory id: of `ids` (any status), or of every active memory."""
        with self.session.reading() as conn:
            if ids is None:
                cols = ", ".join("a." + c.strip() for c in _COLUMNS.split(","))
                rows = conn.execute(
                    f"SELECT {cols} FROM anchors a JOIN memories m ON m.id = a.memory_id "
                    "WHERE m.status = 'active' ORDER BY a.memory_id, a.path, a.symbol"
                ).fetchall()
            else:
                rows = conn.execute(
                    f"SELECT {_COLUMNS} FROM anchors WHERE memory_id = ANY(%s) "
                    "ORDER BY memory_id, path, symbol",
                    (sorted(set(ids)),),
                ).fetchall()
        out: dict[str, list[Anchor]] = {}
        for row in rows:
            mid, anchor = _anchor(row)
            out.setdefault(mid, []).append(anchor)
        return out

    def anchored_paths(self) -> list[str]:
        """Every path an anchor names (of any memory), once each."""
        with self.session.reading() as conn:
            return [r[0] for r in conn.execute("SELECT DISTINCT path FROM anchors ORDER BY path")]

    def read_moved_anchors(self, blobs: Mapping[str, str | None]) -> dict[str, list[Anchor]]:
        """Anchors of active memories on the paths of `blobs` whose file is not the blob given
        there (None: not a file now): the only ones a check must look at."""
        cols = ", ".join("a." + c.strip() for c in _COLUMNS.split(","))
        paths = list(blobs)
        with self.session.reading() as conn:
            rows = conn.execute(
                f"SELECT {cols} FROM unnest(%s::text[], %s::text[]) AS cur(path, blob) "
                'JOIN anchors a ON a.path = cur.path COLLATE "C" JOIN memories m ON m.id = a.memory_id '
                "WHERE m.status = 'active' AND (cur.blob IS NULL OR coalesce(a.blob, "
                "CASE WHEN a.symbol = '' THEN a.hash END) IS DISTINCT FROM cur.blob) "
                "ORDER BY a.memory_id, a.path, a.symbol",
                (paths, [blobs[p] for p in paths]),
            ).fetchall()
        out: dict[str, list[Anchor]] = {}
        for row in rows:
            mid, anchor = _anchor(row)
            out.setdefault(mid, []).append(anchor)
        return out

    def flag_anchors(self, memory_id: str, anchors: Sequence[Anchor], head: str) -> None:
        """Record that these anchors of a memory were found changed at `head`."""
        with self.session.writing() as conn:
            for a in anchors:
                conn.execute(
                    "UPDATE anchors SET flagged = %s WHERE memory_id = %s AND path = %s AND symbol = %s",
                    (head, memory_id, a.path, a.symbol),
                )
