"""Recall decisions: filter, fuse, diversify, abstain and bound the candidates the shell gathered. Pure."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from cortex.core import budget, query, ranking
from cortex.core.model import Memory, Status
from cortex.core.text import word_set

# Below these, the best evidence is too weak to show anything ("nothing relevant in memory").
# Calibrated on LongMemEval's abstention questions (benchmarks/results/retrieval.md).
DEFAULT_VECTOR_FLOOR = 0.30
DEFAULT_LEXICAL_FLOOR = 0.34
RECENCY_HALF_LIFE_DAYS = 30.0


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
    """Tunables of the ranking; every feature can be switched off for ablations."""

    rrf_k: int = 60
    mmr_lambda: float = 0.7
    use_mmr: bool = True
    use_intent: bool = True
    use_recency: bool = True
    use_priority: bool = True
    use_centrality: bool = True
    vector_floor: float = DEFAULT_VECTOR_FLOOR
    lexical_floor: float = DEFAULT_LEXICAL_FLOOR
    abstain: bool = True
    recency_half_life_days: float = RECENCY_HALF_LIFE_DAYS


@dataclass(frozen=True, slots=True)
class Gathered:
    """Candidates from the stores: ranked lexical lists per store, one merged vector list."""

    lexical: Mapping[str, Sequence[tuple[str, float]]]  # list name -> (id, bm25) best first
    vector: Sequence[tuple[str, float]]  # (id, cosine similarity) best first
    memories: Mapping[str, Memory]
    reranked: Mapping[str, float] | None = None  # id -> reranker score in [0, 1]


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


def lexical_coverage(text: str, content: str) -> float:
    """Share of the query's content words (stopwords dropped) that appear in the memory."""
    terms = query.content_words(text)
    if not terms:
        return 0.0
    have = word_set(content)
    stems = {w[:5] for w in have}
    hit = sum(1 for t in terms if t in have or t[:5] in stems)
    return hit / len(terms)


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
    allowed = {mid for mid, m in got.memories.items() if _allowed(m, req)}
    lists: dict[str, list[str]] = {}
    list_weights: dict[str, float] = {}
    for name, ranked in got.lexical.items():
        ids = [mid for mid, _ in ranked if mid in allowed]
        if ids:
            lists[name] = ids
            list_weights[name] = weights.bm25
    vec_ids = [mid for mid, _ in got.vector if mid in allowed]
    if vec_ids:
        lists["vector"] = vec_ids
        list_weights["vector"] = weights.vector
    if not lists:
        return RecallPlan((), True, "no memory matched the query", intent.value)

    candidates = {mid for ids in lists.values() for mid in ids}
    extra: dict[str, dict[str, float]] = {}
    extra_weights: dict[str, float] = {}
    if params.use_recency:
        extra["recency"] = {
            mid: ranking.score_recency(
                got.memories[mid].created, now, params.recency_half_life_days
            )
            for mid in candidates
        }
        extra_weights["recency"] = weights.recency
    if params.use_priority:
        extra["priority"] = {
            mid: (got.memories[mid].priority / 10 + got.memories[mid].confidence) / 2
            for mid in candidates
        }
        extra_weights["priority"] = weights.priority
    if params.use_centrality:
        extra["centrality"] = {mid: got.memories[mid].centrality for mid in candidates}
        extra_weights["centrality"] = weights.centrality
    if got.reranked:
        extra["rerank"] = {mid: got.reranked.get(mid, 0.0) for mid in candidates}
        extra_weights["rerank"] = weights.bm25 + weights.vector
    fused = ranking.fuse_rrf(
        lists, list_weights, k=params.rrf_k, extra=extra, extra_weights=extra_weights
    )

    cosine = dict(got.vector)
    best_vec = max((cosine[m] for m in candidates if m in cosine), default=None)
    best_lex = max(
        (
            lexical_coverage(req.text, got.memories[mid].content + " " + got.memories[mid].summary)
            for name, ids in lists.items()
            if name != "vector"
            for mid in ids[:5]
        ),
        default=0.0,
    )
    if (
        params.abstain
        and (best_vec is None or best_vec < params.vector_floor)
        and (best_lex < params.lexical_floor)
    ):
        return RecallPlan(
            (),
            True,
            "nothing relevant in memory (best evidence below the floor)",
            intent.value,
            considered=len(candidates),
        )

    relevance = dict(fused)
    order = [mid for mid, _ in fused]
    if params.use_mmr and similarity is not None and len(order) > 1:
        order = ranking.rank_mmr(order, relevance, similarity, params.mmr_lambda, max(req.limit, 1))
    order = order[: max(req.limit, 0)]
    dropped = 0
    if req.budget_tokens is not None:
        packed = budget.pack(
            order,
            lambda mid: budget.estimate_tokens(got.memories[mid].content) + 12,
            req.budget_tokens,
        )
        order, dropped = list(packed.kept), packed.dropped
    hits = tuple(
        RankedHit(
            mid,
            relevance[mid],
            {
                **{name: float(ids.index(mid) + 1) for name, ids in lists.items() if mid in ids},
                **({"cosine": cosine[mid]} if mid in cosine else {}),
                **{k: v[mid] for k, v in extra.items() if mid in v},
            },
        )
        for mid in order
    )
    return RecallPlan(hits, False, "", intent.value, dropped, len(candidates))
