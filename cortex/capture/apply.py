"""Carry out a write-gate plan in the store, inside the caller's transaction.

The step every writer shares (`cortex remember`, the worker's batches, batch ingest): the core
decides the memory's fields (`cortex.core.write.apply`), this module reads the target, writes
the memory and the planned and hinted edges, and reports the outcome.
"""

from __future__ import annotations

from datetime import datetime

from cortex.app import Cortex, looks_like_id, new_id
from cortex.core.lifecycle.decay import plan_restore
from cortex.core.model import Candidate, Edge, EdgeStatus, EdgeType, Memory, Source
from cortex.core.recall import query
from cortex.core.text import jaccard, word_set
from cortex.core.write.apply import (
    WriteEffect,
    WriteOutcome,
    effect_of,
    evidence_of,
    new_memory,
    reinforced,
)
from cortex.core.write.gate import WriteAction, WritePlan
from cortex.core.write.sanitise import sanitise_source
from cortex.store.port import MemoryStore

HINT_STRENGTH = 0.5  # a model's guess at a link, below the gate's own relates_to edges
HINT_MIN_OVERLAP = 0.2  # a hint described in words must share this much vocabulary with its match


def apply_plan(
    cx: Cortex,
    store: MemoryStore,
    cand: Candidate,
    plan: WritePlan,
    source: Source,
    now: datetime,
    memory_id: str | None = None,
) -> WriteOutcome:
    """Carry out a plan inside the caller's transaction (nothing is embedded here). An insert
    takes `memory_id` when given (a free id the caller chose), else a fresh one."""
    effect = effect_of(plan)
    memory: Memory
    if plan.action is WriteAction.INSERT:
        memory = new_memory(memory_id or new_id(), cand, store.scope, sanitise_source(source), now)
        store.insert_memory(memory, cx.actor, now)
    else:
        current = store.get(plan.target_id or "")
        if current is None:
            raise RuntimeError(f"gate planned on a missing memory {plan.target_id}")
        memory = reinforced(current, plan, now) if effect is WriteEffect.REINFORCED else current
        if plan.restore:  # None: restored meanwhile, nothing left to restore
            memory = plan_restore(memory, now) or memory
        if memory is not current:
            op = "reinforce" if effect is WriteEffect.REINFORCED else "restore"
            store.update_memory(current, memory, cx.actor, now, op)
        if plan.keep_candidate:  # a paraphrase: its wording stays, out of briefing and recall
            kept, link = evidence_of(new_id(), memory, cand, store.scope, sanitise_source(source), now)
            store.insert_memory(kept, cx.actor, now)
            store.upsert_edge(link, cx.actor, now)
    edges = _write_edges(cx, store, cand, plan, memory.id, now)
    return WriteOutcome(effect, memory, store.scope, plan.reason, edges)


def _write_edges(
    cx: Cortex, store: MemoryStore, cand: Candidate, plan: WritePlan, target: str, now: datetime
) -> int:
    edges = 0
    for pe in plan.edges:
        src = pe.source or target
        if src == pe.target or pe.type == EdgeType.SUPERSEDES:
            continue
        store.upsert_edge(Edge(src, pe.target, pe.type, pe.strength, pe.status, now), cx.actor, now)
        edges += 1
    for other, edge_type in _hinted_edges(store, cand, target):
        store.upsert_edge(
            Edge(target, other, edge_type, HINT_STRENGTH, EdgeStatus.SUGGESTED, now), cx.actor, now
        )
        edges += 1
    return edges


def _hinted_edges(store: MemoryStore, cand: Candidate, target: str) -> list[tuple[str, EdgeType]]:
    """The memories an extractor's edge hints name (by id, else by their best text match).

    Hints come from a model, so they only ever become `suggested` links for the user to review,
    and never `supersedes` (a human decision)."""
    out: dict[str, EdgeType] = {}
    for ref, edge_type in cand.edge_hints:
        if edge_type == EdgeType.SUPERSEDES or not ref.strip():
            continue
        found = store.get(ref.strip().lower()) if looks_like_id(ref) else None
        if found is None:
            keywords = query.text_query(ref)
            ranked = store.search_text(keywords, 1, ("active",)) if keywords else []
            best = store.get(ranked[0][0]) if ranked else None
            if best is not None and jaccard(word_set(ref), word_set(best.content)) >= HINT_MIN_OVERLAP:
                found = best
        if found is not None and found.id != target:
            out.setdefault(found.id, edge_type)
    return list(out.items())
