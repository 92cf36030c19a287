"""The write gate: skip, reinforce or insert a candidate, and which edges to plan. Pure.

Cheap token Jaccard decides first; embedding cosine is consulted only in the uncertain band.
The plan says which neighbours need a cosine (`needs_cosine`); a caller with an embedder
computes those and plans again, a caller without one applies the plan as it stands (the
uncertain neighbours then get `suggested` edges for a human to review).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from cortex.core.model import Candidate, EdgeStatus, EdgeType, Memory, Status
from cortex.core.text import word_set
from cortex.core.write.distinct import POLARITY_WORDS as POLARITY_WORDS
from cortex.core.write.distinct import flips, lost_by_merge

NEAR_DUPLICATE_JACCARD = 0.8  # at or above: the same memory, re-said
UNCERTAIN_JACCARD = 0.5  # [0.5, 0.8): ask the embedding
NEAR_DUPLICATE_COSINE = 0.92  # in the uncertain band, at or above: the same memory
RELATED_JACCARD = 0.25  # at or above: relates_to
RELATED_COSINE = 0.75  # at or above (when known): relates_to
REINFORCE_CONFIDENCE_STEP = 0.05
MAX_CONFIDENCE = 1.0
MAX_EDGES_PER_WRITE = 5


class WriteAction(StrEnum):
    """What the store should do with a candidate."""

    INSERT = "insert"
    REINFORCE = "reinforce"
    SKIP = "skip"


@dataclass(frozen=True, slots=True)
class Neighbour:
    """An existing memory near the candidate, with its similarities (cosine when computed)."""

    memory: Memory
    jaccard: float
    cosine: float | None = None


@dataclass(frozen=True, slots=True)
class PlannedEdge:
    """An edge to create; `source` None means the memory this plan inserts."""

    source: str | None
    target: str
    type: EdgeType
    strength: float
    status: EdgeStatus


@dataclass(frozen=True, slots=True)
class WritePlan:
    """The gate's decision for one candidate; the shell applies it."""

    action: WriteAction
    reason: str
    target_id: str | None = None  # the existing memory skipped or reinforced
    restore: bool = False  # the target is archived/pruned: make it active again
    confidence: float | None = None  # new confidence of the target (REINFORCE)
    access_delta: int = 0
    tags: tuple[str, ...] = ()  # merged tags of the target (REINFORCE)
    files: tuple[str, ...] = ()  # merged files of the target (REINFORCE)
    content: str | None = None  # replacement content for the target, when the candidate adds to it
    edges: tuple[PlannedEdge, ...] = ()
    needs_cosine: tuple[str, ...] = ()  # neighbour ids in the uncertain band without a cosine


def plan_write(candidate: Candidate, *, exact: Memory | None, neighbours: Sequence[Neighbour]) -> WritePlan:
    """Decide what storing `candidate` means given an exact-hash match and similar memories."""
    if exact is not None:
        return _plan_exact(exact)
    unique = _unique(neighbours)
    distinct = {n.memory.id for n in unique if _loses_fact(candidate, n)}
    needs = tuple(
        n.memory.id
        for n in unique
        if n.cosine is None
        and UNCERTAIN_JACCARD <= n.jaccard < NEAR_DUPLICATE_JACCARD
        and n.memory.id not in distinct
    )
    # A merge keeps one wording: never merge texts that differ in a number, an identifier,
    # a negation or a named technology (they state different facts); link them instead.
    duplicates = [n for n in unique if _is_duplicate(n) and n.memory.id not in distinct]
    live = [n for n in duplicates if n.memory.status is not Status.SUPERSEDED]
    if duplicates and not live:
        best = max(duplicates, key=_similarity)
        return WritePlan(WriteAction.SKIP, "near-duplicate of a superseded memory", target_id=best.memory.id)
    if live:
        best = max(live, key=_similarity)
        others = [n for n in unique if n.memory.id != best.memory.id]
        return _plan_reinforce(candidate, best, _edges(best.memory.id, others, candidate), needs)
    return WritePlan(
        WriteAction.INSERT,
        "new memory",
        edges=_edges(None, unique, candidate),
        needs_cosine=needs,
    )


def _plan_exact(exact: Memory) -> WritePlan:
    if exact.status in (Status.ARCHIVED, Status.PRUNED):
        return WritePlan(
            WriteAction.SKIP,
            f"exact duplicate of a {exact.status.value} memory: restore it",
            target_id=exact.id,
            restore=True,
        )
    # No confidence bump: re-reading the same transcript after a restart must change nothing.
    reason = "exact duplicate" + (" of a superseded memory" if exact.status is Status.SUPERSEDED else "")
    return WritePlan(WriteAction.SKIP, reason, target_id=exact.id)


def _plan_reinforce(
    candidate: Candidate, best: Neighbour, edges: tuple[PlannedEdge, ...], needs: tuple[str, ...]
) -> WritePlan:
    memory = best.memory
    confidence = min(MAX_CONFIDENCE, max(memory.confidence, candidate.confidence) + REINFORCE_CONFIDENCE_STEP)
    return WritePlan(
        WriteAction.REINFORCE,
        f"near-duplicate (jaccard {best.jaccard:.2f}"
        + (f", cosine {best.cosine:.2f})" if best.cosine is not None else ")"),
        target_id=memory.id,
        restore=memory.status in (Status.ARCHIVED, Status.PRUNED),
        confidence=round(confidence, 4),
        access_delta=1,
        tags=tuple(dict.fromkeys([*memory.tags, *candidate.tags])),
        files=tuple(dict.fromkeys([*memory.source.files, *candidate.files])),
        content=_richer_content(memory.content, candidate.content),
        edges=edges,
        needs_cosine=tuple(i for i in needs if i != memory.id),
    )


def _richer_content(existing: str, offered: str) -> str | None:
    """Keep the stored wording (stable hash, no churn) unless the candidate says everything
    it says and more: then the longer text replaces it."""
    old, new = word_set(existing), word_set(offered)
    if old < new and len(offered) > len(existing):
        return offered
    return None


def _edges(
    source: str | None, neighbours: Sequence[Neighbour], candidate: Candidate
) -> tuple[PlannedEdge, ...]:
    edges = []
    for n in neighbours:
        if n.memory.id == source or n.memory.status is Status.PRUNED:
            continue
        edge = _edge_for(source, n, candidate)
        if edge is not None:
            edges.append(edge)
    edges.sort(key=lambda e: (e.status is not EdgeStatus.ACTIVE, -e.strength, e.target))
    return tuple(edges[:MAX_EDGES_PER_WRITE])


def _edge_for(source: str | None, n: Neighbour, candidate: Candidate) -> PlannedEdge | None:
    strength = round(min(1.0, _similarity(n)[0]), 4)
    target = n.memory.id
    if _is_duplicate(n) and _flips(candidate, n.memory):
        return PlannedEdge(source, target, EdgeType.CONTRADICTS, strength, EdgeStatus.SUGGESTED)
    if UNCERTAIN_JACCARD <= n.jaccard < NEAR_DUPLICATE_JACCARD and n.cosine is None:
        return PlannedEdge(source, target, EdgeType.RELATES_TO, strength, EdgeStatus.SUGGESTED)
    if n.jaccard < UNCERTAIN_JACCARD and n.cosine is not None and n.cosine >= NEAR_DUPLICATE_COSINE:
        # A paraphrase the words missed: possibly the same memory, for a human to judge.
        return PlannedEdge(source, target, EdgeType.RELATES_TO, strength, EdgeStatus.SUGGESTED)
    related = n.jaccard >= RELATED_JACCARD or (n.cosine is not None and n.cosine >= RELATED_COSINE)
    if related:
        return PlannedEdge(source, target, EdgeType.RELATES_TO, strength, EdgeStatus.ACTIVE)
    return None


def _is_duplicate(n: Neighbour) -> bool:
    if n.jaccard >= NEAR_DUPLICATE_JACCARD:
        return True
    return n.jaccard >= UNCERTAIN_JACCARD and n.cosine is not None and n.cosine >= NEAR_DUPLICATE_COSINE


def _loses_fact(candidate: Candidate, n: Neighbour) -> bool:
    """Reinforcing `n` with `candidate` would drop a fact: the text not kept has a number,
    identifier, negation or named technology the kept one lacks (`core/write/distinct.py`)."""
    memory, lexical = n.memory, n.jaccard >= NEAR_DUPLICATE_JACCARD
    if _richer_content(memory.content, candidate.content) is not None:
        return lost_by_merge(candidate.content, memory.content, lexical=lexical) is not None
    return lost_by_merge(memory.content, candidate.content, lexical=lexical) is not None


def _flips(candidate: Candidate, memory: Memory) -> bool:
    """One side negates or reverses what the other says."""
    return flips(candidate.content, memory.content)


def _similarity(n: Neighbour) -> tuple[float, float]:
    return (max(n.jaccard, n.cosine or 0.0), n.jaccard)


def _unique(neighbours: Sequence[Neighbour]) -> list[Neighbour]:
    """One entry per memory id (the most similar), in input order."""
    best: dict[str, Neighbour] = {}
    for n in neighbours:
        seen = best.get(n.memory.id)
        if seen is None or _similarity(n) > _similarity(seen):
            best[n.memory.id] = n
    return list(best.values())
