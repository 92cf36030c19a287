"""`cortex audit`: a store's integrity and content health, and repair of what can be derived.

Integrity: the keyword index agrees with the memories, every live memory has a vector in each
vector index, no edge points at a memory the store lacks, and the journal replays to the live
state. Content health: duplicates, junk, secrets (the write path's redaction), never-used
memories (`core/lifecycle/health.py`), and stale ones (code anchors changed at HEAD). `--fix`
takes a checkpoint, then rebuilds the keyword index, embeds the memories missing a vector (when
the embedder of that index is available) and deletes dangling edges (journaled); memories
themselves are never changed by an audit.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from cortex.app import Cortex
from cortex.briefing.anchors import anchor_checks, cache_path, marks
from cortex.capture.embed import write_embeddings
from cortex.core.lifecycle.health import Health, content_health
from cortex.core.model import Scope
from cortex.core.replay import replay
from cortex.lifecycle.pairs import similar_pairs
from cortex.store.port import StoreAdmin

log = logging.getLogger("cortex.admin.audit")

WINDOW_INDEX_SUFFIX = "#chunks"  # windows of long memories, not one row per memory


@dataclass(slots=True)
class StoreAudit:
    """What one store's audit found (and, with --fix, repaired)."""

    scope: Scope
    path: str
    text_index_ok: bool
    missing_vectors: dict[str, list[str]]  # vector index -> live memories without a vector in it
    dangling_edges: list[tuple[str, str, str]]  # (source, target, type) with an end missing
    digest: str
    replayed: str  # the journal's replay digest
    health: Health
    fixed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checkpoint: str | None = None

    @property
    def replay_ok(self) -> bool:
        return self.digest == self.replayed

    @property
    def problems(self) -> list[str]:
        """Integrity problems, one line each (empty: the store is whole)."""
        out = []
        if not self.text_index_ok:
            out.append("the keyword index disagrees with the memories")
        for index, ids in sorted(self.missing_vectors.items()):
            if ids:
                out.append(f"{len(ids)} memories have no vector in {index}")
        if self.dangling_edges:
            out.append(f"{len(self.dangling_edges)} edges point at memories the store lacks")
        if not self.replay_ok:
            out.append("the journal does not replay to the live state")
        return out

    @property
    def clean(self) -> bool:
        h = self.health
        return not self.problems and not h.duplicates and not h.junk and not h.secrets


def integrity(store: StoreAdmin) -> tuple[bool, dict[str, list[str]], list[tuple[str, str, str]], str, str]:
    """Keyword index ok, missing vectors per index, dangling edges, live digest, replay digest."""
    with store.transaction():
        ids = {m.id for m in store.all_memories()}
        dangling = sorted(
            (e.source, e.target, e.type.value)
            for e in store.edges()
            if e.source not in ids or e.target not in ids
        )
        missing = {
            index.name: store.unembedded(index.name)
            for index in store.vector_indexes()
            if not index.embedder_key.endswith(WINDOW_INDEX_SUFFIX)
        }
        digest = store.state_digest().digest
        replayed = replay(store.journal_rows()).digest().digest
        return store.check_text_index(), missing, dangling, digest, replayed


def audit_store(store: StoreAdmin) -> StoreAudit:
    """Audit one store (reads only)."""
    text_ok, missing, dangling, digest, replayed = integrity(store)
    health = content_health(store.all_memories(), similar_pairs)  # the word joins: bounded
    return StoreAudit(store.scope, str(store.path), text_ok, missing, dangling, digest, replayed, health)


def _fix(cx: Cortex, store: StoreAdmin, found: StoreAudit) -> tuple[list[str], list[str], str]:
    now = cx.now()
    cp = store.write_checkpoint(reason="before-audit-fix", run=now.strftime("%Y%m%dT%H%M%S%f"), at=now)
    fixed: list[str] = []
    notes: list[str] = []
    with store.transaction():
        if not found.text_index_ok:
            store.rebuild_text_index()
            fixed.append("rebuilt the keyword index")
        for source, target, etype in found.dangling_edges:
            store.delete_edge(source, target, etype, cx.actor, now)
        if found.dangling_edges:
            fixed.append(f"deleted {len(found.dangling_edges)} dangling edges")
    wanted = {i.name: i for i in store.vector_indexes()}
    for name, ids in sorted(found.missing_vectors.items()):
        if not ids:
            continue
        embedder = cx.bulk_embedder().backend
        if embedder is None or embedder.key != wanted[name].embedder_key:
            notes.append(f"{len(ids)} memories still need a vector in {name}: run `cortex backfill`")
            continue
        mems = store.get_many(ids)
        write_embeddings(cx, store, [mems[i] for i in ids if i in mems], embedder)
        fixed.append(f"embedded {len(ids)} memories into {name}")
    return fixed, notes, cp.name


def stale_memories(cx: Cortex, store: StoreAdmin) -> dict[str, str]:
    """Active memories of a project store whose code anchors changed at HEAD -> their mark."""
    if store.scope is not Scope.PROJECT:
        return {}
    try:
        checks = anchor_checks(cx.paths.root, [store], None, cache_path(cx.paths.briefing_dir))
    except Exception as exc:  # git or the anchors unreadable: the rest of the audit still stands
        log.warning("code anchors not checked: %s", exc)
        return {}
    return dict(sorted(marks(checks).items()))


def audit(cx: Cortex, *, fix: bool = False) -> list[StoreAudit]:
    """Audit every existing store; with `fix`, repair the derivable problems and audit again."""
    reports = []
    for store in cx.read_stores():
        found = audit_store(store)
        if fix and not store.readonly and found.problems:
            fixed, notes, checkpoint = _fix(cx, store, found)
            found = audit_store(store)
            found.fixed, found.notes, found.checkpoint = fixed, notes, checkpoint
        found.health.stale = stale_memories(cx, store)
        reports.append(found)
    return reports
