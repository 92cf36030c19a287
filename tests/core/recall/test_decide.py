"""Recall's ranking decisions on hand-built candidate pools: fusion, signals, context, floors."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from cortex.core.model import Edge, EdgeType, Memory, MemoryType, Scope, Source, Status
from cortex.core.recall.decide import Gathered, RecallParams, RecallRequest, plan_recall
from cortex.core.text import content_hash

NOW = datetime(2025, 6, 30, 12, 0, tzinfo=UTC)
# Only the switch under test varies: every other second-pass feature is off.
BARE = RecallParams(
    use_intent=False,
    use_recency=False,
    use_priority=False,
    use_centrality=False,
    use_session=False,
    use_graph=False,
    use_prf=False,
    use_mmr=False,
    abstain=False,
)


def memory(
    mid: str,
    content: str = "",
    *,
    created: datetime = NOW - timedelta(days=10),
    session: str | None = None,
    status: Status = Status.ACTIVE,
    mem_type: MemoryType = MemoryType.CONTEXT,
) -> Memory:
    text = content or f"memory {mid}"
    return Memory(
        id=mid,
        content=text,
        summary=text[:40],
        type=mem_type,
        scope=Scope.PROJECT,
        confidence=0.9,
        priority=5,
        pinned=False,
        source=Source(session_id=session),
        tags=(),
        access_count=0,
        last_accessed=None,
        created=created,
        updated=created,
        status=status,
        content_hash=content_hash(text),
    )


def pool(
    lexical: list[str],
    vector: list[tuple[str, float]],
    mems: list[Memory],
    edges: tuple[Edge, ...] = (),
) -> Gathered:
    return Gathered(
        {"bm25:project": [(mid, 10.0 - i) for i, mid in enumerate(lexical)]},
        vector,
        {m.id: m for m in mems},
        edges=edges,
    )


def ids(plan: object) -> list[str]:
    return [h.id for h in plan.hits]  # type: ignore[attr-defined]


def test_a_memory_both_lists_agree_on_beats_one_list_tops() -> None:
    mems = [memory(m) for m in "abc"]
    got = pool(["a", "b"], [("c", 0.9), ("b", 0.8)], mems)
    plan = plan_recall(RecallRequest("q", limit=3), got, NOW, params=BARE)
    assert ids(plan)[0] == "b"
    assert set(ids(plan)) == {"a", "b", "c"}


def test_switching_a_list_off_ignores_its_candidates() -> None:
    mems = [memory(m) for m in "abc"]
    got = pool(["a"], [("c", 0.9), ("b", 0.8)], mems)
    no_vector = dataclasses.replace(BARE, use_vector=False)
    assert ids(plan_recall(RecallRequest("q", limit=5), got, NOW, params=no_vector)) == ["a"]
    no_lexical = dataclasses.replace(BARE, use_lexical=False)
    assert ids(plan_recall(RecallRequest("q", limit=5), got, NOW, params=no_lexical)) == ["c", "b"]


def test_a_named_period_lifts_memories_from_it() -> None:
    in_june = memory("june", created=datetime(2025, 6, 16, 9, tzinfo=UTC))
    in_march = memory("march", created=datetime(2025, 3, 2, 9, tzinfo=UTC))
    got = pool(["march", "june"], [("march", 0.7), ("june", 0.6)], [in_june, in_march])
    req = RecallRequest("what did we decide on 16 June?", limit=2)
    timed = dataclasses.replace(BARE, use_recency=True)
    assert ids(plan_recall(req, got, NOW, params=BARE)) == ["march", "june"]
    plan = plan_recall(req, got, NOW, params=timed)
    assert ids(plan) == ["june", "march"]
    assert plan.hits[0].signals["time"] == 1.0


def test_knowledge_update_questions_prefer_the_newer_memory() -> None:
    old = memory("old", created=NOW - timedelta(days=300))
    new = memory("new", created=NOW - timedelta(days=2))
    got = pool(["old", "new"], [("old", 0.8), ("new", 0.79)], [old, new])
    req = RecallRequest("which database do we currently use?", limit=2)
    timed = dataclasses.replace(BARE, use_recency=True, use_intent=True)
    assert ids(plan_recall(req, got, NOW, params=BARE)) == ["old", "new"]
    assert ids(plan_recall(req, got, NOW, params=timed)) == ["new", "old"]


def test_session_siblings_of_a_strong_hit_move_up() -> None:
    mems = [
        memory("hit", session="s1"),
        memory("sibling", session="s1"),
        memory("stranger", session="s2"),
    ]
    got = pool(["hit", "stranger", "sibling"], [("hit", 0.9), ("stranger", 0.5), ("sibling", 0.49)], mems)
    req = RecallRequest("q", limit=3)
    assert ids(plan_recall(req, got, NOW, params=BARE)) == ["hit", "stranger", "sibling"]
    context = dataclasses.replace(BARE, use_session=True, session_weight=0.5)
    plan = plan_recall(req, got, NOW, params=context)
    assert ids(plan) == ["hit", "sibling", "stranger"]
    assert plan.hits[1].signals["context"] > 0


def test_graph_expansion_brings_in_a_linked_memory_no_list_found() -> None:
    mems = [memory("hit"), memory("other"), memory("linked")]
    edges = (Edge("hit", "linked", EdgeType.RELATES_TO, 0.9),)
    got = pool(["hit", "other"], [("hit", 0.9), ("other", 0.5)], mems, edges)
    req = RecallRequest("q", limit=5)
    assert "linked" not in ids(plan_recall(req, got, NOW, params=BARE))
    graphed = dataclasses.replace(BARE, use_graph=True)
    assert "linked" in ids(plan_recall(req, got, NOW, params=graphed))


def test_graph_expansion_respects_the_filters() -> None:
    mems = [memory("hit"), memory("gone", status=Status.SUPERSEDED)]
    edges = (Edge("hit", "gone", EdgeType.RELATES_TO, 0.9),)
    got = pool(["hit"], [("hit", 0.9)], mems, edges)
    graphed = dataclasses.replace(BARE, use_graph=True)
    assert ids(plan_recall(RecallRequest("q", limit=5), got, NOW, params=graphed)) == ["hit"]


def test_mmr_pushes_a_near_duplicate_down() -> None:
    mems = [memory("a"), memory("a2"), memory("b")]
    got = pool(["a", "a2", "b"], [("a", 0.9), ("a2", 0.89), ("b", 0.6)], mems)

    def sim(x: str, y: str) -> float:
        return 0.99 if {x, y} == {"a", "a2"} else 0.1

    req = RecallRequest("q", limit=3)
    assert ids(plan_recall(req, got, NOW, sim, BARE)) == ["a", "a2", "b"]
    mmr = dataclasses.replace(BARE, use_mmr=True, mmr_lambda=0.5)
    assert ids(plan_recall(req, got, NOW, sim, mmr)) == ["a", "b", "a2"]


def test_weak_evidence_abstains_and_strong_evidence_does_not() -> None:
    mems = [memory("a", "the deploy runs on thursdays")]
    floors = dataclasses.replace(BARE, abstain=True)
    weak = pool([], [("a", 0.1)], mems)
    plan = plan_recall(RecallRequest("quantum chromodynamics", limit=3), weak, NOW, params=floors)
    assert plan.abstained and not plan.hits and plan.reason
    by_cosine = pool([], [("a", 0.8)], mems)
    assert ids(plan_recall(RecallRequest("release day", limit=3), by_cosine, NOW, params=floors)) == ["a"]
    by_words = pool(["a"], [("a", 0.1)], mems)
    plan = plan_recall(
        RecallRequest("how often do deploy runs happen", limit=3), by_words, NOW, params=floors
    )
    assert ids(plan) == ["a"]


def test_nothing_gathered_abstains() -> None:
    plan = plan_recall(RecallRequest("q"), Gathered({}, [], {}), NOW, params=BARE)
    assert plan.abstained and plan.hits == ()


def test_filters_drop_other_types_and_superseded_memories() -> None:
    mems = [
        memory("ctx"),
        memory("dec", mem_type=MemoryType.DECISION),
        memory("old", mem_type=MemoryType.DECISION, status=Status.SUPERSEDED),
    ]
    got = pool(["ctx", "dec", "old"], [], mems)
    req = RecallRequest("q", limit=5, types=("decision",))
    assert ids(plan_recall(req, got, NOW, params=BARE)) == ["dec"]
    req = dataclasses.replace(req, include_superseded=True)
    assert ids(plan_recall(req, got, NOW, params=BARE)) == ["dec", "old"]


_ID = st.sampled_from([f"m{i}" for i in range(12)])


@settings(max_examples=150, deadline=None)
@given(
    lexical=st.lists(_ID, unique=True, max_size=12),
    vector=st.lists(st.tuples(_ID, st.floats(-1.0, 1.0)), unique_by=lambda t: t[0], max_size=12),
    sessions=st.lists(st.sampled_from(["s1", "s2", None]), min_size=12, max_size=12),
    links=st.lists(st.tuples(_ID, _ID), max_size=8),
    limit=st.integers(0, 15),
    budget=st.one_of(st.none(), st.integers(0, 60)),
    flags=st.lists(st.booleans(), min_size=6, max_size=6),
)
def test_hits_are_distinct_known_bounded_and_within_budget(
    lexical: list[str],
    vector: list[tuple[str, float]],
    sessions: list[str | None],
    links: list[tuple[str, str]],
    limit: int,
    budget: int | None,
    flags: list[bool],
) -> None:
    mems = [memory(f"m{i}", f"note number {i} " * (i + 1), session=sessions[i]) for i in range(12)]
    edges = tuple(Edge(a, b, EdgeType.RELATES_TO, 0.5) for a, b in links if a != b)
    got = pool(lexical, sorted(vector, key=lambda t: -t[1]), mems, edges)
    params = RecallParams(
        use_intent=flags[0],
        use_recency=flags[1],
        use_session=flags[2],
        use_graph=flags[3],
        use_mmr=flags[4],
        abstain=flags[5],
    )
    plan = plan_recall(
        RecallRequest("note number", limit=limit, budget_tokens=budget),
        got,
        NOW,
        lambda a, b: 1.0 if a == b else 0.2,
        params,
    )
    hit_ids = ids(plan)
    assert len(hit_ids) == len(set(hit_ids)) <= limit
    assert set(hit_ids) <= {m.id for m in mems}
    if budget is not None:
        from cortex.core.budget import estimate_tokens

        spent = sum(estimate_tokens(got.memories[m].content) + 12 for m in hit_ids)
        assert spent <= budget
    listed = set(lexical) | {m for m, _ in vector}
    if not params.use_graph:
        assert set(hit_ids) <= listed
    if plan.abstained:
        assert not hit_ids


def test_priority_and_confidence_lift_a_memory_over_an_equal_peer() -> None:
    faded = dataclasses.replace(memory("faded"), confidence=0.35, priority=3)
    vital = dataclasses.replace(memory("vital"), confidence=0.95, priority=9)
    got = pool(["faded", "vital"], [("faded", 0.80), ("vital", 0.79)], [faded, vital])
    req = RecallRequest("q", limit=2)
    assert ids(plan_recall(req, got, NOW, params=BARE)) == ["faded", "vital"]
    weighted = dataclasses.replace(BARE, use_priority=True)
    plan = plan_recall(req, got, NOW, params=weighted)
    assert ids(plan) == ["vital", "faded"]
    assert plan.hits[0].signals["priority"] > plan.hits[1].signals["priority"]
