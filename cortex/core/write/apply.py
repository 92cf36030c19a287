"""What carrying out a write-gate plan makes of memories, and what it is reported as. Pure.

The gate decides *whether* to insert, reinforce or skip; this module decides the fields: the
new memory built from a candidate, the reinforced target, and the outcome's effect. Restoring
an archived target is the lifecycle's rule (`cortex.core.lifecycle.decay.plan_restore`, which
imports this package, so it is not called from here). The use case only applies the results.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from cortex.core.model import Candidate, Edge, EdgeStatus, EdgeType, Memory, MemoryType, Scope, Source, Status
from cortex.core.text import content_hash, first_line_summary
from cortex.core.write.gate import WriteAction, WritePlan

DEFAULT_PRIORITY = {
    MemoryType.ARCHITECTURE: 7,
    MemoryType.DECISION: 7,
    MemoryType.GOTCHA: 6,
    MemoryType.PATTERN: 6,
    MemoryType.PREFERENCE: 6,
    MemoryType.CODE_DESCRIPTION: 5,
    MemoryType.CONTEXT: 4,
    MemoryType.CODE: 4,
    MemoryType.PROGRESS: 3,
}


class WriteEffect(StrEnum):
    """What writing one candidate did; the values are the words reports and --json print."""

    STORED = "stored"
    REINFORCED = "reinforced"
    RESTORED = "restored"
    DUPLICATE = "duplicate"
    EMPTY = "empty"  # batch ingest only: redaction left nothing to write

    @property
    def changed(self) -> bool:
        """The memory was written, so its vector is (re)computed."""
        return self in (WriteEffect.STORED, WriteEffect.REINFORCED, WriteEffect.RESTORED)


@dataclass(frozen=True, slots=True)
class WriteOutcome:
    """What happened to one candidate."""

    action: WriteEffect
    memory: Memory
    scope: Scope
    reason: str
    edges: int = 0
    embedded: bool = False
    note: str = ""


def new_memory(memory_id: str, cand: Candidate, scope: Scope, source: Source, now: datetime) -> Memory:
    """A fresh active memory for a candidate, its numbers clamped and its lists de-duplicated."""
    content = cand.content
    return Memory(
        id=memory_id,
        content=content,
        summary=cand.summary or first_line_summary(content),
        type=cand.type,
        scope=scope,
        confidence=round(min(max(cand.confidence, 0.0), 1.0), 4),
        priority=min(max(int(cand.priority), 1), 10),
        pinned=cand.pinned,
        source=replace(source, files=tuple(dict.fromkeys([*source.files, *cand.files]))),
        tags=tuple(dict.fromkeys(cand.tags)),
        access_count=0,
        last_accessed=None,
        created=now,
        updated=now,
        status=Status.ACTIVE,
        content_hash=content_hash(content),
    )


def effect_of(plan: WritePlan) -> WriteEffect:
    """How a plan is reported once applied."""
    if plan.action is WriteAction.INSERT:
        return WriteEffect.STORED
    if plan.action is WriteAction.REINFORCE:
        return WriteEffect.REINFORCED
    return WriteEffect.RESTORED if plan.restore else WriteEffect.DUPLICATE


def reinforced(current: Memory, plan: WritePlan, now: datetime) -> Memory:
    """The plan's target after a REINFORCE: surer, recalled once more, merged tags and files, and
    the candidate's richer wording when it says more."""
    content = plan.content or current.content
    return replace(
        current,
        confidence=plan.confidence if plan.confidence is not None else current.confidence,
        access_count=current.access_count + plan.access_delta,
        tags=plan.tags or current.tags,
        source=replace(current.source, files=plan.files or current.source.files),
        content=content,
        content_hash=content_hash(content),
        summary=current.summary if content == current.content else first_line_summary(content),
        updated=now,
        low_since=None,
    )


def evidence_of(
    memory_id: str, target: Memory, cand: Candidate, scope: Scope, source: Source, now: datetime
) -> tuple[Memory, Edge]:
    """A paraphrase merged into `target`, kept as evidence: the candidate stored superseded
    (history, export and `show` keep its wording; briefing and recall show the target), and
    the target's `derived_from` link to it, as consolidation links what it absorbs."""
    kept = superseded(new_memory(memory_id, cand, scope, source, now), now)
    return kept, Edge(target.id, memory_id, EdgeType.DERIVED_FROM, 1.0, EdgeStatus.ACTIVE, now)


def upgraded(current: Memory, pin: bool, priority: int | None, now: datetime) -> Memory:
    """A repeated remember's --pin/--priority applied to the memory it matched."""
    return replace(current, pinned=current.pinned or pin, priority=priority or current.priority, updated=now)


def superseded(memory: Memory, now: datetime) -> Memory:
    """The memory taken out of briefing and recall as of `now`; history keeps it."""
    return replace(memory, status=Status.SUPERSEDED, status_changed=now, updated=now)


def supersedes_edge(newer_id: str, older_id: str, now: datetime) -> Edge:
    """The link from the memory that replaces another to the one it replaces."""
    return Edge(newer_id, older_id, EdgeType.SUPERSEDES, 1.0, EdgeStatus.ACTIVE, now)
