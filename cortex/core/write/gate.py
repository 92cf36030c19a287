"""The write gate: skip, reinforce or insert a candidate, and which edges to plan. Pure.

Two ways a candidate is the same memory as a neighbour. Lexically: word Jaccard at or above
NEAR_DUPLICATE_JACCARD and nothing distinguishing differs (`distinct.py`); the stored wording
stays. Semantically: the embedding cosine at or above PARAPHRASE_COSINE and no detail tells the
two apart (`paraphrase.py`); the target is reinforced and the candidate's own wording is kept
beside it as evidence (a superseded memory the target is `derived_from`), so no fact is lost.
The plan says which neighbours need a cosine (`needs_cosine`); a caller with an embedder
computes those and plans again, a caller without one applies the plan as it stands (the
uncertain neighbours then get `suggested` edges for a human to review).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from cortex.core.model import Candidate, EdgeStatus, EdgeType, Memory, Source, Status
from cortex.core.text import word_set
from cortex.core.write.distinct import POLARITY_WORDS as POLARITY_WORDS
from cortex.core.write.distinct import flips, lost_by_merge
from cortex.core.write.paraphrase import PARAPHRASE_COSINE, negates_differently, paraphrase_difference
from cortex.core.write.state import state_keys, subjects

NEAR_DUPLICATE_JACCARD = 0.8  # at or above: the same memory, re-said
UNCERTAIN_JACCARD = 0.5  # [0.5, 0.8): related enough to suggest a link when no cosine is known
NEAR_DUPLICATE_COSINE = PARAPHRASE_COSINE  # at or above, nothing distinguishing: the same memory
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
    needs_cosine: tuple[str, ...] = ()  # neighbour ids an embedding could still merge
    keep_candidate: bool = False  # REINFORCE of a paraphrase: store the candidate as evidence


def plan_write(
    candidate: Candidate,
    *,
    exact: Memory | None,
    neighbours: Sequence[Neighbour],
    source: Source | None = None,
    read_at: datetime | None = None,
) -> WritePlan:
    """Decide what storing `candidate` means given an exact-hash match and similar memories;
    `source` is where in a transcript the candidate was said (None: not from a transcript),
    `read_at` when this read of the transcript began."""
    if exact is not None:
        return _plan_exact(exact, candidate, source)
    unique = _unique(neighbours)
    # A merge keeps one wording: never merge texts that differ in a number, an identifier,
    # a negation or a named technology (they state different facts); link them instead.
    how = {n.memory.id: _merges(candidate, n) for n in unique}
    needs = tuple(
        n.memory.id
        for n in unique
        if n.cosine is None
        and how[n.memory.id] is None
        and n.memory.type is candidate.type
        and paraphrase_difference(candidate.content, n.memory.content) is None
    )
    duplicates = [n for n in unique if how[n.memory.id] is not None]
    live = [n for n in duplicates if n.memory.status is not Status.SUPERSEDED]
    if duplicates and not live:
        best = max(duplicates, key=_similarity)
        return WritePlan(WriteAction.SKIP, "near-duplicate of a superseded memory", target_id=best.memory.id)
    if live:
        # A re-typing first (its wording adds nothing), then the closest paraphrase.
        best = max(live, key=lambda n: (how[n.memory.id] == "lexical", _similarity(n)))
        others = [n for n in unique if n.memory.id != best.memory.id]
        edges = _edges(best.memory.id, others, candidate)
        again = _read_again(best.memory, source, read_at)
        if how[best.memory.id] == "paraphrase":
            return _plan_paraphrase(candidate, best, edges, needs, again)
        return _plan_reinforce(candidate, best, edges, needs, again)
    return WritePlan(
        WriteAction.INSERT,
        "new memory",
        edges=_edges(None, unique, candidate),
        needs_cosine=needs,
    )


def _plan_exact(exact: Memory, candidate: Candidate, source: Source | None) -> WritePlan:
    if exact.status is Status.SUPERSEDED and _said_again(exact, candidate, source):
        # What held, was replaced, and holds again (a test fails, passes, then fails the same
        # way; a dependency added, dropped, added back): the latest turn says it, so it is
        # stated anew, and what replaced it in between gives way to it in turn. The old note
        # stays history, in its place in time.
        return WritePlan(WriteAction.INSERT, "a superseded statement that holds again")
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


def _said_again(old: Memory, candidate: Candidate, source: Source | None) -> bool:
    """The candidate states what `old` stated (same state key or manifest entry), and another
    transcript record says it, not earlier than `old`'s: in this session or a later one. The
    same record read again is not news: a re-read after a restart, a replay, or a resumed
    session's file, which copies the old records with their uuids (Claude Code 1.0 gives the
    copies the new session's id and the time of the copy). Without record ids on both sides,
    only a later offset in the same session's transcript is news."""
    if source is None or not subjects(candidate.tags) & subjects(old.tags):
        return False
    was, now = old.source, source
    if was.record is not None and now.record is not None:
        if was.record == now.record:
            return False
        # An older session read late says nothing of now.
        return was.said_at is None or now.said_at is None or now.said_at >= was.said_at
    return (
        was.session_id is not None
        and was.session_id == now.session_id
        and (now.transcript_offset or 0) > (was.transcript_offset or 0)
    )


def _read_again(memory: Memory, source: Source | None, read_at: datetime | None) -> bool:
    """The record that said `memory`, read again after it was stored (a resumed session's copy,
    a transcript read again from the start): no second confirmation, and no links the first
    read did not make; its wording and tags still merge, which changes nothing the second time.
    Two layers that take the same statement from one message in one read are two findings."""
    return (
        source is not None
        and source.record is not None
        and source.record == memory.source.record
        and (read_at is None or memory.created < read_at)
    )


def _plan_reinforce(
    candidate: Candidate,
    best: Neighbour,
    edges: tuple[PlannedEdge, ...],
    needs: tuple[str, ...],
    again: bool = False,
) -> WritePlan:
    memory = best.memory
    confidence = min(MAX_CONFIDENCE, max(memory.confidence, candidate.confidence) + REINFORCE_CONFIDENCE_STEP)
    return WritePlan(
        WriteAction.REINFORCE,
        f"near-duplicate (jaccard {best.jaccard:.2f}"
        + (f", cosine {best.cosine:.2f})" if best.cosine is not None else ")"),
        target_id=memory.id,
        restore=memory.status in (Status.ARCHIVED, Status.PRUNED),
        confidence=memory.confidence if again else round(confidence, 4),
        access_delta=0 if again else 1,
        tags=tuple(dict.fromkeys([*memory.tags, *candidate.tags])),
        files=tuple(dict.fromkeys([*memory.source.files, *candidate.files])),
        content=_richer_content(memory.content, candidate.content),
        edges=() if again else edges,
        needs_cosine=tuple(i for i in needs if i != memory.id),
    )


def _plan_paraphrase(
    candidate: Candidate,
    best: Neighbour,
    edges: tuple[PlannedEdge, ...],
    needs: tuple[str, ...],
    again: bool = False,
) -> WritePlan:
    """Reinforce the target with a paraphrase; the target keeps its wording and the
    candidate's is stored beside it as evidence."""
    plan = _plan_reinforce(candidate, best, edges, needs, again)
    return replace(
        plan,
        reason=f"paraphrase at cosine {best.cosine or 0.0:.2f}, its wording kept as evidence",
        content=None,
        keep_candidate=True,
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
    """Close enough to be the same memory, before asking whether a detail differs."""
    return n.jaccard >= NEAR_DUPLICATE_JACCARD or (n.cosine is not None and n.cosine >= NEAR_DUPLICATE_COSINE)


def _merges(candidate: Candidate, n: Neighbour) -> str | None:
    """How `candidate` is the same memory as `n`: "lexical" (re-typed), "paraphrase" (other
    words, an embedding found the same meaning and no detail differs), or None. A newer
    state of the same thing is never merged into the older one: it replaces it (`state.py`),
    and any change between two states of one thing is the news ("Task list. Open: ..." then
    "Task list. Done: ..." share every other word)."""
    if state_keys(candidate.tags) & state_keys(n.memory.tags):
        return None
    if n.jaccard >= NEAR_DUPLICATE_JACCARD and not _loses_fact(candidate, n):
        return "lexical"
    if n.memory.type is not candidate.type or n.cosine is None or n.cosine < PARAPHRASE_COSINE:
        return None
    return "paraphrase" if paraphrase_difference(candidate.content, n.memory.content) is None else None


def _loses_fact(candidate: Candidate, n: Neighbour) -> bool:
    """Reinforcing `n` with `candidate` would drop a fact: the text not kept has a number,
    identifier, negation or named technology the kept one lacks (`core/write/distinct.py`),
    or the two negate different words."""
    memory = n.memory
    if negates_differently(memory.content, candidate.content):
        return True
    if _richer_content(memory.content, candidate.content) is not None:
        return lost_by_merge(candidate.content, memory.content) is not None
    return lost_by_merge(memory.content, candidate.content) is not None


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
