"""Rebuild the derived indexes (keywords, vectors, centrality) from memories and edges; verify it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from cortex.app import Cortex
from cortex.core.model import Scope
from cortex.core.replay import replay
from cortex.recall.traverse import refresh_centrality
from cortex.store.port import StoreAdmin

Progress = Callable[[int, int], None]
# A store registers the extra windows of long memories as an index of its own, under the
# embedder's key with this suffix; its rows are windows, not memories (see `_rebuild_vectors`).
WINDOW_INDEX_SUFFIX = "#chunks"


@dataclass(slots=True)
class RebuildReport:
    """One store's rebuild: digests before and after, and what happened to its vectors."""

    scope: Scope
    before: str
    after: str
    memories: int
    edges: int
    fts_ok: bool
    replayed: str = ""  # the digest of the journal replayed from its first record
    vectors_kept: int = 0
    vectors_pending: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return self.before == self.after

    @property
    def history_ok(self) -> bool:
        """The whole journal, restores and rollbacks included, replays to the live state."""
        return self.replayed == self.after


def _rebuild_vectors(cx: Cortex, store: StoreAdmin, report: RebuildReport) -> None:
    """Recreate each vector index holding only live, non-code memories, keeping their vectors.

    Window indexes are left as they are: rebuilt per memory row they would lose every window
    vector and count each memory as having no vector, a false "run `cortex backfill`" that
    backfill (which fills memories' own vectors) could never clear."""
    for index in store.vector_indexes():
        if index.embedder_key.endswith(WINDOW_INDEX_SUFFIX):
            continue
        done = store.rebuild_vector_index(index, cx.now())
        if done.problem is not None:  # a damaged index: its memories wait for backfill
            report.notes.append(f"{index.name} was unreadable; its memories need `cortex backfill`")
        report.vectors_kept += done.kept
        report.vectors_pending += done.pending


def rebuild_store(cx: Cortex, store: StoreAdmin) -> RebuildReport:
    """Drop and rebuild the derived indexes of one store (keywords, vectors, centrality)."""
    # Both digests inside the write transaction: other sessions may write before and after it,
    # and --verify must compare the state the rebuild started from with what it left.
    with store.transaction():
        before = store.state_digest()
        report = RebuildReport(store.scope, before.digest, "", before.memories, before.edges, False)
        store.rebuild_text_index()
        if store.vectors:
            _rebuild_vectors(cx, store, report)
        elif store.vector_indexes():
            report.notes.append("vector search is unavailable in this Python; vec0 indexes left as they are")
        store.write_centrality({})
        refresh_centrality(store)
        report.fts_ok = store.check_text_index()
        report.after = store.state_digest().digest
        report.replayed = replay(store.journal_rows()).digest().digest
    if report.vectors_pending:
        report.notes.append(f"{report.vectors_pending} memories have no vector: run `cortex backfill`")
    return report


def rebuild(cx: Cortex, *, progress: Progress | None = None) -> list[RebuildReport]:
    """`cortex rebuild`: every store's derived indexes rebuilt from its memories and edges."""
    stores = [s for s in cx.read_stores() if not s.readonly]
    reports = []
    for n, store in enumerate(stores, 1):
        reports.append(rebuild_store(cx, store))
        if progress:
            progress(n, len(stores))
    return reports
