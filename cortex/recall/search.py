"""The recall use case: gather candidates from both stores, let the core rank them, record access."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from cortex.app import Cortex
from cortex.backends.port import Reranker
from cortex.core import graph
from cortex.core.model import Edge, Hit, Memory, Scope, ScopeFilter, SearchMode, Status
from cortex.core.recall.decide import (
    DEFAULT_VECTOR_FLOOR,
    Gathered,
    RecallParams,
    RecallPlan,
    RecallRequest,
    RecallResult,
    plan_recall,
)
from cortex.errors import CortexError
from cortex.recall import gather as gathering
from cortex.store.port import MemoryStore

log = logging.getLogger("cortex.recall")

MAX_LIMIT = 100
RERANK_DEPTH = 30  # cross-encoder cost grows with candidates: ~85 ms per 100 on 2 cores
SEE_ALSO_DEPTH = 2
SEE_ALSO_MAX = 5


def render_result(result: RecallResult) -> str:
    """The text a person (or the model, through the skill) reads for a recall."""
    from cortex.core.render import render_recall

    return render_recall(
        result.query,
        result.hits,
        mode=result.mode,
        notes=result.notes,
        abstained=result.abstained,
        reason=result.reason,
        dropped=result.dropped_by_budget,
        stale=result.stale,
    )


def _expand(stores: Sequence[MemoryStore], plan: RecallPlan, got: Gathered) -> list[Hit]:
    """Attach raw code (`source_of`) and related memories to depth 2 ("see also")."""
    by_scope = {s.scope: s for s in stores}
    shown = {h.id for h in plan.hits}
    edges: dict[Scope, list[Edge]] = {}
    code: dict[str, Memory] = {}
    for scope, store in by_scope.items():
        mine = [h.id for h in plan.hits if got.memories[h.id].scope == scope]
        edges[scope] = _edges_to_depth(store, mine) if mine else []
        code.update(store.get_many(sorted(graph.code_link_ends(edges[scope]))))
    touching = {scope: graph.edges_by_node(found) for scope, found in edges.items()}
    hits: list[Hit] = []
    for ranked in plan.hits:
        memory = got.memories[ranked.id]
        index = touching.get(memory.scope) or touching.get(stores[0].scope, {})
        code_ids, see_also = graph.code_and_see_also(ranked.id, index, shown, SEE_ALSO_DEPTH, SEE_ALSO_MAX)
        attached = tuple(code[c] for c in code_ids if c in code and c != ranked.id)
        hits.append(Hit(memory, ranked.score, memory.scope, dict(ranked.signals), attached, see_also))
    return hits


def _edges_to_depth(store: MemoryStore, starts: Sequence[str]) -> list[Edge]:
    """Active edges within two hops of any of `starts` (two queries instead of the whole graph).

    A walk of depth 2 from one start only uses edges touching it or its neighbours, so the
    union serves every start: the extra edges are never reached from the others."""
    first = store.edges(list(starts), status="active")
    ring = {e.source for e in first} | {e.target for e in first}
    second = store.edges(sorted(ring - set(starts)), status="active") if ring else []
    return list({(e.source, e.target, e.type): e for e in [*first, *second]}.values())


def stale_marks(cx: Cortex, stores: Sequence[MemoryStore], hits: Sequence[Hit]) -> dict[str, str]:
    """Hit id -> what its code anchors say at HEAD ("may be stale: ..."), or "stale: file gone"
    when every file it names is gone (as the briefing marks it)."""
    project = [s for s in stores if s.scope is Scope.PROJECT]
    mine = [h.memory for h in hits if h.memory.scope is Scope.PROJECT]
    if not project or not mine:
        return {}
    try:
        anchored = {
            mid: a for store in project for mid, a in store.read_anchors([m.id for m in mine]).items()
        }
        if not anchored and not any(m.source.files for m in mine):
            return {}  # nothing to check: the checker is not even imported
        from cortex.briefing.anchors import cache_path, check_anchors, marks, read_gone_paths
        from cortex.briefing.stale import flag_stale

        root, cache = cx.paths.root, cache_path(cx.paths.briefing_dir)
        out = marks(check_anchors(root, anchored, cache))
        with_files = [m for m in mine if m.source.files and m.id not in out]
        paths = {f for m in with_files for f in m.source.files}
        for mid in sorted(flag_stale(with_files, read_gone_paths(root, paths, cache))) if paths else ():
            out[mid] = "stale: file gone"
    except Exception as exc:  # a mark is a courtesy; never fail a recall for it
        log.warning("stale marks skipped: %s", exc)
        return {}
    return out


def _apply_access(cx: Cortex, hits: Sequence[Hit]) -> None:
    """Count the access and restore archived memories that were recalled."""
    now = cx.now()
    for scope in (Scope.PROJECT, Scope.GLOBAL):
        mine = [h.memory for h in hits if h.memory.scope == scope]
        if not mine:
            continue
        store = cx.store(scope, create=False)
        if store is None or store.readonly:
            continue
        with store.transaction():
            store.record_access([m.id for m in mine], now, cx.actor)
            for m in mine:
                current = store.get(m.id) if m.status == Status.ARCHIVED else None
                # Only archived ones: a recall never shows pruned memories, so never revives them.
                if current is not None and current.status == Status.ARCHIVED:
                    from cortex.core.lifecycle.decay import plan_restore  # rare: keep it off recall's start

                    restored = plan_restore(current, now)
                    if restored is not None:
                        store.update_memory(current, restored, cx.actor, now, "restore")


def _first_pass(req: RecallRequest, got: Gathered, now: datetime, params: RecallParams, n: int) -> list[str]:
    """The best `n` ids of a plain first pass (no second-pass votes, no diversity, no floors)."""
    plain = replace(
        params, use_mmr=False, use_graph=False, use_session=False, abstain=False, trim_weak_hits=False
    )
    first = plan_recall(replace(req, limit=n, budget_tokens=None), got, now, None, plain)
    return [h.id for h in first.hits]


def _with_rerank(
    pool: gathering.Pool, req: RecallRequest, reranker: Reranker, ids: Sequence[str]
) -> gathering.Pool:
    """Cross-encoder scores for the first pass's best candidates (a failing model is skipped)."""
    if not ids:
        return pool
    try:
        scores = reranker.rerank(req.text, [pool.got.memories[i].content for i in ids])
    except Exception as exc:  # reranking is an optional refinement; never fail a recall for it
        log.warning("reranking failed: %s", exc)
        return pool
    return replace(pool, got=replace(pool.got, reranked=dict(zip(ids, scores, strict=True))))


def default_params(cx: Cortex) -> RecallParams:
    """The recall parameters for people: settings applied, hits without evidence left out."""
    floor = cx.settings.recall_abstain_floor
    mmr_lambda = cx.settings.recall_mmr_lambda
    return RecallParams(
        use_intent=cx.settings.recall_intent_weights,
        use_mmr=mmr_lambda < 1.0,
        mmr_lambda=mmr_lambda,
        trim_weak_hits=True,
        vector_floor=floor if floor > 0 else DEFAULT_VECTOR_FLOOR,
    )


def recall(
    cx: Cortex,
    req: RecallRequest,
    scope: str = "all",
    params: RecallParams | None = None,
    record: bool = True,
) -> RecallResult:
    """Hybrid recall over the project and global stores."""
    started = time.perf_counter()
    req = replace(req, limit=max(0, min(req.limit, MAX_LIMIT)))
    if params is None:
        params = default_params(cx)
    stores: list[MemoryStore] = list(cx.read_stores(ScopeFilter(scope)))
    link = cx.team() if scope == "all" else None
    if link is None or not link.configured:
        return _recall(cx, req, stores, params, record, started, "off", [])
    if link.store is not None:
        try:
            return _recall(cx, req, [*stores, link.store], params, record, started, "merged", [])
        except CortexError as exc:  # the team store went away mid-recall: answer from this machine
            cx.drop_team(exc.message)
    note = f"{cx.team().note or 'team store unreachable'}; results from the local stores only"
    return _recall(cx, req, stores, params, record, started, "unreachable", [note])


def _recall(
    cx: Cortex,
    req: RecallRequest,
    stores: list[MemoryStore],
    params: RecallParams,
    record: bool,
    started: float,
    team: str,
    team_notes: list[str],
) -> RecallResult:
    if not stores:
        return RecallResult(
            req.text,
            (),
            SearchMode.KEYWORD_ONLY,
            ("no memories stored yet", *team_notes),
            True,
            "nothing in memory yet",
            "plain",
            team=team,
        )
    candidates = max(cx.settings.recall_candidates, 2 * req.limit)
    pool = gathering.gather(cx, req, stores, params, candidates)
    now = cx.now()
    if params.use_prf and pool.query_vector is not None:
        feedback = _first_pass(req, pool.got, now, params, params.prf_docs)
        pool = gathering.with_feedback(
            pool, stores, req, feedback, params.prf_weight, candidates, params.use_chunks
        )
    if params.use_graph and params.graph_weight > 0:
        pool = gathering.with_edges(pool, stores, _first_pass(req, pool.got, now, params, params.graph_seeds))
    reranker = cx.reranker() if params.use_rerank else None
    if reranker is not None:
        pool = _with_rerank(pool, req, reranker, _first_pass(req, pool.got, now, params, RERANK_DEPTH))
    gathered_at = time.perf_counter()
    plan = plan_recall(req, pool.got, now, gathering.similarity(pool), params)
    got, notes, mode = pool.got, [*pool.notes, *team_notes], pool.mode
    hits = _expand(stores, plan, got) if plan.hits else []
    stale = stale_marks(cx, stores, hits)
    if record and hits:
        try:
            _apply_access(cx, hits)
        except Exception as exc:  # access stats are a nicety; never fail a recall for them
            log.warning("could not record access: %s", exc)
    done = time.perf_counter()
    return RecallResult(
        req.text,
        tuple(hits),
        mode,
        tuple(notes),
        plan.abstained,
        plan.reason,
        plan.intent,
        plan.dropped_by_budget,
        {"gather": (gathered_at - started) * 1000, "total": (done - started) * 1000},
        {"best_cosine": plan.best_cosine, "best_coverage": plan.best_coverage},
        team,
        stale,
    )
