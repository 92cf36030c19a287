"""The read the UserPromptSubmit hook makes: active memories matching a prompt, by keywords only.

Stdlib only and light to import (no numpy, no vector extension, no dataclasses): the hook
opens each store read-only with the stdlib `sqlite3` and gives up quickly on a lock.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from cortex.store.sqlite import fts

if TYPE_CHECKING:
    from cortex.core.recall.query import TextQuery

BUSY_TIMEOUT_S = 0.2  # the hook has a budget: skip a store that a writer holds
PROMPT_SQL = fts.search_sql(
    "m.id, m.type, m.content, m.created, m.source_branch, m.scope",
    "m.status = 'active' AND m.type != 'code'",
)


class Unreadable(Exception):
    """The store could not be searched (no FTS5 in this build, a migration under way, a lock)."""


def read_prompt_matches(db: Path, query: TextQuery, limit: int) -> list[tuple[object, ...]]:
    """(id, type, content, created, branch, scope, bm25) of the best active, non-code memories
    for `query`, best first (bm25 ascending); raises Unreadable."""
    match = fts.match_text(query)
    if match is None:
        return []
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
        try:
            return list(conn.execute(PROMPT_SQL, (match, limit)))
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise Unreadable(str(exc)) from exc


# The SessionStart hook's render when no briefing is cached: the columns of `memory_rows.COLUMNS` up to
# schema 4, in the same order (a test keeps them so; the row codec is too heavy for the hook).
# What later schemas add, a briefing does not read: the hook also reads a store that the next
# worker or CLI run has not migrated yet.
BRIEFING_COLUMNS = (
    "id, content, summary, type, scope, confidence, priority, pinned, source_session, "
    "source_offset, source_branch, source_commit, source_files, tags, access_count, "
    "last_accessed, created, updated, status, content_hash, low_since, status_changed, centrality"
)
_BRIEFED = "status = 'active' AND type != 'code'"


def _read_only(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)


def count_briefed(db: Path, cap: int | None = None) -> int:
    """How many memories of the store a briefing would consider (active, not raw code), or `cap`
    when there are at least that many (the count stops there: it costs the same in any store);
    raises Unreadable."""
    sql = f"SELECT 1 FROM memories WHERE {_BRIEFED}"
    if cap is not None:
        sql += f" LIMIT {int(cap)}"
    try:
        conn = _read_only(db)
        try:
            return int(conn.execute(f"SELECT count(*) FROM ({sql})").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise Unreadable(str(exc)) from exc


def read_briefed_rows(db: Path) -> list[tuple[object, ...]]:
    """Every memory a briefing would consider, as `BRIEFING_COLUMNS` rows; raises Unreadable."""
    try:
        conn = _read_only(db)
        try:
            return list(conn.execute(f"SELECT {BRIEFING_COLUMNS} FROM memories WHERE {_BRIEFED}"))
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise Unreadable(str(exc)) from exc
