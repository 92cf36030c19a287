"""Confidence decay and the archive/prune/restore rules as functions of (memory, now). Pure.

Decay is anchored at `updated`: the stored confidence was true then and halves every half-life
since. A tick that writes a decayed value also moves `updated` to the tick time, so ticking
often or rarely gives the same curve (0.5^(a/h) * 0.5^(b/h) = 0.5^((a+b)/h)).

The archive clock starts when confidence crossed the floor (computed exactly, so sparse ticks
archive on the same day as frequent ones) or at the last recall, whichever is later: a memory
that is still being recalled is not idle. The prune clock starts at the last touch of an
archived memory (archived, recalled or updated), as recorded, so a user who was away for two
months sees memories archived before any is pruned.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from cortex.core.model import Memory, MemoryType, Status

SECONDS_PER_DAY = 86_400.0
# None = never decays (SPEC §6). Preferences are stated by a person on purpose and hold until
# they are changed, so they do not fade either.
HALF_LIFE_DAYS: dict[MemoryType, float | None] = {
    MemoryType.ARCHITECTURE: None,
    MemoryType.DECISION: None,
    MemoryType.CODE_DESCRIPTION: None,
    MemoryType.CODE: None,
    MemoryType.PREFERENCE: None,
    MemoryType.PATTERN: 60.0,
    MemoryType.GOTCHA: 45.0,
    MemoryType.CONTEXT: 30.0,
    MemoryType.PROGRESS: 7.0,
}
BOOST_ACCESS_OVER = 10  # more recalls than this doubles the half-life
HUB_CENTRALITY = 0.5  # above this: half-life doubled and never archived
ARCHIVE_FLOOR = 0.3
ARCHIVE_AFTER_DAYS = 14.0
PRUNE_AFTER_DAYS = 30.0
# Decayed confidence is written back only in steps at least this large: the value is exact
# whenever it is written, and the journal does not get a record per memory per tick.
DECAY_WRITE_STEP = 0.05
CONFIDENCE_DECIMALS = 6
# Clocks are compared to the minute: rounding the stored confidence moves a computed crossing
# by a few seconds, which must not push an archive past a tick that lands on the exact day.
SLACK_DAYS = 60.0 / SECONDS_PER_DAY


class Transition(StrEnum):
    """What a tick does to one memory (the journal op of the change)."""

    DECAY = "decay"
    ARCHIVE = "archive"
    PRUNE = "prune"
    RESTORE = "restore"


@dataclass(frozen=True, slots=True)
class Change:
    """One planned change: the memory before and after, and why."""

    transition: Transition
    before: Memory
    after: Memory
    reason: str


@dataclass(frozen=True, slots=True)
class TickPlan:
    """Every change a tick makes; memories not listed stay as they are."""

    changes: tuple[Change, ...]

    def of(self, transition: Transition) -> list[Change]:
        """The changes of one kind."""
        return [c for c in self.changes if c.transition is transition]


def _days(delta: timedelta) -> float:
    return delta.total_seconds() / SECONDS_PER_DAY


def is_boosted(m: Memory) -> bool:
    """Frequently recalled memories and hubs fade half as fast."""
    return m.access_count > BOOST_ACCESS_OVER or m.centrality > HUB_CENTRALITY


def half_life_days(m: Memory) -> float | None:
    """This memory's half-life in days, or None when it never decays (pinned, lasting types)."""
    if m.pinned:
        return None
    base = HALF_LIFE_DAYS.get(m.type)
    if base is None:
        return None
    return base * 2 if is_boosted(m) else base


def score_confidence(m: Memory, now: datetime) -> float:
    """Confidence decayed from `updated` to `now` (never above the stored value)."""
    half_life = half_life_days(m)
    if half_life is None or m.status is not Status.ACTIVE:
        return m.confidence
    age = max(_days(now - m.updated), 0.0)
    return float(m.confidence * 0.5 ** (age / half_life))


def crossing_time(m: Memory) -> datetime | None:
    """When the decay curve of `m` goes below the archive floor (None: it never does)."""
    half_life = half_life_days(m)
    if m.confidence < ARCHIVE_FLOOR:
        return m.updated
    if half_life is None or m.confidence <= 0:
        return None
    days = half_life * math.log2(m.confidence / ARCHIVE_FLOOR)
    return m.updated + timedelta(days=days)


def _archive_clock(low_since: datetime, m: Memory) -> datetime:
    if m.last_accessed is not None and m.last_accessed > low_since:
        return m.last_accessed
    return low_since


def _last_touch(m: Memory) -> datetime:
    touched = [m.updated, *(t for t in (m.status_changed, m.last_accessed) if t is not None)]
    return max(touched)


def is_exempt_from_archive(m: Memory) -> bool:
    """Pinned memories and hubs are never archived by decay."""
    return m.pinned or m.centrality > HUB_CENTRALITY


def plan_memory(m: Memory, now: datetime) -> Change | None:
    """The change one tick at `now` makes to `m`, if any."""
    if m.status is Status.ACTIVE:
        return _plan_active(m, now)
    if m.status is Status.ARCHIVED:
        idle = _days(now - _last_touch(m))
        if idle >= PRUNE_AFTER_DAYS - SLACK_DAYS:
            after = replace(m, status=Status.PRUNED, status_changed=now)
            return Change(Transition.PRUNE, m, after, f"archived and untouched for {idle:.0f} days")
    return None


def _plan_active(m: Memory, now: datetime) -> Change | None:
    current = score_confidence(m, now)
    low = current < ARCHIVE_FLOOR
    low_since = m.low_since
    if low and low_since is None:
        low_since = crossing_time(m)
    elif not low:
        low_since = None
    written = round(current, CONFIDENCE_DECIMALS)
    moved = m.confidence - written >= DECAY_WRITE_STEP
    confidence, updated = (written, now) if moved else (m.confidence, m.updated)
    if low and low_since is not None and not is_exempt_from_archive(m):
        idle = _days(now - _archive_clock(low_since, m))
        if idle >= ARCHIVE_AFTER_DAYS - SLACK_DAYS:
            after = replace(
                m,
                confidence=confidence,
                updated=updated,
                low_since=low_since,
                status=Status.ARCHIVED,
                status_changed=now,
            )
            return Change(
                Transition.ARCHIVE,
                m,
                after,
                f"confidence {current:.2f} < {ARCHIVE_FLOOR} for {idle:.0f} days",
            )
    if not moved and low_since == m.low_since:
        return None
    after = replace(m, confidence=confidence, updated=updated, low_since=low_since)
    return Change(Transition.DECAY, m, after, f"confidence {m.confidence:.2f} -> {current:.2f}")


def plan_tick(memories: Iterable[Memory], now: datetime) -> TickPlan:
    """Decay, archive and prune decisions for a tick at `now`, in input order."""
    changes = [c for c in (plan_memory(m, now) for m in memories) if c is not None]
    return TickPlan(tuple(changes))


def plan_restore(m: Memory, now: datetime) -> Memory | None:
    """A recalled archived (or pruned) memory made active again; None if it is not out."""
    if m.status not in (Status.ARCHIVED, Status.PRUNED):
        return None
    return replace(m, status=Status.ACTIVE, status_changed=now, updated=now, low_since=None)


def plan_tick_cutoffs(now: datetime) -> dict[MemoryType, datetime]:
    """Per decaying type, the `updated` time after which decay cannot yet move confidence by a
    write step (even from 1.0 with the shortest half-life): such memories need not be read.

    Memories that are low (or have a low clock running), archived or pinned are decided by
    other rules; the shell reads those separately.
    """
    factor = math.log2(1.0 / (1.0 - DECAY_WRITE_STEP))
    return {t: now - timedelta(days=h * factor) for t, h in HALF_LIFE_DAYS.items() if h is not None}


def prune_cutoff(now: datetime) -> datetime:
    """Archived memories last touched after this are not due for pruning yet."""
    return now - timedelta(days=PRUNE_AFTER_DAYS - SLACK_DAYS)


def count_by_transition(changes: Sequence[Change]) -> dict[str, int]:
    """How many changes of each kind (for reports)."""
    out: dict[str, int] = {}
    for c in changes:
        out[c.transition.value] = out.get(c.transition.value, 0) + 1
    return out
