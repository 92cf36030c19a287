"""Lifecycle use cases: the decay tick, automatic and manual consolidation, edge review.

Rollback and restore live in `cortex.lifecycle.recovery` and are re-exported here.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from cortex.app import Cortex, new_id
from cortex.core import graph
from cortex.core.lifecycle import consolidate as merging
from cortex.core.lifecycle import decay
from cortex.core.model import Edge, EdgeStatus, Memory, Scope, ScopeFilter
from cortex.core.serial import format_time, logical_dict, parse_time
from cortex.core.write import similar
from cortex.errors import CortexError
from cortex.lifecycle import pairs as pairs_of
from cortex.lifecycle.recovery import restore, rollback
from cortex.recall.traverse import refresh_centrality
from cortex.shell.failpoints import failpoint
from cortex.store.packing import unit_rows
from cortex.store.port import Checkpoint, StoreAdmin

log = logging.getLogger("cortex.lifecycle.upkeep")

__all__ = ["after_extraction", "consolidate", "restore", "review_edges", "rollback", "tick"]

META_EXTRACTIONS = "lifecycle.extractions"
META_CONSOLIDATED_AT = "lifecycle.consolidated_at_extraction"
META_CONSOLIDATED_ACTIVE = "lifecycle.consolidated_active"
META_CONSOLIDATED_SEQ = "lifecycle.consolidated_journal_seq"
META_TICKED_AT = "lifecycle.ticked_at"
COSINE_BLOCK = 8_192  # pairs whose cosines are computed together
TICK_EVERY = timedelta(hours=1)  # the rules count in days: the worker need not tick more often
LIVE_STATUSES = ("active", "archived")


@dataclass(frozen=True, slots=True)
class StoreTick:
    """The changes of one tick in one store."""

    scope: Scope
    changes: tuple[decay.Change, ...]


@dataclass(frozen=True, slots=True)
class TickReport:
    """What a tick changed (or would change, when `dry_run`)."""

    dry_run: bool
    stores: tuple[StoreTick, ...]

    def counts(self) -> dict[str, int]:
        """Changes per transition over all stores."""
        return decay.count_by_transition([c for s in self.stores for c in s.changes])


@dataclass(frozen=True, slots=True)
class StoreConsolidation:
    """The consolidation of one store: its plan, what was applied, the checkpoint taken first."""

    scope: Scope
    plan: merging.ConsolidationPlan
    applied: tuple[merging.Merge, ...] = ()
    skipped: tuple[merging.Merge, ...] = ()  # changed by someone else between planning and applying
    checkpoint: Checkpoint | None = None
    reason: str = ""


@dataclass(frozen=True, slots=True)
class ConsolidationReport:
    """A consolidation over the stores (manual or automatic)."""

    dry_run: bool
    reason: str
    stores: tuple[StoreConsolidation, ...]


@dataclass(frozen=True, slots=True)
class AfterExtraction:
    """What the worker's post-extraction lifecycle step did."""

    tick: TickReport
    consolidation: ConsolidationReport | None = None


def _writable(cx: Cortex) -> list[StoreAdmin]:
    return [s for s in cx.read_stores() if not s.readonly]


# -- the tick -----------------------------------------------------------------------------------
def _fresh(current: Memory | None, before: Memory) -> bool:
    """The stored memory is still what the plan was made from."""
    return current is not None and logical_dict(current) == logical_dict(before)


def tick_store(cx: Cortex, store: StoreAdmin, *, dry_run: bool = False) -> StoreTick:
    """Decay, archive and prune one store at `cx.now()`."""
    now = cx.now()
    if dry_run:
        scores = graph.centrality(store.edges(status="active"), store.active_ids())
    else:
        with store.transaction():  # hubs are exempt from archiving: judge them on today's links
            scores = refresh_centrality(store)
    candidates = store.tick_candidates(
        decay.plan_tick_cutoffs(now), decay.prune_cutoff(now), decay.ARCHIVE_FLOOR
    )
    memories = [
        m if m.centrality == scores.get(m.id, 0.0) else replace(m, centrality=scores.get(m.id, 0.0))
        for m in candidates
    ]
    changes = decay.plan_tick(memories, now).changes
    if dry_run or not changes:
        return StoreTick(store.scope, changes)
    applied = []
    with store.transaction():
        current = store.get_many([c.before.id for c in changes])
        for c in changes:
            if not _fresh(current.get(c.before.id), c.before):
                continue  # changed since it was read: the next tick decides again
            store.update_memory(c.before, c.after, cx.actor, now, c.transition.value)
            applied.append(c)
        store.delete_vectors([c.after.id for c in applied if c.transition is decay.Transition.PRUNE])
    return StoreTick(store.scope, tuple(applied))


def tick(cx: Cortex, dry_run: bool = False) -> TickReport:
    """The lifecycle tick over every store that exists (SPEC §6)."""
    return TickReport(dry_run, tuple(tick_store(cx, s, dry_run=dry_run) for s in _writable(cx)))


# -- consolidation ------------------------------------------------------------------------------
def _pair_cosines(
    blobs: Mapping[str, bytes], pairs: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], float]:
    """Cosine of each pair's stored float32 vectors, a block of pairs per matrix operation.

    A first whole-store run can have tens of thousands of candidate pairs; one Python loop per
    pair over 384 floats made it quadratic in practice (129 s at 10,000 memories).
    """
    import numpy as np

    ids = list(blobs)
    row = {mid: i for i, mid in enumerate(ids)}
    unit = np.empty((len(ids), len(blobs[ids[0]]) // 4), dtype=np.float64)
    for k in range(0, len(ids), COSINE_BLOCK):  # row by row as one call, without its copies of all
        part = ids[k : k + COSINE_BLOCK]
        unit[k : k + len(part)] = unit_rows([blobs[mid] for mid in part], dtype="float64")
    left = np.fromiter((row[a] for a, _ in pairs), dtype=np.intp, count=len(pairs))
    right = np.fromiter((row[b] for _, b in pairs), dtype=np.intp, count=len(pairs))
    dots = np.concatenate(  # a block of pairs at a time: bounded memory
        [
            np.einsum("ij,ij->i", unit[left[k : k + COSINE_BLOCK]], unit[right[k : k + COSINE_BLOCK]])
            for k in range(0, len(pairs), COSINE_BLOCK)
        ]
    )
    return {pair: float(c) for pair, c in zip(pairs, dots.tolist(), strict=True)}


def read_cosines(
    cx: Cortex, store: StoreAdmin, pairs: Sequence[similar.SimilarPair]
) -> dict[tuple[str, str], float]:
    """Cosines of stored vectors for these pairs (none when the store has no vectors)."""
    index = pairs_of.vector_index(cx, store) if pairs else None
    if index is None:
        return {}
    ids = sorted({i for p in pairs for i in (p.a, p.b)})
    by_id = store.read_vectors(index.name, ids)
    known = [(p.a, p.b) for p in pairs if p.a in by_id and p.b in by_id]
    return _pair_cosines(by_id, known) if known else {}


def plan_store(
    cx: Cortex, store: StoreAdmin, *, since_seq: int | None = None, review: bool = True
) -> merging.ConsolidationPlan:
    """Gather what consolidation needs from one store and plan it.

    Only the pairs that can change the plan are found (`cortex.lifecycle.pairs`), so the plan
    is the all-pairs plan without the all-pairs cost; full memories and their links are read
    only for memories that pair with something. With `since_seq`, only memories changed after
    that journal record are compared (with everything). Without `review`, the plan's
    `suggested` list holds only the links of the memories it compares: the merges, the
    contradictions and the new links are the same, and the store's other suggested links (every
    one of them is read and sorted otherwise: seconds in a store of 1,000,000 memories) are left
    for `cortex consolidate` to show.
    """
    probes = None if since_seq is None else store.changed_ids(since_seq)
    pairs = pairs_of.candidate_pairs(cx, store, probes) if probes is None or probes else []
    involved = sorted({i for p in pairs for i in (p.a, p.b)})
    memories = list(store.get_many(involved).values())
    # Every same-type pair's cosine, read in one pass: the plan asks the paraphrase rules only
    # of pairs that reach the duplicate cosine, so it equals the plan made from the cosines of
    # `merging.pairs_needing_cosine` alone, without running those rules on every pair first.
    kinds = {m.id: m.type for m in memories}
    cosines = read_cosines(cx, store, [p for p in pairs if kinds.get(p.a, 0) == kinds.get(p.b, 1)])
    edges = {(e.source, e.target, e.type): e for e in store.edges(involved)}
    if review:
        waiting = store.edges(status=EdgeStatus.SUGGESTED.value)
        edges.update({(e.source, e.target, e.type): e for e in waiting})
    ordered = [edges[k] for k in sorted(edges, key=lambda k: (k[0], k[1], k[2].value))]
    return merging.plan_consolidation(memories, ordered, cx.now(), pairs=pairs, cosines=cosines)


def _apply_merge(cx: Cortex, store: StoreAdmin, merge: merging.Merge) -> bool:
    now = cx.now()
    members = [merge.keeper, *merge.absorbed]
    current = store.get_many([m.id for m in members])
    if not all(_fresh(current.get(m.id), m) for m in members):
        return False
    for before, after in zip(merge.absorbed, merge.absorbed_after, strict=True):
        store.update_memory(before, after, cx.actor, now, "merge")
    store.update_memory(merge.keeper, merge.merged, cx.actor, now, "merge")
    for e in merge.edges:
        store.upsert_edge(e, cx.actor, now)
    store.journal(
        cx.actor,
        "merge",
        None,
        {"into": merge.keeper.id, "absorbed": [m.id for m in merge.absorbed]},
        now,
    )
    return True


def consolidate_store(
    cx: Cortex,
    store: StoreAdmin,
    *,
    dry_run: bool = False,
    run: str = "",
    reason: str = "manual",
    incremental: bool = False,
    review: bool = True,
) -> StoreConsolidation:
    """Plan and (unless dry-run) apply one store's consolidation, checkpointing first if needed
    (`review`: as `plan_store`'s)."""
    seq = store.journal_seq()
    since = int(store.get_meta(META_CONSOLIDATED_SEQ, "0") or 0) if incremental else None
    planned = plan_store(cx, store, since_seq=since, review=review)
    if dry_run:
        return StoreConsolidation(store.scope, planned, reason=reason)
    taken = None
    if planned.destructive:
        taken = store.write_checkpoint(reason="consolidate", run=run or new_id(), at=cx.now())
        failpoint("consolidate.after_checkpoint")
    applied: list[merging.Merge] = []
    skipped: list[merging.Merge] = []
    with store.transaction():
        for merge in planned.merges:
            (applied if _apply_merge(cx, store, merge) else skipped).append(merge)
            failpoint("consolidate.after_merge")
        for e in planned.new_edges:
            store.upsert_edge(e, cx.actor, cx.now())
        # In the same transaction as the merges: a kill leaves both undone, and the next
        # run does the work once.
        store.set_meta(META_CONSOLIDATED_AT, store.get_meta(META_EXTRACTIONS, "0") or "0")
        store.set_meta(META_CONSOLIDATED_ACTIVE, str(store.count_active()))
        store.set_meta(META_CONSOLIDATED_SEQ, str(seq))
        if applied or planned.new_edges:  # links changed: hubs are judged on today's graph
            refresh_centrality(store)
        failpoint("consolidate.before_commit")
    failpoint("consolidate.after_commit")
    if applied:
        log.info("consolidation (%s) merged %d clusters in %s", reason, len(applied), store.path)
    return StoreConsolidation(store.scope, planned, tuple(applied), tuple(skipped), taken, reason)


def consolidate(
    cx: Cortex,
    *,
    dry_run: bool = False,
    reason: str = "manual",
    scope: ScopeFilter = ScopeFilter.ALL,
    full: bool = False,
) -> ConsolidationReport:
    """Merge near-duplicates and flag contradictions in every store (`cortex consolidate`).

    Compares what changed since the last consolidation with everything; `full` compares
    everything with everything (the plan an incremental run would reach had it never missed
    a change, such as vectors written after their memories were compared).
    """
    run = new_id()
    stores = [s for s in _writable(cx) if s.scope in ScopeFilter(scope).scopes()]
    done = tuple(
        consolidate_store(cx, s, dry_run=dry_run, run=run, reason=reason, incremental=not full)
        for s in stores
    )
    return ConsolidationReport(dry_run, reason, done)


def _tick_due(store: StoreAdmin, now: datetime) -> bool:
    last = parse_time(store.get_meta(META_TICKED_AT))
    return last is None or now < last or now - last >= TICK_EVERY


def after_extraction(cx: Cortex) -> AfterExtraction:
    """The worker's step after each extraction batch: count it, tick, consolidate when due.

    The tick runs at most hourly here (`cortex lifecycle` runs it at any time); consolidation
    runs every `consolidate_every` extractions, or while more than `consolidate_active_over`
    memories are active and there are more than after the last run. Automatic runs compare
    only what changed since the last run with everything.
    """
    now = cx.now()
    ticks, due = [], []
    for store in _writable(cx):
        with store.transaction():
            count = int(store.get_meta(META_EXTRACTIONS, "0") or 0) + 1
            store.set_meta(META_EXTRACTIONS, str(count))
            tick_now = _tick_due(store, now)
            if tick_now:
                store.set_meta(META_TICKED_AT, format_time(now) or "")
        failpoint("lifecycle.after_count")  # counted (and the tick claimed), not yet ticked
        if tick_now:
            ticks.append(tick_store(cx, store))
        why = merging.plan_auto_consolidation(
            extractions=count,
            last_extractions=int(store.get_meta(META_CONSOLIDATED_AT, "0") or 0),
            active=store.count_active(),
            last_active=int(store.get_meta(META_CONSOLIDATED_ACTIVE, "0") or 0),
            every=cx.settings.consolidate_every,
            active_over=cx.settings.consolidate_active_over,
        )
        if why:
            due.append((store, why))
    report = TickReport(False, tuple(ticks))
    if not due:
        return AfterExtraction(report)
    run = new_id()
    done = tuple(
        consolidate_store(cx, s, run=run, reason=f"auto: {why}", incremental=True, review=False)
        for s, why in due
    )
    return AfterExtraction(report, ConsolidationReport(False, "auto", done))


# -- reviewing suggested edges ------------------------------------------------------------------
def suggested_edges(cx: Cortex) -> list[tuple[StoreAdmin, Edge]]:
    """Every suggested edge awaiting review, with its store."""
    return [(s, e) for s in cx.read_stores() for e in s.edges(status=EdgeStatus.SUGGESTED.value)]


def review_edges(cx: Cortex, *, promote: Sequence[str] = (), drop: Sequence[str] = ()) -> dict[str, Any]:
    """Promote suggested edges to active or delete them (`--promote`/`--drop SRC:TGT[:TYPE]`)."""
    pending = suggested_edges(cx)
    edges = [e for _, e in pending]
    store_of = {(e.source, e.target, e.type): s for s, e in pending}
    try:
        up, unknown_up = merging.match_edges(promote, edges) if promote else ([], [])
        down, unknown_down = merging.match_edges(drop, edges) if drop else ([], [])
    except ValueError as exc:
        raise CortexError(str(exc), "name an edge as SOURCE_ID:TARGET_ID[:TYPE], or `all`") from None
    both = {(e.source, e.target, e.type) for e in up} & {(e.source, e.target, e.type) for e in down}
    if both:
        raise CortexError("an edge cannot be both promoted and dropped", "name each edge once")
    now = cx.now()
    for e in up:
        store = store_of[(e.source, e.target, e.type)]
        with store.transaction():
            store.upsert_edge(replace(e, status=EdgeStatus.ACTIVE), cx.actor, now)
    for e in down:
        store = store_of[(e.source, e.target, e.type)]
        with store.transaction():
            store.delete_edge(e.source, e.target, e.type.value, cx.actor, now)
    for store in {id(s): s for s, _ in pending}.values():
        with store.transaction():
            refresh_centrality(store)
    return {"promoted": up, "dropped": down, "unknown": [*unknown_up, *unknown_down]}
