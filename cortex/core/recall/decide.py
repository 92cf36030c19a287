"""Recall decisions: filter, fuse, add context, diversify, abstain and bound the candidates. Pure."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from cortex.core import budget
from cortex.core.model import Edge, Hit, Memory, SearchMode, Status
from cortex.core.recall import evidence, expand, query, ranking
from cortex.core.recall.timeref import parse_time_window

# Below these, the best evidence is too weak to show anything ("nothing relevant in memory").
# Calibrated by `benchmarks/retrieval/calibrate.py` (results/retrieval-abstention.md): the
# highest vector floor that turns away at most 2% of answerable questions whatever the keyword
# evidence. LongMemEval's answerable questions reach a best cosine of only ~0.20 (a question about
# one detail of a long session); unrelated questions to a dev-notes store sit near 0.1.
DEFAULT_VECTOR_FLOOR = 0.20
DEFAULT_LEXICAL_FLOOR = 0.34
# A hit shown to a person needs its own evidence: a cosine this close to the query's best (or
# keyword coverage). Keeps "the one good answer plus seven unrelated notes" down to the answer.
DEFAULT_HIT_MARGIN = 0.15
RECENCY_HALF_LIFE_DAYS = 30.0
WINDOW_HALF_LIFE_DAYS = 7.0
MMR_POOL_FACTOR = 2  # MMR picks from the best limit * this: deeper ids would not climb anyway


@dataclass(frozen=True, slots=True)
class RecallRequest:
    """What the user asked for."""

    text: str
    limit: int = 8
    budget_tokens: int | None = None
    types: tuple[str, ...] = ()
    branch: str | None = None
    include_superseded: bool = False


@dataclass(frozen=True, slots=True)
class RecallParams:
    """Tunables of the ranking; every feature can be switched off for ablations.

    Weights are in "top votes": 1.0 counts as much as a first place in one ranked list.
    """

    rrf_k: int = 60
    use_lexical: bool = True  # FTS5 BM25 candidates
    use_vector: bool = True  # vector KNN candidates
    use_chunks: bool = True  # extra vectors of long memories' later windows, max-pooled
    query_prefix: bool = False  # embed the query with the `[project:x]` prefix (measured: hurts)
    use_intent: bool = False  # intent-specific fusion weights (measured: no gain, LoCoMo-session MRR -0.07)
    use_recency: bool = True  # time signal: closeness to a named period, else freshness
    recency_half_life_days: float = RECENCY_HALF_LIFE_DAYS
    window_weight: float = 0.5
    window_half_life_days: float = WINDOW_HALF_LIFE_DAYS
    use_priority: bool = True
    use_centrality: bool = False  # in-degree centrality as a signal (measured: no gain)
    use_session: bool = True  # siblings from one session vouch for each other
    session_weight: float = 0.3
    use_graph: bool = False  # personalized PageRank from first-pass hits (measured: no gain)
    graph_weight: float = 0.3
    graph_seeds: int = 10
    use_prf: bool = False  # feedback on the query vector, second KNN (measured: no gain)
    prf_docs: int = 3
    prf_weight: float = 0.5
    use_rerank: bool = True  # cross-encoder scores of the best candidates, when a model is cached
    use_mmr: bool = False  # diversity at the cost of relevance (measured: recall_all@5 0.88 -> 0.28)
    mmr_lambda: float = 0.7
    mmr_threshold: float = 0.0  # similarity below this is not redundancy (0: plain MMR)
    vector_floor: float = DEFAULT_VECTOR_FLOOR
    lexical_floor: float = DEFAULT_LEXICAL_FLOOR
    abstain: bool = True  # nothing at all when the best evidence is below both floors
    trim_weak_hits: bool = False  # also drop each hit whose own evidence is below both floors
    hit_margin: float = DEFAULT_HIT_MARGIN  # with trim_weak_hits: cosine this far below the best is weak


@dataclass(frozen=True, slots=True)
class Gathered:
    """Candidates from the stores: ranked lexical lists per store, one merged vector list."""

    lexical: Mapping[str, Sequence[tuple[str, float]]]  # list name -> (id, bm25) best first
    vector: Sequence[tuple[str, float]]  # (id, cosine similarity) best first
    memories: Mapping[str, Memory]
    reranked: Mapping[str, float] | None = None  # id -> reranker score in [0, 1]
    edges: Sequence[Edge] = ()  # active edges around the candidates (graph expansion)


@dataclass(frozen=True, slots=True)
class RankedHit:
    id: str
    score: float
    signals: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RecallPlan:
    hits: tuple[RankedHit, ...]
    abstained: bool
    reason: str
    intent: str
    dropped_by_budget: int = 0
    considered: int = 0
    best_cosine: float | None = None  # the evidence the abstention floors were applied to
    best_coverage: float = 0.0


@dataclass(frozen=True, slots=True)
class RecallResult:
    """What a recall found, how, and what it could not do."""

    query: str
    hits: tuple[Hit, ...]
    mode: SearchMode
    notes: tuple[str, ...]
    abstained: bool
    reason: str
    intent: str
    dropped_by_budget: int = 0
    timings_ms: dict[str, float] = field(default_factory=dict)
    evidence: dict[str, float | None] = field(default_factory=dict)  # what the floors were applied to
    team: str = "off"  # the team store: "merged", "unreachable" (local results only) or "off"
    stale: dict[str, str] = field(default_factory=dict)  # hit id -> "may be stale: ..." / "stale: ..."


def _allowed(m: Memory, req: RecallRequest) -> bool:
    if m.status == Status.PRUNED:
        return False
    if m.status == Status.SUPERSEDED and not req.include_superseded:
        return False
    if req.types and m.type.value not in req.types:
        return False
    if req.branch:
        tags = {t.lower() for t in m.tags}
        if m.source.branch != req.branch and f"branch:{req.branch}".lower() not in tags:
            return False
    return True


def _lists(
    req: RecallRequest, got: Gathered, params: RecallParams, weights: query.FusionWeights
) -> tuple[dict[str, list[str]], dict[str, float]]:
    allowed = {mid for mid, m in got.memories.items() if _allowed(m, req)}
    lists: dict[str, list[str]] = {}
    list_weights: dict[str, float] = {}
    if params.use_lexical:
        for name, ranked in got.lexical.items():
            ids = [mid for mid, _ in ranked if mid in allowed]
            if ids:
                lists[name] = ids
                list_weights[name] = weights.bm25
    vec_ids = [mid for mid, _ in got.vector if mid in allowed] if params.use_vector else []
    if vec_ids:
        lists["vector"] = vec_ids
        list_weights["vector"] = weights.vector
    return lists, list_weights


def _signals(
    req: RecallRequest,
    got: Gathered,
    now: datetime,
    params: RecallParams,
    weights: query.FusionWeights,
    candidates: set[str],
) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Per-id [0,1] signals and their weights: time, priority, centrality, reranker."""
    mems = got.memories
    extra: dict[str, dict[str, float]] = {}
    extra_weights: dict[str, float] = {}
    if params.use_recency:
        window = parse_time_window(req.text, now)
        if window is not None:
            half_life = params.window_half_life_days
            extra["time"] = {
                mid: ranking.score_time_window(mems[mid].created, window, half_life) for mid in candidates
            }
            extra_weights["time"] = params.window_weight
        elif weights.recency:
            half_life = params.recency_half_life_days
            extra["time"] = {
                mid: ranking.score_recency(mems[mid].created, now, half_life) for mid in candidates
            }
            extra_weights["time"] = weights.recency
    if params.use_priority and weights.priority:
        extra["priority"] = {mid: (mems[mid].priority / 10 + mems[mid].confidence) / 2 for mid in candidates}
        extra_weights["priority"] = weights.priority
    if params.use_centrality and weights.centrality:
        extra["centrality"] = {mid: mems[mid].centrality for mid in candidates}
        extra_weights["centrality"] = weights.centrality
    if got.reranked:
        extra["rerank"] = {mid: got.reranked.get(mid, 0.0) for mid in candidates}
        extra_weights["rerank"] = weights.bm25 + weights.vector
    return extra, extra_weights


def _second_pass(
    req: RecallRequest,
    got: Gathered,
    params: RecallParams,
    fused: list[tuple[str, float]],
    k: int,
) -> dict[str, float]:
    """Context votes from the first pass: session siblings and graph neighbours."""
    relevance = dict(fused)
    bonus: dict[str, float] = {}
    if params.use_session and params.session_weight > 0:
        sessions = {mid: got.memories[mid].source.session_id for mid in relevance}
        for mid, value in expand.score_session_context(relevance, sessions).items():
            bonus[mid] = bonus.get(mid, 0.0) + params.session_weight * value / (k + 1)
    if params.use_graph and params.graph_weight > 0 and got.edges:
        seeds = dict(fused[: params.graph_seeds])
        near = expand.rank_graph_neighbours(seeds, got.edges, len(got.memories))
        allowed = {mid for mid, _ in near if mid in got.memories and _allowed(got.memories[mid], req)}
        for rank, (mid, _) in enumerate((n for n in near if n[0] in allowed), start=1):
            bonus[mid] = bonus.get(mid, 0.0) + params.graph_weight / (k + rank)
    return bonus


def plan_recall(
    req: RecallRequest,
    got: Gathered,
    now: datetime,
    similarity: Callable[[str, str], float] | None = None,
    params: RecallParams = RecallParams(),
) -> RecallPlan:
    """Rank gathered candidates into at most `limit` hits under the token budget, or abstain."""
    intent = query.classify_intent(req.text) if params.use_intent else query.QueryIntent.PLAIN
    weights = query.intent_weights(intent)
    lists, list_weights = _lists(req, got, params, weights)
    if not lists:
        return RecallPlan((), True, "no memory matched the query", intent.value)

    candidates = {mid for ids in lists.values() for mid in ids}
    extra, extra_weights = _signals(req, got, now, params, weights, candidates)
    k = params.rrf_k
    fused = ranking.fuse_rrf(lists, list_weights, k=k, extra=extra, extra_weights=extra_weights)
    bonus = _second_pass(req, got, params, fused, k)
    if bonus:
        scores = dict(fused)
        for mid, value in bonus.items():
            scores[mid] = scores.get(mid, 0.0) + value
        position = {mid: i for i, (mid, _) in enumerate(fused)}
        fused = sorted(scores.items(), key=lambda kv: (-kv[1], position.get(kv[0], len(position))))
        extra["context"] = bonus

    # Keyword coverage reads whole memory texts: only worth it when a floor will look at it.
    needed = params.abstain or params.trim_weak_hits
    best_cosine, best_coverage = _best_evidence(req, got, lists, candidates) if needed else (None, 0.0)
    if params.abstain and _weak(best_cosine, best_coverage, params):
        return RecallPlan(
            (),
            True,
            "nothing relevant in memory (best evidence below the floor)",
            intent.value,
            considered=len(candidates),
            best_cosine=best_cosine,
            best_coverage=best_coverage,
        )

    relevance = dict(fused)
    cosine = dict(got.vector)
    limit = max(req.limit, 1)
    order = [mid for mid, _ in fused]
    if params.trim_weak_hits:
        order = _strong_enough(order, req, got, params, best_cosine, limit * MMR_POOL_FACTOR)
    if params.use_mmr and similarity is not None and len(order) > 1:
        pool = order[: limit * MMR_POOL_FACTOR]
        order = ranking.rank_mmr(pool, relevance, similarity, params.mmr_lambda, limit, params.mmr_threshold)
    order = order[: max(req.limit, 0)]
    dropped = 0
    if req.budget_tokens is not None:
        packed = budget.pack(
            order,
            lambda mid: budget.estimate_tokens(got.memories[mid].content) + 12,
            req.budget_tokens,
        )
        order, dropped = list(packed.kept), packed.dropped
    positions = {name: {mid: i for i, mid in enumerate(ids, 1)} for name, ids in lists.items()}
    hits = tuple(
        RankedHit(
            mid,
            relevance[mid],
            {
                **{name: float(pos[mid]) for name, pos in positions.items() if mid in pos},
                **({"cosine": cosine[mid]} if mid in cosine else {}),
                **{name: values[mid] for name, values in extra.items() if mid in values},
            },
        )
        for mid in order
    )
    return RecallPlan(hits, False, "", intent.value, dropped, len(candidates), best_cosine, best_coverage)


def _text(m: Memory) -> str:
    return m.content + " " + m.summary


def _strong_enough(
    order: Sequence[str],
    req: RecallRequest,
    got: Gathered,
    params: RecallParams,
    best_cosine: float | None,
    wanted: int,
) -> list[str]:
    """The first `wanted` ids with evidence of their own: a cosine above the floor and not far
    below the query's best, or enough keyword coverage. Padding is left out."""
    floor = params.vector_floor
    if best_cosine is not None:
        floor = max(floor, best_cosine - params.hit_margin)
    terms = query.content_words(req.text)
    text_of = lambda mid: _text(got.memories[mid])  # noqa: E731
    return evidence.rank_with_evidence(
        order, dict(got.vector), text_of, terms, floor, params.lexical_floor, wanted
    )


def _best_evidence(
    req: RecallRequest, got: Gathered, lists: Mapping[str, Sequence[str]], candidates: set[str]
) -> tuple[float | None, float]:
    """The best cosine among the candidates and the best keyword coverage of the top keyword hits."""
    cosine = dict(got.vector)
    best_vec = max((cosine[m] for m in candidates if m in cosine), default=None)
    terms = query.content_words(req.text)
    best_lex = max(
        (
            evidence.score_coverage(terms, _text(got.memories[mid]))
            for name, ids in lists.items()
            if name != "vector"
            for mid in ids[:5]
        ),
        default=0.0,
    )
    return best_vec, best_lex


def _weak(cosine: float | None, coverage: float, params: RecallParams) -> bool:
    return evidence.is_weak(cosine, coverage, params.vector_floor, params.lexical_floor)
