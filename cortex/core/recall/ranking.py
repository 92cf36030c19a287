"""Rank fusion (RRF), recency and time-window scores, MMR diversity, briefing order. Pure."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import astuple, dataclass
from datetime import datetime

from cortex.core.model import Memory, MemoryType
from cortex.core.recall.timeref import TimeWindow

RRF_K = 60  # the constant from the original RRF paper; damps the gap between top ranks
SECONDS_PER_DAY = 86_400.0


def fuse_rrf(
    lists: Mapping[str, Sequence[str]],
    weights: Mapping[str, float],
    k: int = RRF_K,
    extra: Mapping[str, Mapping[str, float]] | None = None,
    extra_weights: Mapping[str, float] | None = None,
) -> list[tuple[str, float]]:
    """Weighted reciprocal rank fusion of ranked id lists plus optional per-id [0,1] signals.

    An id at 1-based rank r in list L scores weights[L] / (k + r) (repeats in a list are
    dropped before ranking; a list missing from `weights` has weight 1). A signal value v of
    extra[S][id] adds extra_weights[S] * v / (k + 1): a signal of 1 with weight 1 counts like a
    first place in one list, so list and signal weights live on one scale. Signals only score
    ids that some list returned. Output: every listed id exactly once, best first; ties go to
    the id seen at the better rank (earlier list on equal ranks), then to the smaller id.
    """
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    if any(w < 0 for w in [*weights.values(), *(extra_weights or {}).values()]):
        raise ValueError("fusion weights must be >= 0")
    scores: dict[str, float] = {}
    first_seen: dict[str, tuple[int, int]] = {}
    for list_index, (name, ids) in enumerate(lists.items()):
        weight = weights.get(name, 1.0)
        for rank, item in enumerate(dict.fromkeys(ids), start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
            first_seen[item] = min(first_seen.get(item, (rank, list_index)), (rank, list_index))
    signal_weights = extra_weights or {}
    for signal, values in (extra or {}).items():
        weight = signal_weights.get(signal, 0.0) / (k + 1)
        for item, value in values.items():
            if item in scores:
                scores[item] += weight * _clamp01(value)
    return sorted(scores.items(), key=lambda kv: (-kv[1], first_seen[kv[0]], kv[0]))


def _clamp01(value: float) -> float:
    return min(max(value, 0.0), 1.0) if math.isfinite(value) else 0.0


def _age_days(created: datetime, now: datetime) -> float:
    return (now - created).total_seconds() / SECONDS_PER_DAY


def score_recency(created: datetime, now: datetime, half_life_days: float) -> float:
    """Exponential freshness in [0,1]: 1 for now or the future, 0.5 one half-life ago."""
    if half_life_days <= 0:
        raise ValueError(f"half_life_days must be > 0, got {half_life_days}")
    return math.pow(0.5, max(_age_days(created, now), 0.0) / half_life_days)


def score_time_window(when: datetime, window: TimeWindow, half_life_days: float = 7.0) -> float:
    """How close `when` is to a queried period: 1 inside it, halving every half-life outside."""
    if half_life_days <= 0:
        raise ValueError(f"half_life_days must be > 0, got {half_life_days}")
    if window.start <= when < window.end:
        return 1.0
    gap = _age_days(when, window.start) if when < window.start else _age_days(window.end, when)
    return math.pow(0.5, gap / half_life_days)


Similarity = Callable[[str, str], float] | Mapping[tuple[str, str], float]


def _similarity_fn(similarity: Similarity) -> Callable[[str, str], float]:
    if callable(similarity):
        return similarity
    table = similarity
    return lambda a, b: table.get((a, b), table.get((b, a), 0.0))


def rank_mmr(
    ids: Sequence[str],
    relevance: Mapping[str, float],
    similarity: Similarity,
    lambda_: float,
    limit: int,
    threshold: float = 0.0,
) -> list[str]:
    """Maximal marginal relevance: pick up to `limit` ids, trading relevance for novelty.

    Relevance (missing = 0) is min-max scaled to [0,1] over the candidates so `lambda_` means
    the same whatever the scorer's scale; each step takes the id maximising
    lambda_ * relevance - (1 - lambda_) * redundancy, where redundancy is the max similarity to
    the ids already taken above `threshold`, rescaled to [0,1] (threshold 0: plain MMR; 0.9:
    only near-duplicates count). Ties go to the earlier id; lambda_ = 1 is plain relevance
    order. `similarity` is a function or a mapping of id pairs in either order (missing = 0);
    duplicate ids count once.
    """
    if not 0.0 <= lambda_ <= 1.0:
        raise ValueError(f"lambda_ must be in [0, 1], got {lambda_}")
    if not 0.0 <= threshold < 1.0:
        raise ValueError(f"threshold must be in [0, 1), got {threshold}")
    pool = list(dict.fromkeys(ids))
    if limit <= 0 or not pool:
        return []
    raw = {i: relevance.get(i, 0.0) for i in pool}
    low, high = min(raw.values()), max(raw.values())
    rel = {i: (r - low) / (high - low) if high > low else 1.0 for i, r in raw.items()}
    sim = _similarity_fn(similarity)
    max_sim = dict.fromkeys(pool, 0.0)  # to the nearest id already taken
    chosen: list[str] = []
    while pool and len(chosen) < limit:
        # Raw relevance breaks the ties scaling can create by rounding (and, with lambda_ = 0,
        # makes the first pick the most relevant); max() keeps the earliest id among equals.
        best = max(pool, key=lambda i: (lambda_ * rel[i] - (1.0 - lambda_) * max_sim[i], raw[i]))
        chosen.append(best)
        pool.remove(best)
        for other in pool:
            redundancy = max(sim(other, best) - threshold, 0.0) / (1.0 - threshold)
            max_sim[other] = max(max_sim[other], redundancy)
    return chosen


@dataclass(frozen=True, slots=True)
class BriefingWeights:
    """Weights of the SPEC §4 briefing rank; the first five are normalised to sum to 1."""

    confidence: float = 0.5
    priority: float = 0.2
    centrality: float = 0.15
    access: float = 0.15
    recency: float = 0.0  # off by default: the lifecycle already decays confidence
    recency_half_life_days: float = 30.0
    branch_boost: float = 0.1  # added for memories of the current branch (SPEC §4)

    def __post_init__(self) -> None:
        if any(w < 0 for w in astuple(self)) or self.recency_half_life_days <= 0:
            raise ValueError(f"briefing weights must be >= 0 (half-life > 0): {self}")
        if self.confidence + self.priority + self.centrality + self.access + self.recency == 0:
            raise ValueError("at least one briefing weight must be positive")


def log_access(memory: Memory) -> float:
    """log(access count + 1): the access signal before it is scaled by the largest one."""
    return math.log(max(memory.access_count, 0) + 1)


def score_briefing(
    memory: Memory,
    weights: BriefingWeights,
    max_log_access: float,
    now: datetime | None = None,
    branch: str | None = None,
) -> float:
    """One memory's briefing rank: the SPEC §4 formula with normalised weights, plus boosts."""
    w = weights
    total = w.confidence + w.priority + w.centrality + w.access + w.recency
    access = log_access(memory) / max_log_access if max_log_access else 0.0
    fresh = score_recency(memory.updated, now, w.recency_half_life_days) if now else 0.0
    # `_clamp01` only off [0, 1]: a briefing render ranks ~5,000 memories (half its cost here).
    c, p, k = memory.confidence, memory.priority / 10, memory.centrality
    rank = (
        w.confidence * (c if 0.0 <= c <= 1.0 else _clamp01(c))
        + w.priority * (p if 0.0 <= p <= 1.0 else _clamp01(p))
        + w.centrality * (k if 0.0 <= k <= 1.0 else _clamp01(k))
        + w.access * access
        + w.recency * fresh
    ) / total
    on_branch = branch is not None and (memory.source.branch == branch or branch in memory.tags)
    return rank + (w.branch_boost if on_branch else 0.0)


def rank_for_briefing(
    memories: Sequence[Memory],
    weights: BriefingWeights = BriefingWeights(),
    now: datetime | None = None,
    branch: str | None = None,
    max_log_access: float | None = None,
) -> list[Memory]:
    """Order memories for the briefing: pinned first, then decisions, then the rest, by rank.

    Rank is `score_briefing`; access counts are scaled by the largest log(access+1) among
    `memories` (or `max_log_access`, that of a larger set these memories were drawn from). `now`
    is needed only when `weights.recency` > 0; `branch` boosts memories from (or tagged with)
    the current branch. Ties: newer `updated` first, then the note that names more specifics
    (numbers, identifiers, names: the sections of one report are written at one instant, and
    "Summary: done as requested" says less than "Removed the orphaned `FaceDetector` ..."),
    then id.
    """
    if weights.recency and now is None:
        raise ValueError("rank_for_briefing needs `now` when weights.recency > 0")
    max_log = (
        max((log_access(m) for m in memories), default=0.0) if max_log_access is None else max_log_access
    )
    ranks = [score_briefing(m, weights, max_log, now, branch) for m in memories]

    # Stable sorts from the least to the most significant key.
    order = sorted(range(len(memories)), key=lambda i: memories[i].id)
    order.sort(key=lambda i: memories[i].updated, reverse=True)
    order.sort(
        key=lambda i: (
            not memories[i].pinned,
            memories[i].type is not MemoryType.DECISION,
            -ranks[i],
        )
    )
    return [memories[i] for i in _specifics_first(order, memories, ranks)]


def _specifics_first(order: list[int], memories: Sequence[Memory], ranks: Sequence[float]) -> list[int]:
    """`order` with each run of full ties (group, rank, `updated`) led by the notes that name
    more specifics; only tied runs are read, so a render of thousands stays cheap."""
    from cortex.core.write.distinct import specificity  # only where ties are met

    def tie(i: int) -> tuple[bool, bool, float, datetime]:
        m = memories[i]
        return (m.pinned, m.type is MemoryType.DECISION, ranks[i], m.updated)

    out: list[int] = []
    for _, tied in itertools.groupby(order, key=tie):
        run = list(tied)
        if len(run) > 1:
            run.sort(key=lambda i: -specificity(memories[i].content))
        out.extend(run)
    return out
