"""Retrieval metrics over ranked evaluation units, as PROTOCOLS.md defines them. Pure.

Every metric takes `gold_ranks`: the 1-based rank of each gold unit in the ranked list of distinct
units, or None when the unit was not retrieved. The list of distinct units comes from
`rank_distinct_units`, which applies the protocol's counting rule for memories that are not 1:1
with the evaluation unit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

_DIALOG_ID = re.compile(r"D(\d+):(\d+)")
_METRIC = re.compile(r"(?P<name>[a-z_]+)(?:@(?P<k>\d+))?")

GoldRanks = Mapping[str, int | None]


@dataclass(frozen=True, slots=True)
class UnitRanking:
    """Distinct units in order of first appearance, and the memory position (1-based) of each."""

    units: tuple[str, ...]
    memory_positions: tuple[int, ...]
    n_memories: int

    def rank_of(self) -> dict[str, int]:
        """Unit -> 1-based rank among distinct units."""
        return {unit: i for i, unit in enumerate(self.units, start=1)}


def parse_evidence(evidence: Iterable[object], existing: Collection[str]) -> tuple[str, ...]:
    """LoCoMo evidence strings -> normalised dialog ids (PROTOCOLS.md, LOCOMO-TURN "Evidence").

    Every `D(\\d+):(\\d+)` match in every string counts (so `"D8:6; D9:17"` gives two ids); numbers
    lose zero padding (`D30:05` -> `D30:5`); ids absent from `existing` are dropped; order of first
    appearance is kept, duplicates removed. An empty result means the question is skipped.
    """
    found: dict[str, None] = {}
    for item in evidence:
        for dia_id in parse_dialog_ids(str(item)):
            if dia_id in existing:
                found.setdefault(dia_id)
    return tuple(found)


def parse_dialog_ids(text: str) -> list[str]:
    """Every `D<session>:<turn>` in `text`, unpadded: `"D30:05 D1:2"` -> `["D30:5", "D1:2"]`."""
    return [f"D{int(s)}:{int(t)}" for s, t in _DIALOG_ID.findall(text)]


def rank_distinct_units(retrieved: Sequence[str], provenance: Mapping[str, Sequence[str]]) -> UnitRanking:
    """Ranked memory keys -> distinct units by first appearance (PROTOCOLS.md "Counting k").

    A memory that maps to several units contributes them in provenance order; a unit already seen
    is not counted again. A key may name several ingested items joined by "+" (a memory built
    from more than one item); it maps to the union of their units.
    """
    seen: dict[str, int] = {}
    for position, key in enumerate(retrieved, start=1):
        for part in key.split("+"):
            for unit in provenance[part]:
                seen.setdefault(unit, position)
    return UnitRanking(tuple(seen), tuple(seen.values()), len(retrieved))


def memories_for_k(ranking: UnitRanking, k: int) -> int:
    """Memories it took to reach k distinct units (all retrieved memories when fewer exist)."""
    if len(ranking.units) >= k:
        return ranking.memory_positions[k - 1]
    return ranking.n_memories


def gold_ranks_of(ranking: UnitRanking, gold: Iterable[str]) -> dict[str, int | None]:
    """Rank of every gold unit in the distinct-unit list (None when not retrieved)."""
    ranks = ranking.rank_of()
    return {unit: ranks.get(unit) for unit in gold}


def _hits(gold_ranks: GoldRanks, k: int) -> int:
    return sum(1 for r in gold_ranks.values() if r is not None and r <= k)


def evidence_recall_at_k(gold_ranks: GoldRanks, k: int) -> float:
    """Share of gold units in the top k (LoCoMo's "recall accuracy"; 0 when there is no gold)."""
    if not gold_ranks:
        return 0.0
    return _hits(gold_ranks, k) / len(gold_ranks)


def recall_all_at_k(gold_ranks: GoldRanks, k: int) -> float:
    """1 if every gold unit is in the top k; LongMemEval's `all([])` makes it 1 with no gold."""
    return 1.0 if _hits(gold_ranks, k) == len(gold_ranks) else 0.0


def recall_any_at_k(gold_ranks: GoldRanks, k: int) -> float:
    """1 if at least one gold unit is in the top k (0 with no gold)."""
    return 1.0 if _hits(gold_ranks, k) > 0 else 0.0


def _gain(rank: int) -> float:
    # LongMemEval's official DCG: rel_1 + sum_{i>=2} rel_i / log2(i), so rank 2 is not discounted.
    return 1.0 if rank == 1 else 1.0 / math.log2(rank)


def ndcg_at_k(gold_ranks: GoldRanks, k: int) -> float:
    """NDCG@k with binary relevance and LongMemEval's DCG (position 2 undiscounted; 0 with no gold).

    The ideal DCG puts every gold unit first (min(k, |gold|) of them), as the official
    `eval_utils.ndcg` does by sorting the relevances of the whole corpus.
    """
    if not gold_ranks:
        return 0.0
    dcg = sum(_gain(r) for r in gold_ranks.values() if r is not None and r <= k)
    ideal = sum(_gain(r) for r in range(1, min(k, len(gold_ranks)) + 1))
    return dcg / ideal


def mrr(gold_ranks: GoldRanks, cutoff: int | None = None) -> float:
    """Reciprocal rank of the first gold unit; 0 if none is retrieved (within `cutoff` if given)."""
    ranks = [r for r in gold_ranks.values() if r is not None and (cutoff is None or r <= cutoff)]
    return 1.0 / min(ranks) if ranks else 0.0


def parse_metric(name: str) -> tuple[str, int | None]:
    """`"recall_all@10"` -> `("recall_all", 10)`; `"mrr"` -> `("mrr", None)`."""
    match = _METRIC.fullmatch(name)
    if match is None or match["name"] not in _SCORERS:
        raise ValueError(f"unknown metric {name!r}")
    k = match["k"]
    if k is None and match["name"] != "mrr":
        raise ValueError(f"metric {name!r} needs @k")
    return match["name"], int(k) if k is not None else None


def score_metrics(names: Iterable[str], gold_ranks: GoldRanks) -> dict[str, float]:
    """Score named metrics: `recall@5`, `recall_all@10`, `recall_any@5`, `ndcg@10`, `mrr@10`."""
    scores: dict[str, float] = {}
    for name in names:
        base, k = parse_metric(name)
        if base == "mrr":
            scores[name] = mrr(gold_ranks, k)
        else:
            assert k is not None
            scores[name] = _SCORERS[base](gold_ranks, k)
    return scores


def max_k(names: Iterable[str]) -> int:
    """The deepest cut-off any of the named metrics needs (0 when none has one)."""
    return max((k for _, k in map(parse_metric, names) if k is not None), default=0)


_SCORERS: dict[str, Callable[[GoldRanks, int], float]] = {
    "recall": evidence_recall_at_k,
    "recall_all": recall_all_at_k,
    "recall_any": recall_any_at_k,
    "ndcg": ndcg_at_k,
    "mrr": mrr,
}
