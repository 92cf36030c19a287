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
