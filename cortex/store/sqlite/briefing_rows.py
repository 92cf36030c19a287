"""The briefing's reads by index: memories best first by the rank key or by access, counts, the
newest session, notes by tag and by file; the rank-key indexes and file table of schema 2.

A briefing shows the top few memories of each type. These reads walk indexes in rank order, so
rendering one costs about what it shows, not what the store holds (`cortex.briefing.gather`).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from cortex.core.model import Memory, MemoryType
from cortex.store.memory_rows import COLUMNS, row_to_memory
from cortex.store.port import ACCESS_LEVELS, RankBand
from cortex.store.sqlite import codec, fts
from cortex.store.sqlite.codec import marks
from cortex.store.sqlite.connection import Connection

# The part of the briefing rank that depends on a memory alone, with the default weights
# (`cortex.store.port.RANK_KEY_WEIGHTS`); an index orders memories by it. Never edit: the index
# of schema 2 is built on this exact text, and a query must repeat it to use that index.
RANK_KEY = (
    "(0.5 * min(max(confidence, 0.0), 1.0) + 0.2 * min(max(priority / 10.0, 0.0), 1.0)"
    " + 0.15 * min(max(centrality, 0.0), 1.0))"
)
_LIVE = "(new.status = 'active' AND new.scope = 'project' AND new.type != 'code')"
_FILES_OF_NEW = (
    f"INSERT OR IGNORE INTO memory_files (path, n, live) SELECT value, new.n, {_LIVE} "
    "FROM json_each(new.source_files);"
)
SCHEMA_2 = (
    f"CREATE INDEX memories_rank ON memories(status, type, pinned, access_count, {RANK_KEY})",
    "CREATE INDEX memories_session ON memories(source_session)",
    "CREATE INDEX memories_branch ON memories(status, type, pinned, source_branch)",
    # Which memories name which file, and whether the memory is one the briefing may flag stale
    # (active, project, not raw code): the briefing checks each distinct path once at HEAD.
    "CREATE TABLE memory_files (path TEXT NOT NULL, n INTEGER NOT NULL, live INTEGER NOT NULL, "
    "PRIMARY KEY (path, n)) WITHOUT ROWID",
    "CREATE INDEX memory_files_live ON memory_files(live, n, path)",
    "CREATE INDEX memory_files_n ON memory_files(n)",
    f"""CREATE TRIGGER memory_files_ai AFTER INSERT ON memories BEGIN
        {_FILES_OF_NEW}
    END""",
    """CREATE TRIGGER memory_files_ad AFTER DELETE ON memories BEGIN
        DELETE FROM memory_files WHERE n = old.n;
    END""",
    f"""CREATE TRIGGER memory_files_au AFTER UPDATE OF source_files, status, scope, type ON memories BEGIN
        DELETE FROM memory_files WHERE n = old.n;
        {_FILES_OF_NEW}
    END""",
    "INSERT OR IGNORE INTO memory_files (path, n, live) SELECT j.value, m.n, "
    f"{_LIVE.replace('new.', 'm.')} FROM memories m, json_each(m.source_files) j",
)
NEXT_PATH_SQL = "SELECT min(path) FROM memory_files WHERE path > ?"


class BriefingRows:
    """Index reads and small aggregates for the briefing render."""

    conn: Connection

    def brief_band(
        self, type_: str, pinned: bool, band: RankBand, known: Mapping[str, Memory], limit: int
    ) -> tuple[list[Memory], float]:
        """Active memories of one type, pinned or not, whose rank may lie in the band, and the
        rank down to which they were read: `band.low`, or where ranks crowd, the rank of the
        `limit`-th best below what an earlier band up to `band.high` read (its equals with it):
        a band never reads every row of a crowded range. Ranks come from the rank index and
        the rows' branches (for each access count below `ACCESS_LEVELS` one seek, one for the
        rest); only the memories kept are read, those in `known` (by id) not even those."""
        sql, params = _band_sql(self.conn, "n, id", type_, pinned, band, band.high + _SQL_SLACK)
        rows = self.conn.execute(f"SELECT n, id, r FROM ({sql}) ORDER BY r DESC", params).fetchall()
        top = band.high - 2 * _SQL_SLACK  # the earlier band read everything above it
        fresh = [r for _, _, r in rows if r < top]
        floor = max(band.low, float(fresh[limit - 1])) if 0 < limit <= len(fresh) else band.low
        kept = [(n, mid) for n, mid, r in rows if r >= floor - _SQL_SLACK]
        out = [known[mid] for _, mid in kept if mid in known]
        unread = [n for n, mid in kept if mid not in known]
        for start in range(0, len(unread), codec.BATCH):
            chunk = unread[start : start + codec.BATCH]
            out += codec.read_memories(
                self.conn, f"SELECT {COLUMNS} FROM memories WHERE n IN ({marks(chunk)})", chunk
            )
        return out, floor

    def brief_top(self, type_: str, pinned: bool, band: RankBand) -> float | None:
        """A rank no active memory of the type, pinned or not, exceeds (its best key and access
        shares plus the boost), or None when there is none: one seek per access count."""
        levels = ", ".join("(?)" for _ in range(ACCESS_LEVELS))
        row = self.conn.execute(
            f"WITH levels(a) AS (VALUES {levels}) SELECT max(best) FROM ("
            f"SELECT ? * (SELECT max({RANK_KEY}) FROM memories WHERE status = 'active' AND type = ? "
            "AND pinned = ? AND access_count = levels.a) + ? * ln(levels.a + 1) AS best FROM levels "
            f"UNION ALL SELECT ? * max({RANK_KEY}) + ? FROM memories WHERE status = 'active' AND type = ? "
            "AND pinned = ? AND access_count >= ?)",
            (
                *range(ACCESS_LEVELS),
                band.key_scale,
                type_,
                int(pinned),
                band.access_scale,
                band.key_scale,
                band.access_cap,
                type_,
                int(pinned),
                ACCESS_LEVELS,
            ),
        ).fetchone()
        return None if row is None or row[0] is None else float(row[0]) + band.boost + _SQL_SLACK

    def brief_by_access(
        self, type_: str, pinned: bool, limit: int, below: tuple[int, int] | None = None
    ) -> list[tuple[int, int, Memory]]:
        """Active memories of one type, pinned or not, as (access count, row number, memory),
        most accessed first (then by row number, descending), after `below` when given."""
        where = "status = 'active' AND type = ? AND pinned = ?"
        params: list[Any] = [type_, int(pinned)]
        if below is not None:
            where += " AND access_count <= ? AND NOT (access_count = ? AND n >= ?)"
            params += [below[0], below[0], below[1]]
        rows = self.conn.execute(
            f"SELECT access_count, n, {COLUMNS} FROM memories WHERE {where} "
            "ORDER BY access_count DESC, n DESC LIMIT ?",
            (*params, limit),
        ).fetchall()
        return [(int(r[0]), int(r[1]), row_to_memory(r[2:])) for r in rows]

    def brief_counts(self) -> dict[tuple[str, bool, str | None], int]:
        """Active memories by (type, pinned, recorded branch), from indexes alone: each group
        found by a seek and counted over its own index range (a GROUP BY over the whole index
        costs twice as much)."""
        out: dict[tuple[str, bool, str | None], int] = {}
        base = "FROM memories INDEXED BY memories_branch WHERE status = 'active' AND type = ? AND pinned = ?"
        for type_ in MemoryType:
            for pinned in (False, True):
                key = (type_.value, int(pinned))
                count = self.conn.execute(
                    f"SELECT count(*) {base} AND source_branch IS NULL", key
                ).fetchone()[0]
                if count:
                    out[(type_.value, pinned, None)] = int(count)
                branch = self.conn.execute(f"SELECT min(source_branch) {base}", key).fetchone()[0]
                while branch is not None:
                    count = self.conn.execute(f"SELECT count(*) {base} AND source_branch = ?", (*key, branch))
                    out[(type_.value, pinned, branch)] = int(count.fetchone()[0])
                    branch = self.conn.execute(
                        f"SELECT min(source_branch) {base} AND source_branch > ?", (*key, branch)
                    ).fetchone()[0]
        return out

    def brief_newest_session(self, types: Sequence[str]) -> Memory | None:
        """The newest active memory of these types that names its session (by created, then id)."""
        found = codec.read_memories(
            self.conn,
            f"SELECT {COLUMNS} FROM memories INDEXED BY memories_created WHERE status = 'active' "
            f"AND type IN ({marks(types)}) AND source_session IS NOT NULL AND source_session != '' "
            "ORDER BY created DESC, id DESC LIMIT 1",
            list(types),
        )
        return found[0] if found else None

    def brief_session_count(self, session_id: str, types: Sequence[str]) -> int:
        """How many active memories of these types a session left."""
        row = self.conn.execute(
            f"SELECT count(*) FROM memories WHERE source_session = ? AND status = 'active' "
            f"AND type IN ({marks(types)})",
            (session_id, *types),
        ).fetchone()
        return int(row[0])

    def brief_tagged(self, tag: str) -> list[Memory]:
        """Active memories carrying `tag`, found through the keyword index (never a table scan:
        `+m.status` keeps SQLite from walking every active row through the status index)."""
        found = codec.read_memories(
            self.conn,
            f"SELECT {', '.join('m.' + c.strip() for c in COLUMNS.split(','))} FROM memories m "
            f"WHERE m.n IN ({fts.tag_rows_sql()}) AND +m.status = 'active'",
            (fts.match_tag(tag),),
        )
        return [m for m in found if tag in m.tags]

    def brief_paths(self) -> list[str]:
        """Every distinct file path some memory names (any status), one index seek per path."""
        out: list[str] = []
        last = self.conn.execute("SELECT min(path) FROM memory_files").fetchone()[0]
        while last is not None:
            out.append(last)
            last = self.conn.execute("SELECT min(path) FROM memory_files WHERE path > ?", (last,)).fetchone()[
                0
            ]
        return out

    def brief_stale(self, gone: Sequence[str], present: Sequence[str], limit: int) -> tuple[int, list[str]]:
        """How many active project memories (raw code aside) name only files in `gone`, and the
        ids of the first `limit` of them, newest first (then by id). `present`: the other paths
        memories name. Counted from the cheaper side, by index seeks per path: through the
        memories naming a gone file (each checked for another file), or as the memories naming
        any file less those naming a present one."""
        if not gone:
            return 0, []
        gone_json = json.dumps(list(gone), ensure_ascii=False)
        share = len(gone) / (len(gone) + len(present))  # of the rows, roughly
        by_gone = share * STALE_CHECK_COST <= 1 - share  # checking a row costs more than seeking it
        if by_gone:
            count = int(
                self.conn.execute(f"SELECT count(*) FROM ({_STALE_BY_GONE})", (gone_json,)).fetchone()[0]
            )
        else:
            present_json = json.dumps(list(present), ensure_ascii=False)
            count = int(self.conn.execute(_STALE_BY_PRESENT, (present_json,)).fetchone()[0])
        if count == 0:
            return 0, []
        # Few gone: sort what they name. Many: newest first through the index on created until
        # `limit` are found (about limit/count of the memories are stale).
        if by_gone:
            sql = f"SELECT id FROM memories WHERE n IN ({_STALE_BY_GONE}) ORDER BY created DESC, id LIMIT ?"
            return count, [r[0] for r in self.conn.execute(sql, (gone_json, limit))]
        sql = (
            "WITH gone(path) AS MATERIALIZED (SELECT value FROM json_each(?)) "
            "SELECT m.id FROM memories m INDEXED BY memories_created "
            "WHERE m.status = 'active' AND m.scope = 'project' AND m.type != 'code' "
            "AND EXISTS (SELECT 1 FROM memory_files f WHERE f.n = m.n) "
            "AND NOT EXISTS (SELECT 1 FROM memory_files f WHERE f.n = m.n AND f.path NOT IN gone) "
            "ORDER BY m.created DESC, m.id LIMIT ?"
        )
        return count, [r[0] for r in self.conn.execute(sql, (gone_json, limit))]


STALE_CHECK_COST = 8  # a gone row checked for other files, in rows counted on the present side
# Row numbers of live memories naming a gone file (the JSON list) and none other. `+f.live`: by
# path through the primary key, not every live row through the index on live.
_STALE_BY_GONE = (
    "SELECT DISTINCT f.n FROM json_each(?) g CROSS JOIN memory_files f ON f.path = g.value "
    "WHERE +f.live = 1 AND NOT EXISTS (SELECT 1 FROM memory_files o WHERE o.n = f.n "
    "AND o.path NOT IN (SELECT value FROM json_each(?1)))"
)
# Live memories naming a file less those naming a present one (the JSON list).
_STALE_BY_PRESENT = (
    "SELECT (SELECT count(DISTINCT n) FROM memory_files WHERE live = 1) - (SELECT count(DISTINCT f.n) "
    "FROM json_each(?) p CROSS JOIN memory_files f ON f.path = p.value WHERE +f.live = 1)"
)
_SQL_SLACK = 1e-6  # SQLite's float arithmetic and Python's may differ in the last bits


def _band_sql(
    conn: Connection, columns: str, type_: str, pinned: bool, band: RankBand, high: float
) -> tuple[str, list[Any]]:
    """A select of `columns` and the rank (as `r`) of the memories of one type, pinned or not,
    with a rank in [band.low, high) give or take float rounding."""
    _ensure_math(conn)
    boosted = bool(band.boost or band.branch is not None)
    if boosted:
        ranked_by: tuple[Any, ...] = (band.key_scale, band.access_scale, band.branch, band.boost)
    else:  # from the rank index alone
        ranked_by = (band.key_scale, band.access_scale)
    low = max(band.low, -1.0) - _SQL_SLACK  # ranks are never negative
    head = [type_, int(pinned), *ranked_by, high, *ranked_by, low]
    if band.key_scale <= 0:
        return _band_text(columns, boosted, 0, False), [*ranked_by, *head]
    lifted = band.boost + _SQL_SLACK  # the most a row's rank exceeds its key and access shares
    # One seek per access count, and with a boost one for the rows on the branch (ranked
    # higher by the boost) and one for the rest: each reads only the keys that can rank in
    # the band, not every row the boost could lift into it.
    lifts = (0.0, band.boost) if band.boost else (0.0,)
    params: list[Any] = []
    for a, log in enumerate(_LOGS):
        share = band.access_scale * log
        for lift in lifts:
            least = (low - share - lift - _SQL_SLACK) / band.key_scale
            most = (high - share - lift + _SQL_SLACK) / band.key_scale
            params += (a, least, most, int(lift > 0))
    params += [*ranked_by, *head]
    params += [band.branch] if band.boost else []
    least_capped = (low - band.access_cap - lifted) / band.key_scale
    params += [*ranked_by, ACCESS_LEVELS, least_capped, *head]
    return _band_text(columns, boosted, len(lifts), bool(band.boost)), params


_LOGS = [math.log(a + 1) for a in range(ACCESS_LEVELS)]


@functools.lru_cache(maxsize=16)
def _band_text(columns: str, boosted: bool, lifts: int, on_branch: bool) -> str:
    """The statement of `_band_sql` (`lifts`: seeks per access count, 0: no seeks)."""
    if boosted:
        rank = (
            f"? * {RANK_KEY} + ? * ln(max(access_count, 0) + 1) "
            "+ (CASE WHEN source_branch IS ? THEN ? ELSE 0.0 END)"
        )
    else:
        rank = f"? * {RANK_KEY} + ? * ln(max(access_count, 0) + 1)"
    what = f"{columns}, {rank} AS r"
    where = f"status = 'active' AND type = ? AND pinned = ? AND {rank} < ?"
    if not lifts:
        return f"SELECT {what} FROM memories WHERE {where} AND {rank} >= ?"
    values = ", ".join("(?, ?, ?, ?)" for _ in range(ACCESS_LEVELS * lifts))
    branch = "AND (source_branch IS ?) = levels.lifted " if on_branch else ""
    return (
        f"WITH levels(a, k, u, lifted) AS (VALUES {values}) "
        f"SELECT {what} FROM levels CROSS JOIN memories "  # levels outside: one seek each
        f"ON access_count = levels.a AND {RANK_KEY} >= levels.k AND {RANK_KEY} < levels.u "
        f"WHERE {where} AND {rank} >= ? {branch}"
        f"UNION ALL SELECT {what} FROM memories WHERE access_count >= ? AND {RANK_KEY} >= ? "
        f"AND {where} AND {rank} >= ?"
    )


_HAS_LN: dict[type, bool] = {}  # per driver: whether its SQLite was built with its math functions


def _ensure_math(conn: Connection) -> None:
    """SQLite built without its math functions gets Python's `ln` (the rank reads need it)."""
    kind = type(conn.raw)
    if kind not in _HAS_LN:
        try:
            conn.execute("SELECT ln(1)").fetchone()
            _HAS_LN[kind] = True
        except Exception:
            _HAS_LN[kind] = False
    if not _HAS_LN[kind]:
        conn.raw.create_function("ln", 1, math.log, deterministic=True)
