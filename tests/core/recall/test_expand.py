"""Second-pass evidence: session siblings and graph neighbours of first-pass hits."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cortex.core.model import Edge, EdgeType
from cortex.core.recall.expand import rank_graph_neighbours, score_session_context


def test_a_memory_is_vouched_for_by_its_best_sibling_not_by_itself() -> None:
    relevance = {"a": 1.0, "b": 0.5, "c": 0.2, "d": 0.8}
    sessions = {"a": "s1", "b": "s1", "c": "s1", "d": "s2"}
    scores = score_session_context(relevance, sessions)
    assert scores["a"] == 0.5  # its best sibling is b
    assert scores["b"] == 1.0  # a vouches for b and c
    assert scores["c"] == 1.0
    assert scores["d"] == 0.0  # alone in its session


def test_memories_without_a_session_get_no_context() -> None:
    scores = score_session_context({"a": 1.0, "b": 0.9}, {"a": None, "b": None})
    assert scores == {}
    assert score_session_context({}, {}) == {}
    assert score_session_context({"a": 0.0}, {"a": "s"}) == {}


def test_equal_best_siblings_vouch_for_each_other() -> None:
    scores = score_session_context({"a": 0.6, "b": 0.6}, {"a": "s", "b": "s"})
    assert scores == {"a": 1.0, "b": 1.0}


@given(
    st.dictionaries(
        st.sampled_from("abcdefgh"),
        st.tuples(st.floats(0.0, 5.0), st.sampled_from(["s1", "s2", None])),
        max_size=8,
    )
)
def test_session_context_is_a_share_of_the_best_relevance(
    items: dict[str, tuple[float, str | None]],
) -> None:
    relevance = {k: v[0] for k, v in items.items()}
    sessions = {k: v[1] for k, v in items.items()}
    scores = score_session_context(relevance, sessions)
    assert set(scores) <= {k for k, s in sessions.items() if s is not None}
    assert all(0.0 <= v <= 1.0 for v in scores.values())


def test_graph_neighbours_of_seeds_rank_above_unlinked_ones() -> None:
    edges = [
        Edge("a", "x", EdgeType.RELATES_TO, 0.9),
        Edge("x", "far", EdgeType.RELATES_TO, 0.9),
        Edge("b", "y", EdgeType.RELATES_TO, 0.1),
        Edge("b", "z", EdgeType.RELATES_TO, 0.9),
    ]
    ranked = rank_graph_neighbours({"a": 1.0, "b": 0.2}, edges, limit=10)
    order = [mid for mid, _ in ranked]
    assert order[0] == "a"
    assert order.index("x") < order.index("far")
    assert order.index("z") < order.index("y")
    assert len(rank_graph_neighbours({"a": 1.0}, edges, limit=2)) == 2
    assert rank_graph_neighbours({}, edges, limit=5) == []
