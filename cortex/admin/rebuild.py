"""Rebuild the derived indexes (FTS5, vec0, centrality) from the memories and edges, and verify it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from cortex.app import Cortex
from cortex.core.model import Scope
from cortex.recall.traverse import refresh_centrality
from cortex.store.sqlite import maintenance as lifecycle_sql
from cortex.store.sqlite import vectors
from cortex.store.sqlite.store import Store

log = logging.getLogger("cortex.admin.rebuild")

Progress = Callable[[int, int], None]


@dataclass(slots=True)
class RebuildReport:
    """One store's rebuild: digests before and after, and what happened to its vectors."""

    scope: Scope
    before: str
    after: str
    memories: int
    edges: int
    fts_ok: bool
    vectors_kept: int = 0
    vectors_pending: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return self.before == self.after


def _rebuild_vectors(cx: Cortex, store: Store, report: RebuildReport) -> None:
    """Recreate each vec0 index holding only live, non-code memories, keeping their vectors."""
    wanted = lifecycle_sql.read_embeddable_rows(store)
    for table, key, dim in lifecycle_sql.read_vector_indexes(store):
        try:
            saved = {
                n: blob for n, blob in lifecycle_sql.read_all_vectors(store, table).items() if n in wanted
            }
        except Exception as exc:  # a damaged index: its memories wait for backfill
            log.warning("could not read %s while rebuilding: %s", table, exc)
            report.notes.append(f"{table} was unreadable; its memories need `cortex backfill`")
            saved = {}
        fresh = lifecycle_sql.recreate_vector_index(store, table, key, dim, cx.now())
        vectors.write_vectors(store, fresh, sorted(saved.items()))
        report.vectors_kept += len(saved)
        report.vectors_pending += len(wanted) - len(saved)


def rebuild_store(cx: Cortex, store: Store) -> RebuildReport:
    """Drop and rebuild the derived indexes of one store (FTS5, vec0, centrality)."""
    # Both digests inside the write transaction: other sessions may write before and after it,
    # and --verify must compare the state the rebuild started from with what it left.
    with store.transaction():
        before = lifecycle_sql.read_state_digest(store)
        report = RebuildReport(store.scope, before.digest, "", before.memories, before.edges, False)
        store.rebuild_fts()
        if store.vectors:
            _rebuild_vectors(cx, store, report)
        elif lifecycle_sql.read_vector_indexes(store):
            report.notes.append("vector search is unavailable in this Python; vec0 indexes left as they are")
        store.write_centrality({})
        refresh_centrality(store)
        report.fts_ok = lifecycle_sql.check_fts(store)
        report.after = lifecycle_sql.read_state_digest(store).digest
    if report.vectors_pending:
        report.notes.append(f"{report.vectors_pending} memories have no vector: run `cortex backfill`")
    return report


def rebuild(cx: Cortex, *, progress: Progress | None = None) -> list[RebuildReport]:
    """`cortex rebuild`: every store's derived indexes rebuilt from its memories and edges."""
    stores = [s for s in cx.read_stores("all") if not s.conn.readonly]
    reports = []
    for n, store in enumerate(stores, 1):
        reports.append(rebuild_store(cx, store))
        if progress:
            progress(n, len(stores))
    return reports
