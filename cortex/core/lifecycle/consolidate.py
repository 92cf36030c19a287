"""Consolidation planning: near-duplicate clusters to merge, contradictions to flag, edges to review. Pure.

The write gate compares a new memory with a handful of keyword neighbours as it arrives;
consolidation looks at every pair of active memories at once, so it catches what the gate
could not: duplicates written by concurrent sessions, brought in by `cortex import`, or
paraphrases written before their vectors arrived. The thresholds and rules are the gate's, so
the two agree on what a duplicate is: re-typed words (`distinct.py`) or the same meaning with
no distinguishing detail (`paraphrase.py`).

A merge keeps one member (the keeper: pinned, then the fullest text) and folds the others
into it: the highest confidence and priority, every tag and file, the summed access counts,
the earliest creation. The absorbed members become `superseded` (out of recall and the
briefing, still exported, their journal history intact) and the keeper gets a `derived_from`
edge to each; their other links move to the keeper.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from cortex.core.model import Edge, EdgeStatus, EdgeType, Memory, Status
from cortex.core.text import jaccard, word_set, words
from cortex.core.write.apply import superseded
from cortex.core.write.distinct import TECHNOLOGIES, lost_by_merge
from cortex.core.write.gate import (
    NEAR_DUPLICATE_COSINE,
    NEAR_DUPLICATE_JACCARD,
    POLARITY_WORDS,
)
from cortex.core.write.paraphrase import NAMED_TECHNOLOGIES, negates_differently, paraphrase_difference
from cortex.core.write.similar import (
    UNMERGEABLE_TYPES,
    SimilarPair,
    find_similar_pairs,
    pair_key,
    text_of,
)

CONTRADICTION_JACCARD = 0.6  # overlap of the non-polarity words: "the same subject"
MAX_CLUSTER = 20  # a chain longer than this is a topic, not a duplicate
_NONE: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Merge:
    """One cluster folded into its keeper."""

    keeper: Memory  # before
    merged: Memory  # the keeper after the merge
    absorbed: tuple[Memory, ...]  # before
    absorbed_after: tuple[Memory, ...]  # superseded
    edges: tuple[Edge, ...]  # derived_from edges and links moved to the keeper
    similarity: float  # the weakest link that joined the cluster


@dataclass(frozen=True, slots=True)
class Contradiction:
    """Two memories about the same subject where one negates the other."""

    newer: Memory
    older: Memory
    overlap: float

    @property
    def edge_key(self) -> tuple[str, str]:
        return (self.newer.id, self.older.id)


@dataclass(frozen=True, slots=True)
class ConsolidationPlan:
    """What consolidation would do; `destructive` says whether a checkpoint must come first."""

    merges: tuple[Merge, ...]
    contradictions: tuple[Contradiction, ...]
    new_edges: tuple[Edge, ...]  # suggested `contradicts` edges for the contradictions found
    suggested: tuple[Edge, ...]  # every suggested edge to review (existing and new)

    @property
    def destructive(self) -> bool:
        return bool(self.merges)

    @property
    def empty(self) -> bool:
        return not self.merges and not self.new_edges


def _flips(a: Memory, b: Memory) -> bool:
    return bool((word_set(a.content) ^ word_set(b.content)) & POLARITY_WORDS)


def _lexical(a: Memory, b: Memory, p: SimilarPair) -> bool:
    """A re-typing: words overlap enough and one side may absorb the other without a loss."""
    if p.jaccard < NEAR_DUPLICATE_JACCARD or _flips(a, b) or negates_differently(a.content, b.content):
        return False
    return not (lost_by_merge(a.content, b.content) and lost_by_merge(b.content, a.content))


def pairs_needing_cosine(memories: Sequence[Memory], pairs: Sequence[SimilarPair]) -> list[SimilarPair]:
    """Same-type pairs that are not re-typings but may be paraphrases: only an embedding can
    say if they mean the same."""
    by_id = {m.id: m for m in memories}
    return [
        p
        for p in pairs
        if by_id[p.a].type == by_id[p.b].type
        and not _lexical(by_id[p.a], by_id[p.b], p)
        and paraphrase_difference(by_id[p.a].content, by_id[p.b].content) is None
    ]


def _duplicate_score(
    a: Memory,
    b: Memory,
    p: SimilarPair,
    cosines: Mapping[tuple[str, str], float],
    tech_a: frozenset[str] = frozenset(),
    tech_b: frozenset[str] = frozenset(),
) -> float | None:
    """How alike a pair is when it counts as a duplicate (the gate's rules), else None.

    `tech_a` and `tech_b` are the technologies the two name, when the caller has them: the
    rules refuse most pairs of a large store on those alone (each side naming one the other
    lacks: neither may absorb the other; one named on one side only: not a paraphrase), so
    those are asked first; the answer is the rules' either way.
    """
    if not (tech_a - tech_b and tech_b - tech_a) and _lexical(a, b, p):
        return p.jaccard
    cosine = cosines.get((p.a, p.b))
    if (
        cosine is not None
        and cosine >= NEAR_DUPLICATE_COSINE
        and not (tech_a ^ tech_b) & NAMED_TECHNOLOGIES
        and paraphrase_difference(a.content, b.content) is None
    ):
        return cosine
    return None


def _keeper_order(m: Memory) -> tuple[bool, int, int, int, str, str]:
    """Pinned first, then the one that says most (distinct words, then length)."""
    return (
        not m.pinned,
        -len(word_set(m.content)),
        -len(m.content),
        -m.access_count,
        m.created.isoformat(),
        m.id,
    )


def _clusters(links: Sequence[tuple[str, str, float]]) -> list[tuple[list[str], float]]:
    """Connected groups of duplicates, strongest links first, each with its weakest link."""
    parent: dict[str, str] = {}
    weakest: dict[str, float] = {}
    size: dict[str, int] = {}

    def root(x: str) -> str:
        while parent.get(x, x) != x:
            parent[x] = parent.get(parent[x], parent[x])
            x = parent[x]
        return x

    for a, b, score in links:
        ra, rb = root(a), root(b)
        if ra == rb or size.get(ra, 1) + size.get(rb, 1) > MAX_CLUSTER:
            continue
        parent[rb] = ra
        size[ra] = size.get(ra, 1) + size.get(rb, 1)
        weakest[ra] = min(score, weakest.get(ra, score), weakest.get(rb, score))
    groups: dict[str, list[str]] = {}
    for x in sorted({x for a, b, _ in links for x in (a, b)}):
        groups.setdefault(root(x), []).append(x)
    return [(ids, weakest[r]) for r, ids in sorted(groups.items()) if len(ids) > 1 and r in weakest]


def _keeps_every_fact(members: Sequence[Memory]) -> list[Memory]:
    """The keeper and the members it can absorb without losing a fact they state: nothing
    distinguishing differs, as words or as a paraphrase (the absorbed wording stays, superseded)."""
    keeper, *rest = sorted(members, key=_keeper_order)
    return [keeper, *(m for m in rest if _absorbs(keeper.content, m.content))]


def _absorbs(kept: str, dropped: str) -> bool:
    """`kept` says all `dropped` says: in its words, or as a paraphrase that is not `kept`
    with more added (the absorbed wording stays, superseded)."""
    if negates_differently(kept, dropped):
        return False
    if lost_by_merge(kept, dropped) is None:
        return True
    return paraphrase_difference(kept, dropped) is None and not word_set(kept) < word_set(dropped)


def _union(*groups: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(x for g in groups for x in g))


def _merge(members: Sequence[Memory], similarity: float, edges: Sequence[Edge], now: datetime) -> Merge:
    ordered = sorted(members, key=_keeper_order)
    keeper, rest = ordered[0], ordered[1:]
    accessed = [m.last_accessed for m in members if m.last_accessed is not None]
    merged = replace(
        keeper,
        confidence=max(m.confidence for m in members),
        priority=max(m.priority for m in members),
        pinned=any(m.pinned for m in members),
        tags=_union(*(m.tags for m in ordered)),
        source=replace(keeper.source, files=_union(*(m.source.files for m in ordered))),
        access_count=sum(m.access_count for m in members),
        last_accessed=max(accessed) if accessed else None,
        created=min(m.created for m in members),
        updated=now,
        low_since=None,
    )
    absorbed_after = tuple(superseded(m, now) for m in rest)
    planned: dict[tuple[str, str, EdgeType], Edge] = {}
    for m in rest:
        planned[(keeper.id, m.id, EdgeType.DERIVED_FROM)] = Edge(
            keeper.id, m.id, EdgeType.DERIVED_FROM, round(similarity, 4), EdgeStatus.ACTIVE, now
        )
    cluster = {m.id for m in members}
    existing = {(e.source, e.target, e.type) for e in edges}
    for e in edges:
        src = keeper.id if e.source in cluster else e.source
        tgt = keeper.id if e.target in cluster else e.target
        key = (src, tgt, e.type)
        if src == tgt or (src, tgt) == (e.source, e.target) or key in existing:
            continue
        prior = planned.get(key)
        if prior is None or e.strength > prior.strength:
            planned[key] = Edge(src, tgt, e.type, e.strength, e.status, now)
    return Merge(keeper, merged, tuple(rest), absorbed_after, tuple(planned.values()), similarity)


def _contradictions(
    by_id: Mapping[str, Memory],
    pairs: Sequence[SimilarPair],
    order: Sequence[int],
    edges: Sequence[Edge],
    gone: set[str],
) -> list[Contradiction]:
    linked = {pair_key(e.source, e.target) for e in edges if e.type == EdgeType.CONTRADICTS}
    # A pair flips when its sides hold different polarity words: each side's are read once.
    polar: dict[str, frozenset[str]] = {}
    for mid in {x for p in pairs for x in (p.a, p.b)}:
        held = POLARITY_WORDS.intersection(words(by_id[mid].content))
        if held:
            polar[mid] = frozenset(held)
    found = []
    for k in order:
        p = pairs[k]
        a, b = by_id[p.a], by_id[p.b]
        if p.a in gone or p.b in gone or pair_key(p.a, p.b) in linked:
            continue
        if polar.get(p.a, _NONE) == polar.get(p.b, _NONE):
            continue
        overlap = jaccard(word_set(a.content) - POLARITY_WORDS, word_set(b.content) - POLARITY_WORDS)
        if overlap < CONTRADICTION_JACCARD:
            continue
        newer, older = (a, b) if (a.created, a.id) > (b.created, b.id) else (b, a)
        found.append((k, Contradiction(newer, older, round(overlap, 4))))
    return [c for _, c in sorted(found, key=lambda x: x[0])]


def _nearby_first(pairs: Sequence[SimilarPair]) -> list[int]:
    """Positions of `pairs` in breadth-first order of the graph they form.

    The rules read each text's words, stems and signature through small per-text caches; in
    this order most pairs find both texts still cached (at 100,000 memories the given order
    computed them about twice as often). Results never depend on the order.
    """
    near: dict[str, list[str]] = {}
    for p in pairs:
        near.setdefault(p.a, []).append(p.b)
        near.setdefault(p.b, []).append(p.a)
    rank: dict[str, int] = {}
    for start in near:
        if start in rank:
            continue
        rank[start] = len(rank)
        queue = deque([start])
        while queue:
            for other in near[queue.popleft()]:
                if other not in rank:
                    rank[other] = len(rank)
                    queue.append(other)
    return sorted(
        range(len(pairs)),
        key=lambda k: (max(rank[pairs[k].a], rank[pairs[k].b]), min(rank[pairs[k].a], rank[pairs[k].b])),
    )


def plan_consolidation(
    memories: Sequence[Memory],
    edges: Sequence[Edge],
    now: datetime,
    *,
    pairs: Sequence[SimilarPair] | None = None,
    cosines: Mapping[tuple[str, str], float] | None = None,
) -> ConsolidationPlan:
    """Merges and contradictions among the active `memories`; `edges` are the store's edges.

    `cosines` maps sorted id pairs to embedding cosine for the uncertain pairs the caller
    could embed (see `pairs_needing_cosine`); without them only word overlap decides.
    """
    live = [m for m in memories if m.status is Status.ACTIVE]
    by_id = {m.id: m for m in live}
    if pairs is None:
        pairs = find_similar_pairs([text_of(m) for m in live])
    pairs = [p for p in pairs if p.a in by_id and p.b in by_id]
    cos = cosines or {}
    order = _nearby_first(pairs)
    links = []
    named = {m.id: frozenset(TECHNOLOGIES.intersection(words(m.content))) for m in live}
    for k in order:
        p = pairs[k]
        a, b = by_id[p.a], by_id[p.b]
        if a.type != b.type or a.type in UNMERGEABLE_TYPES:
            continue
        # Different facts (a number, identifier, negation, technology) are never merged.
        score = _duplicate_score(a, b, p, cos, named[p.a], named[p.b])
        if score is not None:
            links.append((p.a, p.b, score))
    links.sort(key=lambda x: (-x[2], x[0], x[1]))
    merges = []
    ends: dict[str, list[int]] = {}  # memory id -> positions of its edges in `edges`
    for k, e in enumerate(edges):
        ends.setdefault(e.source, []).append(k)
        ends.setdefault(e.target, []).append(k)
    for ids, weakest in _clusters(links):
        members = _keeps_every_fact([by_id[i] for i in ids])
        if len(members) < 2:
            continue
        touching = [edges[k] for k in sorted({k for m in members for k in ends.get(m.id, ())})]
        merges.append(_merge(members, weakest, touching, now))
    gone = {m.id for mg in merges for m in mg.absorbed}
    contradictions = _contradictions(by_id, pairs, order, edges, gone)
    new_edges = tuple(
        Edge(c.newer.id, c.older.id, EdgeType.CONTRADICTS, c.overlap, EdgeStatus.SUGGESTED, now)
        for c in contradictions
    )
    suggested = tuple(
        e for e in edges if e.status is EdgeStatus.SUGGESTED and e.source not in gone and e.target not in gone
    )
    return ConsolidationPlan(tuple(merges), tuple(contradictions), new_edges, (*suggested, *new_edges))


def parse_edge_ref(ref: str) -> tuple[str, str, str | None]:
    """`SOURCE:TARGET[:TYPE]` (id prefixes allowed) -> (source, target, type or None)."""
    parts = [p.strip().lower() for p in ref.split(":")]
    if len(parts) not in (2, 3) or not all(parts[:2]):
        raise ValueError(f"edge reference {ref!r} is not SOURCE:TARGET[:TYPE]")
    return parts[0], parts[1], parts[2] if len(parts) == 3 and parts[2] else None


def match_edges(refs: Sequence[str], edges: Sequence[Edge]) -> tuple[list[Edge], list[str]]:
    """The edges named by `refs` ("all" = every edge); returns (matched, refs matching none)."""
    if any(r.strip().lower() == "all" for r in refs):
        return list(edges), []
    matched: dict[tuple[str, str, EdgeType], Edge] = {}
    unknown = []
    for ref in refs:
        src, tgt, etype = parse_edge_ref(ref)
        hits = [
            e
            for e in edges
            if e.source.startswith(src)
            and e.target.startswith(tgt)
            and (etype is None or e.type.value == etype)
        ]
        if not hits:
            unknown.append(ref)
        for e in hits:
            matched[(e.source, e.target, e.type)] = e
    return list(matched.values()), unknown


def plan_auto_consolidation(
    *,
    extractions: int,
    last_extractions: int,
    active: int,
    last_active: int,
    every: int,
    active_over: int,
) -> str | None:
    """Why an automatic consolidation is due now, or None.

    Every `every` extractions; and while more than `active_over` memories are active, whenever
    there are more than right after the last consolidation (so a store that stays large is
    not re-planned after every extraction that added nothing).
    """
    if every > 0 and extractions - last_extractions >= every:
        return f"{extractions - last_extractions} extractions since the last consolidation"
    if active > active_over and active > last_active:
        return f"{active} active memories (over {active_over})"
    return None
