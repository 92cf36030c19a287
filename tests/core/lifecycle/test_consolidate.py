"""Consolidation planning: near-duplicate clusters, provenance-keeping merges, contradictions."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex.core.lifecycle.consolidate import (
    match_edges,
    pairs_needing_cosine,
    parse_edge_ref,
    plan_auto_consolidation,
    plan_consolidation,
)
from cortex.core.model import Edge, EdgeStatus, EdgeType, Memory, MemoryType, Scope, Source, Status
from cortex.core.text import content_hash, jaccard, word_set
from cortex.core.write.similar import SimilarPair, find_similar_pairs, text_of

T0 = datetime(2025, 3, 1, tzinfo=UTC)
NOW = T0 + timedelta(days=30)


def mem(
    mid: str,
    content: str,
    mem_type: MemoryType = MemoryType.DECISION,
    *,
    days: int = 0,
    access: int = 0,
    files: tuple[str, ...] = (),
    tags: tuple[str, ...] = (),
    confidence: float = 0.7,
    priority: int = 5,
    pinned: bool = False,
    session: str | None = None,
) -> Memory:
    at = T0 + timedelta(days=days)
    return Memory(
        id=mid,
        content=content,
        summary=content[:40],
        type=mem_type,
        scope=Scope.PROJECT,
        confidence=confidence,
        priority=priority,
        pinned=pinned,
        source=Source(session_id=session, files=files),
        tags=tags,
        access_count=access,
        last_accessed=at if access else None,
        created=at,
        updated=at,
        status=Status.ACTIVE,
        content_hash=content_hash(content),
    )


WAL = "We use WAL mode for the SQLite store because several sessions write at the same time"
WAL2 = "We use WAL mode for the SQLite store because several sessions write at the same time."
WAL3 = "We use WAL mode for the SQLite store because many sessions write at the same time"


def test_near_duplicates_merge_into_one_memory_that_keeps_all_provenance() -> None:
    a = mem("a", WAL, days=1, access=3, files=("cortex/shell/db.py",), tags=("db",), session="s1")
    b = mem("b", WAL2 + " (two workers)", days=5, access=4, files=("cortex/store.py",), session="s2")
    c = mem("c", WAL3, days=2, access=1, tags=("sqlite",), confidence=0.9, priority=8)
    other = mem("x", "The briefing never exceeds 9,500 characters")
    plan = plan_consolidation([a, b, c, other], [], NOW)
    assert len(plan.merges) == 1
    merge = plan.merges[0]
    assert merge.keeper.id == "b"  # the fullest text stays
    merged = merge.merged
    assert merged.content == b.content and merged.content_hash == b.content_hash
    assert merged.access_count == 8
    assert merged.last_accessed == T0 + timedelta(days=5)
    assert merged.created == T0 + timedelta(days=1)
    assert merged.updated == NOW
    assert merged.confidence == 0.9 and merged.priority == 8
    assert set(merged.source.files) == {"cortex/shell/db.py", "cortex/store.py"}
    assert set(merged.tags) == {"db", "sqlite"}
    assert {m.id for m in merge.absorbed} == {"a", "c"}
    assert all(m.status is Status.SUPERSEDED and m.status_changed == NOW for m in merge.absorbed_after)
    derived = {(e.source, e.target) for e in merge.edges if e.type is EdgeType.DERIVED_FROM}
    assert derived == {("b", "a"), ("b", "c")}
    assert plan.destructive


def test_pinned_member_is_the_keeper_and_the_merge_stays_pinned() -> None:
    a = mem("a", WAL, pinned=True)
    b = mem("b", WAL2 + " (in practice)")
    merge = plan_consolidation([a, b], [], NOW).merges[0]
    assert merge.keeper.id == "a" and merge.merged.pinned


def test_links_of_absorbed_memories_move_to_the_keeper() -> None:
    a, b = mem("a", WAL), mem("b", WAL2 + " (two workers)")
    z = mem("z", "Store writes use BEGIN IMMEDIATE")
    edges = [
        Edge("a", "z", EdgeType.RELATES_TO, 0.4, EdgeStatus.ACTIVE, T0),
        Edge("z", "a", EdgeType.REFINES, 0.6, EdgeStatus.ACTIVE, T0),
        Edge("b", "z", EdgeType.RELATES_TO, 0.7, EdgeStatus.ACTIVE, T0),  # keeper already has it
        Edge("a", "b", EdgeType.RELATES_TO, 0.9, EdgeStatus.ACTIVE, T0),  # inside the cluster
    ]
    merge = plan_consolidation([a, b, z], edges, NOW).merges[0]
    moved = {(e.source, e.target, e.type) for e in merge.edges if e.type is not EdgeType.DERIVED_FROM}
    assert moved == {("z", "b", EdgeType.REFINES)}


def test_opposite_claims_are_flagged_not_merged() -> None:
    yes = mem("y", "We use Redis for the session cache", days=1)
    no = mem("n", "We do not use Redis for the session cache", days=3)
    plan = plan_consolidation([yes, no], [], NOW)
    assert not plan.merges
    assert [(c.newer.id, c.older.id) for c in plan.contradictions] == [("n", "y")]
    assert [(e.source, e.target, e.type, e.status) for e in plan.new_edges] == [
        ("n", "y", EdgeType.CONTRADICTS, EdgeStatus.SUGGESTED)
    ]
    assert not plan.destructive and not plan.empty


def test_known_contradictions_are_not_flagged_twice() -> None:
    yes = mem("y", "We use Redis for the session cache")
    no = mem("n", "We do not use Redis for the session cache")
    known = Edge("y", "n", EdgeType.CONTRADICTS, 0.8, EdgeStatus.SUGGESTED, T0)
    plan = plan_consolidation([yes, no], [known], NOW)
    assert not plan.contradictions and not plan.new_edges
    assert plan.suggested == (known,)


def test_different_types_and_code_are_never_merged() -> None:
    decision = mem("d", WAL)
    gotcha = mem("g", WAL2, MemoryType.GOTCHA)
    code1 = mem("c1", "def f(x):\n    return x + 1\n", MemoryType.CODE)
    code2 = mem("c2", "def f(x):\n    return x + 1\n\n", MemoryType.CODE)
    desc1 = mem("k1", "Python function f(x) in a.py: adds one", MemoryType.CODE_DESCRIPTION)
    desc2 = mem("k2", "Python function f(x) in b.py: adds one", MemoryType.CODE_DESCRIPTION)
    assert not plan_consolidation([decision, gotcha, code1, code2, desc1, desc2], [], NOW).merges


def test_uncertain_band_merges_only_with_a_high_cosine() -> None:
    a = mem("a", "Run the test suite with pytest and warnings as errors before each commit")
    b = mem("b", "Before every commit run the full suite of tests under pytest with warnings as errors")
    pairs = find_similar_pairs([text_of(a), text_of(b)])
    assert pairs and 0.5 <= pairs[0].jaccard < 0.8
    assert pairs_needing_cosine([a, b], pairs) == pairs
    assert not plan_consolidation([a, b], [], NOW, pairs=pairs).merges
    low = plan_consolidation([a, b], [], NOW, pairs=pairs, cosines={("a", "b"): 0.85})
    assert not low.merges
    high = plan_consolidation([a, b], [], NOW, pairs=pairs, cosines={("a", "b"): 0.95})
    assert len(high.merges) == 1 and high.merges[0].similarity == 0.95


def test_inactive_memories_are_left_alone() -> None:
    a = mem("a", WAL)
    b = replace(mem("b", WAL2), status=Status.ARCHIVED)
    assert not plan_consolidation([a, b], [], NOW).merges


def test_suggested_edges_are_listed_for_review() -> None:
    a, b = mem("a", WAL), mem("b", "Vectors live in vec0 tables")
    s = Edge("a", "b", EdgeType.RELATES_TO, 0.5, EdgeStatus.SUGGESTED, T0)
    act = Edge("b", "a", EdgeType.REFINES, 0.5, EdgeStatus.ACTIVE, T0)
    assert plan_consolidation([a, b], [s, act], NOW).suggested == (s,)


# -- auto trigger -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("extractions", "last", "active", "last_active", "due"),
    [
        (10, 0, 5, 0, True),  # every 10 extractions
        (9, 0, 5, 0, False),
        (25, 20, 5, 0, False),
        (21, 20, 81, 79, True),  # over 80 and grew
        (21, 20, 81, 81, False),  # over 80, nothing new since the last run
        (21, 20, 80, 10, False),  # exactly 80 is not over
    ],
)
def test_auto_consolidation_trigger(
    extractions: int, last: int, active: int, last_active: int, due: bool
) -> None:
    why = plan_auto_consolidation(
        extractions=extractions,
        last_extractions=last,
        active=active,
        last_active=last_active,
        every=10,
        active_over=80,
    )
    assert (why is not None) == due


# -- edge references ----------------------------------------------------------------------------
def test_edge_references_match_by_prefix_and_type() -> None:
    e1 = Edge("abc123", "def456", EdgeType.RELATES_TO, status=EdgeStatus.SUGGESTED)
    e2 = Edge("abc123", "def456", EdgeType.CONTRADICTS, status=EdgeStatus.SUGGESTED)
    e3 = Edge("fff000", "abc123", EdgeType.RELATES_TO, status=EdgeStatus.SUGGESTED)
    assert parse_edge_ref("ABC:def:relates_to") == ("abc", "def", "relates_to")
    assert match_edges(["abc:def:contradicts"], [e1, e2, e3]) == ([e2], [])
    matched, unknown = match_edges(["abc:def", "zzz:yyy"], [e1, e2, e3])
    assert set(matched) == {e1, e2} and unknown == ["zzz:yyy"]
    assert match_edges(["all"], [e1, e3])[0] == [e1, e3]
    with pytest.raises(ValueError):
        parse_edge_ref("abc")


# -- properties ---------------------------------------------------------------------------------
VOCAB = ["wal", "mode", "sqlite", "store", "session", "write", "lock", "not", "cache", "redis", "use", "fast"]
texts = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=8).map(" ".join)


@settings(max_examples=150)
@given(st.lists(texts, min_size=1, max_size=14), st.sampled_from([0.5, 0.6, 0.8]))
def test_prefix_filtering_finds_exactly_the_brute_force_pairs(contents: list[str], t: float) -> None:
    mems = [
        mem(f"m{i:02d}", c, (MemoryType.DECISION, MemoryType.GOTCHA)[i % 2]) for i, c in enumerate(contents)
    ]
    brute = set()
    for x, y in itertools.combinations(mems, 2):
        score = jaccard(word_set(x.content), word_set(y.content))
        if score >= t and x.type == y.type:
            brute.add((x.id, y.id))
    texts = [text_of(m) for m in mems]
    found = find_similar_pairs(texts, t)
    assert {(p.a, p.b) for p in found} == brute
    assert all(isinstance(p, SimilarPair) and p.a < p.b for p in found)
    probes = {m.id for m in mems[::3]}
    probed = find_similar_pairs(texts, t, probes)
    assert {(p.a, p.b) for p in probed} == {pair for pair in brute if set(pair) & probes}


@settings(max_examples=150)
@given(
    st.lists(
        st.tuples(texts, st.sampled_from([MemoryType.DECISION, MemoryType.GOTCHA]), st.integers(0, 20)),
        min_size=1,
        max_size=14,
    )
)
def test_every_merge_is_consistent(rows: list[tuple[str, MemoryType, int]]) -> None:
    mems = [mem(f"m{i:02d}", c, t, access=a, days=i) for i, (c, t, a) in enumerate(rows)]
    plan = plan_consolidation(mems, [], NOW)
    absorbed = [m.id for mg in plan.merges for m in mg.absorbed]
    keepers = [mg.keeper.id for mg in plan.merges]
    assert len(absorbed) == len(set(absorbed))
    assert not set(absorbed) & set(keepers)
    for mg in plan.merges:
        members = [mg.keeper, *mg.absorbed]
        assert len({m.type for m in members}) == 1
        assert mg.merged.access_count == sum(m.access_count for m in members)
        assert mg.merged.id == mg.keeper.id and mg.merged.status is Status.ACTIVE
        # The keeper says most: the most distinct words, then the longest text.
        said = [(len(word_set(m.content)), len(m.content)) for m in members]
        assert (len(word_set(mg.keeper.content)), len(mg.keeper.content)) == max(said)
        for x, y in itertools.combinations(members, 2):
            assert not (word_set(x.content) ^ word_set(y.content)) & {"not"}


def test_a_note_with_an_added_detail_is_never_absorbed_into_a_longer_poorer_one() -> None:
    # "metrics exporter contract" is the longer text, "checkout flow contract" adds a thing.
    poorer = mem(
        "a",
        "Tomasz owns the metrics exporter; ask before changing its setup or the metrics exporter contract",
    )
    richer = mem(
        "b", "Tomasz owns the metrics exporter; ask before changing its setup or the checkout flow contract"
    )
    assert len(poorer.content) > len(richer.content) and word_set(poorer.content) < word_set(richer.content)
    (merge,) = plan_consolidation([poorer, richer], [], NOW).merges
    assert merge.keeper.id == "b" and [m.id for m in merge.absorbed] == ["a"]
