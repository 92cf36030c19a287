"""Decay and the archive/prune/restore rules: examples and properties over generated histories."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex.core.lifecycle import decay
from cortex.core.lifecycle.decay import (
    ARCHIVE_AFTER_DAYS,
    ARCHIVE_FLOOR,
    PRUNE_AFTER_DAYS,
    SLACK_DAYS,
    Transition,
    half_life_days,
    plan_memory,
    plan_restore,
    plan_tick,
    score_confidence,
)
from cortex.core.model import Memory, MemoryType, Scope, Source, Status
from tests.support.strategies import memories

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
DECAYING = [t for t, h in decay.HALF_LIFE_DAYS.items() if h is not None]
LASTING = [t for t, h in decay.HALF_LIFE_DAYS.items() if h is None]


def mem(
    mem_type: MemoryType = MemoryType.PROGRESS,
    confidence: float = 0.7,
    *,
    pinned: bool = False,
    access_count: int = 0,
    centrality: float = 0.0,
    status: Status = Status.ACTIVE,
    at: datetime = T0,
) -> Memory:
    return Memory(
        id="m1",
        content="Edited cortex/lifecycle.py",
        summary="Edited cortex/lifecycle.py",
        type=mem_type,
        scope=Scope.PROJECT,
        confidence=confidence,
        priority=3,
        pinned=pinned,
        source=Source(),
        tags=(),
        access_count=access_count,
        last_accessed=None,
        created=at,
        updated=at,
        status=status,
        content_hash="h",
        centrality=centrality,
    )


def days(n: float) -> timedelta:
    return timedelta(days=n)


def apply(m: Memory, now: datetime) -> Memory:
    change = plan_memory(m, now)
    return change.after if change else m


# -- half-lives ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("mem_type", "expected"),
    [
        (MemoryType.PATTERN, 60.0),
        (MemoryType.GOTCHA, 45.0),
        (MemoryType.CONTEXT, 30.0),
        (MemoryType.PROGRESS, 7.0),
        (MemoryType.ARCHITECTURE, None),
        (MemoryType.DECISION, None),
        (MemoryType.CODE_DESCRIPTION, None),
        (MemoryType.CODE, None),
    ],
)
def test_half_life_per_type(mem_type: MemoryType, expected: float | None) -> None:
    assert half_life_days(mem(mem_type)) == expected


def test_confidence_halves_after_one_half_life() -> None:
    m = mem(MemoryType.PROGRESS, 0.8)
    assert score_confidence(m, T0 + days(7)) == pytest.approx(0.4)
    assert score_confidence(m, T0 + days(14)) == pytest.approx(0.2)


@pytest.mark.parametrize("boost", [{"access_count": 11}, {"centrality": 0.51}])
def test_frequent_recall_or_hub_doubles_the_half_life(boost: dict[str, float]) -> None:
    m = mem(MemoryType.GOTCHA, 0.8, **boost)  # type: ignore[arg-type]
    assert half_life_days(m) == 90.0
    assert score_confidence(m, T0 + days(90)) == pytest.approx(0.4)


def test_boost_thresholds_are_strict() -> None:
    assert half_life_days(mem(MemoryType.GOTCHA, access_count=10)) == 45.0
    assert half_life_days(mem(MemoryType.GOTCHA, centrality=0.5)) == 45.0


def test_pinned_never_decays() -> None:
    m = mem(MemoryType.PROGRESS, 0.7, pinned=True)
    assert half_life_days(m) is None
    assert score_confidence(m, T0 + days(365)) == 0.7


# -- ticks --------------------------------------------------------------------------------------
def test_tick_writes_decayed_confidence_and_moves_the_anchor() -> None:
    m = mem(MemoryType.PROGRESS, 0.8)
    change = plan_memory(m, T0 + days(7))
    assert change is not None and change.transition is Transition.DECAY
    assert change.after.confidence == pytest.approx(0.4)
    assert change.after.updated == T0 + days(7)


def test_tiny_decay_is_not_written() -> None:
    m = mem(MemoryType.PATTERN, 0.8)
    assert plan_memory(m, T0 + timedelta(hours=1)) is None


def test_progress_is_archived_14_days_after_crossing_the_floor_then_pruned_30_days_later() -> None:
    m = mem(MemoryType.PROGRESS, 0.6)  # crosses 0.3 after exactly one half-life (7 days)
    m = apply(m, T0 + days(10))
    assert m.status is Status.ACTIVE
    assert m.low_since == T0 + days(7)
    assert apply(m, T0 + days(20.9)).status is Status.ACTIVE
    archived = apply(m, T0 + days(21))
    assert archived.status is Status.ARCHIVED
    assert archived.status_changed == T0 + days(21)
    assert apply(archived, T0 + days(50.9)).status is Status.ARCHIVED
    pruned = apply(archived, T0 + days(51))
    assert pruned.status is Status.PRUNED
    assert plan_memory(pruned, T0 + days(400)) is None


def test_a_sparse_tick_archives_on_the_same_rule() -> None:
    """No tick for 40 days: the crossing is computed, so the memory is archived at once."""
    m = mem(MemoryType.PROGRESS, 0.6)
    change = plan_memory(m, T0 + days(40))
    assert change is not None and change.transition is Transition.ARCHIVE
    assert change.after.low_since == T0 + days(7)
    # ...but the prune clock starts when it was actually archived.
    assert apply(change.after, T0 + days(69)).status is Status.ARCHIVED


def test_hubs_and_pinned_memories_are_not_archived() -> None:
    for m in (mem(MemoryType.PROGRESS, 0.2, centrality=0.6), mem(MemoryType.PROGRESS, 0.2, pinned=True)):
        assert apply(m, T0 + days(100)).status is Status.ACTIVE


def test_a_recent_recall_holds_off_archiving() -> None:
    m = mem(MemoryType.PROGRESS, 0.6)
    m = replace(m, last_accessed=T0 + days(18), access_count=1)
    assert apply(m, T0 + days(25)).status is Status.ACTIVE
    assert apply(m, T0 + days(32)).status is Status.ARCHIVED


def test_a_recall_of_an_archived_memory_restores_it() -> None:
    archived = apply(mem(MemoryType.PROGRESS, 0.6), T0 + days(30))
    assert archived.status is Status.ARCHIVED
    restored = plan_restore(archived, T0 + days(31))
    assert restored is not None
    assert restored.status is Status.ACTIVE and restored.low_since is None
    assert plan_restore(restored, T0 + days(31)) is None
    # it gets a fresh 14 days before being archived again
    assert apply(restored, T0 + days(44)).status is Status.ACTIVE
    assert apply(restored, T0 + days(45)).status is Status.ARCHIVED


def test_rising_confidence_clears_the_low_clock() -> None:
    m = apply(mem(MemoryType.PROGRESS, 0.6), T0 + days(10))
    assert m.low_since is not None
    reinforced = replace(m, confidence=0.9, updated=T0 + days(11))
    after = apply(reinforced, T0 + days(12))
    assert after.low_since is None and after.status is Status.ACTIVE


def test_plan_tick_lists_only_changes() -> None:
    lasting = replace(mem(MemoryType.DECISION, 0.9), id="d")
    fading = replace(mem(MemoryType.PROGRESS, 0.9), id="p")
    plan = plan_tick([lasting, fading], T0 + days(3))
    assert [c.before.id for c in plan.changes] == ["p"]
    assert decay.count_by_transition(plan.changes) == {"decay": 1}


# -- properties ---------------------------------------------------------------------------------
offsets = st.floats(min_value=0, max_value=400, allow_nan=False)


@given(memories(), offsets, offsets)
def test_confidence_is_monotone_non_increasing_in_age(m: Memory, a: float, b: float) -> None:
    early, late = sorted((a, b))
    assert score_confidence(m, m.updated + days(late)) <= score_confidence(m, m.updated + days(early))
    assert score_confidence(m, m.updated + days(late)) <= m.confidence


@given(memories(), offsets)
def test_pinned_and_lasting_types_never_decay(m: Memory, age: float) -> None:
    for frozen in (replace(m, pinned=True), replace(m, type=LASTING[int(age) % len(LASTING)])):
        now = frozen.updated + days(age)
        assert score_confidence(frozen, now) == frozen.confidence
        change = plan_memory(frozen, now)
        assert change is None or change.after.confidence == frozen.confidence


@given(
    st.sampled_from(DECAYING),
    st.floats(0.05, 1.0),
    st.lists(st.floats(0.01, 20.0), min_size=1, max_size=25),
)
def test_ticking_often_or_once_gives_the_same_confidence(
    mem_type: MemoryType, c0: float, gaps: list[float]
) -> None:
    start = replace(mem(mem_type, c0), centrality=0.0)
    m, now = start, T0
    for gap in gaps:
        now += days(gap)
        m = apply(m, now)
        if m.status is not Status.ACTIVE:
            return
    assert score_confidence(m, now) == pytest.approx(score_confidence(start, now), abs=1e-5)


def _first_tick_at_or_after(ticks: list[datetime], when: datetime) -> datetime | None:
    return next((t for t in ticks if t >= when), None)


@settings(max_examples=200)
@given(
    st.sampled_from(DECAYING),
    st.floats(0.05, 1.0),
    st.lists(st.floats(0.05, 9.0), min_size=1, max_size=60),
)
def test_archive_and_prune_times_do_not_depend_on_the_tick_schedule(
    mem_type: MemoryType, c0: float, gaps: list[float]
) -> None:
    m = mem(mem_type, c0)
    h = decay.HALF_LIFE_DAYS[mem_type]
    assert h is not None
    crossing = T0 + days(h * math.log2(c0 / ARCHIVE_FLOOR)) if c0 >= ARCHIVE_FLOOR else T0
    due = crossing + days(ARCHIVE_AFTER_DAYS)
    ticks, now = [], T0
    for gap in gaps:
        now += days(gap)
        ticks.append(now)
    archived_at = pruned_at = None
    for t in ticks:
        before = m
        m = apply(m, t)
        if before.status is Status.ACTIVE and m.status is Status.ARCHIVED:
            archived_at = t
        if before.status is Status.ARCHIVED and m.status is Status.PRUNED:
            pruned_at = t
    expected_archive = _first_tick_at_or_after(ticks, due)
    if not _near(ticks, due):
        assert archived_at == expected_archive
    if archived_at is not None:
        prune_due = archived_at + days(PRUNE_AFTER_DAYS)
        if not _near(ticks, prune_due):
            assert pruned_at == _first_tick_at_or_after(ticks, prune_due)


def _near(ticks: list[datetime], when: datetime) -> bool:
    """A tick within two minutes of a deadline may fall either side of it (rules are to the minute)."""
    return any(abs((t - when).total_seconds()) < 120 for t in ticks)


events = st.lists(
    st.tuples(st.sampled_from(["tick", "tick", "tick", "recall"]), st.floats(0.0, 12.0)),
    min_size=1,
    max_size=50,
)


def _recall(m: Memory, now: datetime) -> Memory:
    """What recall does (retrieval._apply_access): count the access, restore if archived."""
    if m.status is Status.PRUNED:
        return m  # recall never returns pruned memories
    m = replace(m, access_count=m.access_count + 1, last_accessed=now)
    return plan_restore(m, now) or m


@settings(max_examples=300)
@given(
    st.sampled_from(list(MemoryType)),
    st.floats(0.0, 1.0),
    st.booleans(),
    st.sampled_from([0.0, 0.3, 0.8]),
    events,
)
def test_transitions_follow_the_rules_for_any_history(
    mem_type: MemoryType, c0: float, pinned: bool, centrality: float, history: list[tuple[str, float]]
) -> None:
    m = mem(mem_type, c0, pinned=pinned, centrality=centrality)
    now = T0
    for kind, gap in history:
        now += days(gap)
        if kind == "recall":
            before = m
            m = _recall(m, now)
            if before.status is Status.ARCHIVED:
                assert m.status is Status.ACTIVE and m.low_since is None
            continue
        before, m = m, apply(m, now)
        exempt = before.pinned or before.centrality > decay.HUB_CENTRALITY
        current = score_confidence(before, now)
        assert m.confidence <= before.confidence
        if before.status is Status.PRUNED:
            assert m == before  # terminal for the tick
        elif before.status is Status.ACTIVE:
            assert m.status in (Status.ACTIVE, Status.ARCHIVED)
            if m.status is Status.ARCHIVED:
                assert not exempt
                assert current < ARCHIVE_FLOOR
                assert m.low_since is not None
                clock = max(m.low_since, before.last_accessed or m.low_since)
                assert now - clock >= days(ARCHIVE_AFTER_DAYS - SLACK_DAYS)
                assert m.status_changed == now
            elif m.low_since is not None and not exempt:
                clock = max(m.low_since, before.last_accessed or m.low_since)
                assert now - clock < days(ARCHIVE_AFTER_DAYS - SLACK_DAYS)
            if current >= ARCHIVE_FLOOR + 1e-9:
                assert m.status is Status.ACTIVE and m.low_since is None
        else:  # archived
            touched = max(t for t in (before.updated, before.status_changed, before.last_accessed) if t)
            idle = now - touched
            assert (m.status is Status.PRUNED) == (idle >= days(PRUNE_AFTER_DAYS - SLACK_DAYS))
            assert m.confidence == before.confidence
