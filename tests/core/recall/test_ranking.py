"""Tests for cortex.core.recall.ranking: RRF fusion, recency, time windows, MMR, briefing order."""

from __future__ import annotations

import dataclasses
import itertools
import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cortex.core.model import Memory, MemoryType, Scope, Source, Status
from cortex.core.recall.ranking import (
    BriefingWeights,
    fuse_rrf,
    rank_for_briefing,
    rank_mmr,
    score_briefing,
    score_recency,
    score_time_window,
)
from cortex.core.recall.timeref import TimeWindow
from tests.support.strategies import EPOCH, datetimes, ids, memories, ranked_lists

# --- fuse_rrf --------------------------------------------------------------------------------


def test_rrf_three_lists_by_hand() -> None:
    lists = {"bm25": ["a", "b", "c"], "vector": ["b", "a", "d"], "code": ["c", "d", "a"]}
    fused = fuse_rrf(lists, {"bm25": 1.0, "vector": 2.0, "code": 0.5}, k=1)
    # a: 1/2 + 2/3 + 0.5/4   b: 1/3 + 2/2   c: 1/4 + 0.5/2   d: 2/4 + 0.5/3
    assert [i for i, _ in fused] == ["b", "a", "d", "c"]
    assert [s for _, s in fused] == pytest.approx([4 / 3, 31 / 24, 2 / 3, 1 / 2])


def test_rrf_default_k_is_60() -> None:
    fused = dict(fuse_rrf({"bm25": ["a", "b"], "vector": ["b"]}, {"bm25": 1, "vector": 1}))
    assert fused == pytest.approx({"a": 1 / 61, "b": 1 / 62 + 1 / 61})


def test_rrf_signals_count_like_a_weighted_first_place() -> None:
    fused = dict(
        fuse_rrf(
            {"bm25": ["a", "b", "c"]},
            {"bm25": 1.0},
            k=1,
            extra={"recency": {"a": 1.0, "c": 0.5, "zzz": 1.0}, "priority": {"b": 7.0}},
            extra_weights={"recency": 2.0, "priority": 0.5},
        )
    )
    # recency adds 2 * v / (k + 1); priority is clamped to 1; ids no list returned are ignored.
    assert fused == pytest.approx({"a": 1 / 2 + 1.0, "b": 1 / 3 + 0.25, "c": 1 / 4 + 0.5})


def test_rrf_ties_go_to_the_better_rank_then_the_earlier_list() -> None:
    fused = fuse_rrf({"x": ["b", "a"], "y": ["a", "b"]}, {"x": 1, "y": 1})
    assert [i for i, _ in fused] == ["b", "a"]
    assert fused[0][1] == pytest.approx(fused[1][1])


def test_rrf_repeats_missing_weights_and_bad_input() -> None:
    fused = dict(fuse_rrf({"bm25": ["a", "a", "b"]}, {}, k=0))
    assert fused == pytest.approx({"a": 1.0, "b": 0.5})  # repeats dropped, weight defaults to 1
    with pytest.raises(ValueError, match="k must be"):
        fuse_rrf({"bm25": ["a"]}, {}, k=-1)
    with pytest.raises(ValueError, match=">= 0"):
        fuse_rrf({"bm25": ["a"]}, {"bm25": -1.0})


weights_st = st.dictionaries(st.sampled_from(["bm25", "vector", "code"]), st.floats(0, 3))
signal_st = st.dictionaries(ids, st.floats(allow_nan=True, allow_infinity=True), max_size=8)


@given(ranked_lists(), weights_st, st.integers(0, 100), signal_st, st.floats(0, 5))
def test_rrf_is_a_permutation_of_the_union_in_score_order(
    lists: dict[str, list[str]],
    weights: dict[str, float],
    k: int,
    signal: dict[str, float],
    signal_weight: float,
) -> None:
    fused = fuse_rrf(lists, weights, k, {"recency": signal}, {"recency": signal_weight})
    out = [i for i, _ in fused]
    assert sorted(out) == sorted({i for ranked in lists.values() for i in ranked})
    scores = [s for _, s in fused]
    assert all(math.isfinite(s) and s >= 0 for s in scores)
    assert scores == sorted(scores, reverse=True)


@given(ranked_lists(), weights_st)
def test_rrf_is_deterministic(lists: dict[str, list[str]], weights: dict[str, float]) -> None:
    assert fuse_rrf(lists, weights) == fuse_rrf(dict(lists), dict(weights))


# --- recency and time windows ----------------------------------------------------------------

NOW = datetime(2025, 6, 1, 12, tzinfo=UTC)


def test_recency_halves_every_half_life() -> None:
    assert score_recency(NOW, NOW, 30) == 1.0
    assert score_recency(NOW - timedelta(days=30), NOW, 30) == pytest.approx(0.5)
    assert score_recency(NOW - timedelta(days=60), NOW, 30) == pytest.approx(0.25)
    assert score_recency(NOW + timedelta(days=3), NOW, 30) == 1.0  # clock skew: not > 1
    with pytest.raises(ValueError, match="half_life_days"):
        score_recency(NOW, NOW, 0)


@given(datetimes, datetimes, st.floats(0.01, 1000))
def test_recency_is_in_unit_range_and_decreasing_with_age(a: datetime, b: datetime, half_life: float) -> None:
    older, newer = sorted([a, b])
    now = EPOCH + timedelta(days=2000)
    low, high = score_recency(older, now, half_life), score_recency(newer, now, half_life)
    assert 0.0 <= low <= high <= 1.0


def test_time_window_score() -> None:
    window = TimeWindow(datetime(2025, 3, 3, tzinfo=UTC), datetime(2025, 3, 10, tzinfo=UTC))
    assert score_time_window(datetime(2025, 3, 5, tzinfo=UTC), window) == 1.0
    assert score_time_window(window.start, window) == 1.0
    assert score_time_window(datetime(2025, 2, 24, tzinfo=UTC), window) == pytest.approx(0.5)
    assert score_time_window(datetime(2025, 3, 24, tzinfo=UTC), window) == pytest.approx(0.25)
    assert score_time_window(window.end, window, half_life_days=1) == pytest.approx(1.0)


# --- MMR -------------------------------------------------------------------------------------


def test_mmr_by_hand() -> None:
    relevance = {"a": 1.0, "b": 0.9, "c": 0.5}
    sim = {("a", "b"): 0.95, ("a", "c"): 0.1, ("c", "b"): 0.1}
    # Scaled relevance a=1, b=0.8, c=0. After a: b = .5*.8 - .5*.95 = -.075, c = -.05.
    assert rank_mmr(["a", "b", "c"], relevance, sim, lambda_=0.5, limit=3) == ["a", "c", "b"]
    assert rank_mmr(["a", "b", "c"], relevance, sim, lambda_=1.0, limit=3) == ["a", "b", "c"]
    assert rank_mmr(["c", "b", "a"], relevance, sim, lambda_=0.5, limit=2) == ["a", "c"]


def test_mmr_accepts_a_function_and_validates() -> None:
    same_initial = lambda x, y: 1.0 if x[0] == y[0] else 0.0  # noqa: E731
    picked = rank_mmr(["a1", "a2", "b1"], {"a1": 3, "a2": 2, "b1": 1}, same_initial, 0.5, 2)
    assert picked == ["a1", "b1"]
    assert rank_mmr(["a"], {"a": 1}, {}, 0.5, 0) == []
    with pytest.raises(ValueError, match="lambda_"):
        rank_mmr(["a"], {"a": 1}, {}, 1.5, 1)


mmr_input = st.lists(ids, max_size=15).flatmap(
    lambda pool: st.tuples(
        st.just(pool),
        st.dictionaries(st.sampled_from(pool) if pool else st.nothing(), st.floats(-5, 5)),
        st.dictionaries(
            st.tuples(st.sampled_from(pool), st.sampled_from(pool)) if pool else st.nothing(),
            st.floats(0, 1),
        ),
    )
)


@given(mmr_input, st.floats(0, 1), st.integers(-1, 20))
def test_mmr_picks_a_bounded_subset_led_by_the_most_relevant(
    data: tuple[list[str], dict[str, float], dict[tuple[str, str], float]],
    lambda_: float,
    limit: int,
) -> None:
    pool, relevance, sim = data
    picked = rank_mmr(pool, relevance, sim, lambda_, limit)
    distinct = list(dict.fromkeys(pool))
    assert len(picked) == len(set(picked)) == min(max(limit, 0), len(distinct))
    assert set(picked) <= set(distinct)
    if picked:
        best = max(relevance.get(i, 0.0) for i in distinct)
        first = next(i for i in distinct if relevance.get(i, 0.0) == best)
        assert picked[0] == first


@given(mmr_input, st.integers(0, 20))
def test_mmr_with_lambda_one_is_relevance_order(
    data: tuple[list[str], dict[str, float], dict[tuple[str, str], float]], limit: int
) -> None:
    pool, relevance, sim = data
    distinct = list(dict.fromkeys(pool))
    expected = sorted(distinct, key=lambda i: -relevance.get(i, 0.0))[:limit]  # stable
    assert rank_mmr(pool, relevance, sim, 1.0, limit) == expected


# --- briefing order --------------------------------------------------------------------------


def _memory(mid: str, **changes: object) -> Memory:
    base = Memory(
        id=mid,
        content=f"memory {mid}",
        summary=f"memory {mid}",
        type=MemoryType.PATTERN,
        scope=Scope.PROJECT,
        confidence=0.5,
        priority=5,
        pinned=False,
        source=Source(branch="main"),
        tags=(),
        access_count=0,
        last_accessed=None,
        created=NOW,
        updated=NOW,
        status=Status.ACTIVE,
        content_hash=mid,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_briefing_score_follows_the_spec_formula() -> None:
    m = _memory("m", confidence=0.8, priority=6, centrality=0.4, access_count=9)
    # 0.8*0.5 + 6/10*0.2 + 0.4*0.15 + log(10)/log(10)*0.15
    assert score_briefing(m, BriefingWeights(), math.log(10)) == pytest.approx(0.73)
    half = score_briefing(m, BriefingWeights(), math.log(100))
    assert half == pytest.approx(0.4 + 0.12 + 0.06 + 0.15 / 2)


@pytest.mark.parametrize(
    ("confidence", "priority", "centrality", "expected"),
    [
        (1.5, 12, 2.0, 0.85),  # each input above its range counts as its top
        (-0.2, -3, -1.0, 0.0),  # below: nothing
        (math.nan, 5, math.inf, 0.1),  # not a finite number: nothing
        (0.0, 0, 1.0, 0.15),  # the ends of the range are in it
    ],
)
def test_briefing_score_clamps_each_input_to_its_range(
    confidence: float, priority: int, centrality: float, expected: float
) -> None:
    m = _memory("m", confidence=confidence, priority=priority, centrality=centrality, access_count=0)
    assert score_briefing(m, BriefingWeights(), 0.0) == pytest.approx(expected)


def test_briefing_weights_are_normalised() -> None:
    m = _memory("m", confidence=0.8, priority=4, centrality=1.0, access_count=5)
    weights = BriefingWeights(confidence=2, priority=2, centrality=0, access=0)
    assert score_briefing(m, weights, 0.0) == pytest.approx((0.8 + 0.4) / 2)
    with pytest.raises(ValueError, match="positive"):
        BriefingWeights(confidence=0, priority=0, centrality=0, access=0)
    with pytest.raises(ValueError, match=">= 0"):
        BriefingWeights(confidence=-1)


def test_briefing_order_pinned_then_decisions_then_rank() -> None:
    low_pinned = _memory("p", pinned=True, confidence=0.1, priority=1)
    decision = _memory("d", type=MemoryType.DECISION, confidence=0.2, priority=2)
    strong = _memory("s", confidence=1.0, priority=10, centrality=1.0, access_count=50)
    weak = _memory("w", confidence=0.3)
    ordered = rank_for_briefing([weak, strong, decision, low_pinned])
    assert [m.id for m in ordered] == ["p", "d", "s", "w"]


def test_briefing_ties_newer_first_then_id() -> None:
    old = _memory("a", updated=NOW - timedelta(days=1))
    new_b, new_c = _memory("c"), _memory("b")
    assert [m.id for m in rank_for_briefing([old, new_b, new_c])] == ["b", "c", "a"]


def test_briefing_ties_of_one_instant_put_the_more_specific_note_first() -> None:
    # Real shape: the sections of one report, written together with the same rank.
    vague = _memory("a", content="Summary: I've successfully implemented the face detection as requested.")
    specific = _memory(
        "b",
        content="Completed: removed the orphaned `FaceDetector` impl; viola_jones.rs scans 24x24 windows",
    )
    older = _memory("c", content="Removed `rustface` 0.1 from Cargo.toml", updated=NOW - timedelta(days=1))
    assert [m.id for m in rank_for_briefing([vague, specific, older])] == ["b", "a", "c"]
    # Rank still comes first: a more specific note of a lower rank stays below.
    weaker = _memory("d", content=specific.content, confidence=0.1)
    assert [m.id for m in rank_for_briefing([vague, weaker])] == ["a", "d"]


def test_briefing_boosts_the_current_branch() -> None:
    on_main = _memory("a", confidence=0.6)
    on_feature = _memory("b", confidence=0.5, source=Source(branch="feature/x"))
    tagged = _memory("c", confidence=0.5, tags=("feature/x",))
    assert [m.id for m in rank_for_briefing([on_main, on_feature, tagged])] == ["a", "b", "c"]
    boosted = rank_for_briefing([on_main, on_feature, tagged], branch="feature/x")
    assert [m.id for m in boosted] == ["b", "c", "a"]


def test_briefing_recency_is_optional_and_needs_now() -> None:
    weights = BriefingWeights(recency=1.0)
    stale = _memory("a", confidence=0.9, updated=NOW - timedelta(days=300))
    fresh = _memory("b", confidence=0.5)
    assert [m.id for m in rank_for_briefing([stale, fresh])] == ["a", "b"]
    assert [m.id for m in rank_for_briefing([stale, fresh], weights, now=NOW)] == ["b", "a"]
    with pytest.raises(ValueError, match="now"):
        rank_for_briefing([stale], weights)


briefing_weights = st.builds(
    BriefingWeights,
    confidence=st.floats(0.01, 1),
    priority=st.floats(0, 1),
    centrality=st.floats(0, 1),
    access=st.floats(0, 1),
    branch_boost=st.floats(0, 1),
)


@given(st.lists(memories()), briefing_weights, st.sampled_from([None, "main", "feature/x"]))
def test_briefing_order_is_a_grouped_permutation(
    mems: list[Memory], weights: BriefingWeights, branch: str | None
) -> None:
    ordered = rank_for_briefing(mems, weights, branch=branch)
    assert sorted(map(id, ordered)) == sorted(map(id, mems))
    groups = [(not m.pinned, m.type is not MemoryType.DECISION) for m in ordered]
    assert groups == sorted(groups)
    max_log = max((math.log(m.access_count + 1) for m in mems), default=0.0)
    for (g1, m1), (g2, m2) in itertools.pairwise(zip(groups, ordered, strict=True)):
        if g1 == g2:
            r1 = score_briefing(m1, weights, max_log, branch=branch)
            assert r1 >= score_briefing(m2, weights, max_log, branch=branch)


@given(st.lists(memories(), unique_by=lambda m: m.id))
def test_briefing_order_ignores_input_order(mems: list[Memory]) -> None:
    assert rank_for_briefing(mems[::-1]) == rank_for_briefing(mems)
