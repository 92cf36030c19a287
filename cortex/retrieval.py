"""The recall use case: gather candidates from both stores, let the core rank them, record access."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from cortex.core import graph, query
from cortex.core.model import EdgeType, Hit, Memory, Scope, Status
from cortex.core.recall import Gathered, RecallParams, RecallPlan, RecallRequest, plan_recall
from cortex.core.text import embedding_text, jaccard, word_set
from cortex.engine import Cortex
from cortex.shell import vectors
from cortex.shell.store import Store

log = logging.getLogger("cortex.recall")

CANDIDATES_PER_LIST = 50
MAX_LIMIT = 100
SEE_ALSO_DEPTH = 2
SEE_ALSO_MAX = 5


@dataclass(frozen=True, slots=True)
class RecallResult:
    """What recall found, how, and what it could not do."""

    query: str
    hits: tuple[Hit, ...]
    mode: str  # "hybrid" | "keyword-only"
    notes: tuple[str, ...]
    abstained: bool
    reason: str
    intent: str
    dropped_by_budget: int = 0
    timings_ms: dict[str, float] = field(default_factory=dict)


def _statuses(req: RecallRequest) -> tuple[str, ...]:
    base = (Status.ACTIVE.value, Status.ARCHIVED.value)
    return (*base, Status.SUPERSEDED.value) if req.include_superseded else base


def _query_vector(cx: Cortex, req: RecallRequest, stores: Sequence[Store]) -> tuple[object, str]:
    """Embed the query when some store has vectors and an embedder is available."""
    if not any(s.vectors for s in stores):
        driver_note = stores[0].conn.driver.note if stores else "no store"
        return None, f"keyword-only: vector search unavailable ({driver_note})"
    key = cx.embedder_key()
    if key is not None and not any(
        s.vectors and vectors.existing_index(s, key) is not None for s in stores
    ):
        return None, "keyword-only: no memory has been embedded yet (run `cortex backfill`)"
    choice = cx.query_embedder()
    if choice.embedder is None:
        return None, f"keyword-only: {choice.note}"
    mem_type = req.types[0] if len(req.types) == 1 else None
    text = embedding_text(req.text, mem_type, cx.project_name)
    return (choice.embedder, choice.embedder.embed_query(text)), choice.note


def gather(
    cx: Cortex, req: RecallRequest, stores: Sequence[Store]
) -> tuple[Gathered, list[str], dict[str, object], str]:
    """Lexical and vector candidates from every store, plus the memories they name."""
    notes: list[str] = []
    statuses = _statuses(req)
    match = query.fts_match_sql(req.text)
    lexical: dict[str, list[tuple[str, float]]] = {}
    memories: dict[str, Memory] = {}
    raw_vectors: dict[str, object] = {}
    for store in stores:
        if match:
            ranked = store.fts_search(match, CANDIDATES_PER_LIST, statuses)
            if ranked:
                lexical[f"bm25:{store.scope.value}"] = ranked
    embedded, note = _query_vector(cx, req, stores)
    vector: list[tuple[str, float]] = []
    if embedded is not None:
        embedder, qvec = embedded  # type: ignore[misc]
        packed = vectors.pack([float(x) for x in qvec])
        for store in stores:
            found = vectors.existing_index(store, embedder.key) if store.vectors else None
            if found is None:
                continue
            table = found[0]
            near = vectors.knn(store, table, packed, CANDIDATES_PER_LIST)
            rows = store.ids_for_rows([n for n, _ in near])
            keep = [(n, d) for n, d in near if n in rows and rows[n][1] in statuses]
            vector.extend((rows[n][0], 1.0 - d) for n, d in keep)
            for n, blob in vectors.read_vectors(store, table, [n for n, _ in keep]).items():
                raw_vectors[rows[n][0]] = blob
        vector.sort(key=lambda item: -item[1])
        pending = sum(
            vectors.count_pending(s, (vectors.existing_index(s, embedder.key) or ("",))[0])
            for s in stores
        )
        if pending:
            notes.append(f"{pending} memories are not embedded yet (run `cortex backfill`)")
    notes.insert(0, note)
    for store in stores:
        ids = [mid for mid, _ in lexical.get(f"bm25:{store.scope.value}", [])]
        ids += [mid for mid, _ in vector]
        memories.update(store.get_many(ids))
    mode = "hybrid" if embedded is not None else "keyword-only"
    return Gathered(lexical, vector, memories), notes, raw_vectors, mode


def _similarity(got: Gathered, raw: dict[str, object]) -> Callable[[str, str], float]:
    """Pairwise similarity for MMR: cosine of stored vectors, else word Jaccard."""
    cache: dict[tuple[str, str], float] = {}
    words = {mid: word_set(m.content) for mid, m in got.memories.items()}
    unit: dict[str, object] = {}
    if raw:
        import numpy as np

        for mid, blob in raw.items():
            unit[mid] = np.frombuffer(blob, dtype="<f4")  # type: ignore[arg-type]

    def sim(a: str, b: str) -> float:
        key = (a, b) if a < b else (b, a)
        if key not in cache:
            if a in unit and b in unit:
                cache[key] = float(unit[a] @ unit[b])  # type: ignore[operator]
            else:
                cache[key] = jaccard(words.get(a, frozenset()), words.get(b, frozenset()))
        return cache[key]

    return sim


def _expand(stores: Sequence[Store], plan: RecallPlan, got: Gathered) -> list[Hit]:
    """Attach raw code (`source_of`) and related memories to depth 2 ("see also")."""
    by_scope = {s.scope: s for s in stores}
    hits: list[Hit] = []
    shown = {h.id for h in plan.hits}
    for ranked in plan.hits:
        memory = got.memories[ranked.id]
        store = by_scope.get(memory.scope) or stores[0]
        edges = store.edges([ranked.id], status="active")
        code_ids = [
            e.target for e in edges if e.type == EdgeType.SOURCE_OF and e.source == ranked.id
        ]
        code_ids += [
            e.source for e in edges if e.type == EdgeType.SOURCE_OF and e.target == ranked.id
        ]
        code = tuple(m for m in store.get_many(code_ids).values() if m.id != ranked.id)
        near = graph.traverse(
            ranked.id, _edges_to_depth(store, ranked.id), SEE_ALSO_DEPTH, direction="both"
        )
        see_also = tuple(
            nid for _, nid, e in near if nid not in shown and e.type != EdgeType.SOURCE_OF
        )[:SEE_ALSO_MAX]
        hits.append(Hit(memory, ranked.score, memory.scope, dict(ranked.signals), code, see_also))
    return hits


def _edges_to_depth(store: Store, start: str) -> list:  # type: ignore[type-arg]
    """Active edges within two hops of `start` (two small queries instead of the whole graph)."""
    first = store.edges([start], status="active")
    ring = {e.source for e in first} | {e.target for e in first}
    second = store.edges(sorted(ring - {start}), status="active") if ring else []
    return list({(e.source, e.target, e.type): e for e in [*first, *second]}.values())


def _apply_access(cx: Cortex, hits: Sequence[Hit]) -> None:
    """Count the access and restore archived memories that were recalled."""
    now = cx.now()
    for scope in (Scope.PROJECT, Scope.GLOBAL):
        mine = [h.memory for h in hits if h.memory.scope == scope]
        if not mine:
            continue
        store = cx.store(scope, create=False)
        if store is None or store.conn.readonly:
            continue
        with store.transaction():
            store.record_access([m.id for m in mine], now, cx.actor)
            for m in mine:
                if m.status == Status.ARCHIVED:
                    current = store.get(m.id)
                    if current is not None and current.status == Status.ARCHIVED:
                        store.update_memory(
                            current,
                            replace(
                                current,
                                status=Status.ACTIVE,
                                status_changed=now,
                                low_since=None,
                                updated=now,
                            ),
                            cx.actor,
                            now,
                            "restore",
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
    stores = cx.read_stores(scope)
    if params is None:
        params = RecallParams(mmr_lambda=cx.settings.recall_mmr_lambda)
    if not stores:
        return RecallResult(
            req.text,
            (),
            "keyword-only",
            ("no memories stored yet",),
            True,
            "nothing in memory yet",
            "plain",
        )
    got, notes, raw, mode = gather(cx, req, stores)
    gathered_at = time.perf_counter()
    plan = plan_recall(req, got, cx.now(), _similarity(got, raw), params)
    hits = _expand(stores, plan, got) if plan.hits else []
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
    )
