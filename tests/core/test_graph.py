"""Tests for cortex.core.graph: edge-type names, adjacency, centrality, traversal, PageRank, and
the neighbourhood a recall hit shows."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cortex.core.graph import (
    adjacency,
    centrality,
    code_and_see_also,
    code_link_ends,
    edge_ref,
    edges_by_node,
    normalize_edge_type,
    personalized_pagerank,
    traverse,
    within_two_hops,
)
from cortex.core.model import Edge, EdgeStatus, EdgeType
from tests.support.strategies import graphs

R, D, C, X, F, S, SRC = (
    EdgeType.RELATES_TO,
    EdgeType.DERIVED_FROM,
    EdgeType.CONTRADICTS,
    EdgeType.EXEMPLIFIES,
    EdgeType.REFINES,
    EdgeType.SUPERSEDES,
    EdgeType.SOURCE_OF,
)
SUGGESTED = EdgeStatus.SUGGESTED


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        *[(t.value, t) for t in EdgeType],
        ("related", R),
        ("related_to", R),
        ("relates", R),
        ("see_also", R),
        ("See also", R),
        ("RELATES-TO", R),
        ("derives_from", D),
        ("derived", D),
        ("contradict", C),
        ("conflicts_with", C),
        ("example_of", X),
        ("refines", F),
        ("refinement_of", F),
        ("supersede", S),
        ("replaces", S),
        ("source", SRC),
        ("code_for", SRC),
        ("  code for ", SRC),
        ("blocks", None),
        ("", None),
        ("relates_to_x", None),
    ],
)
def test_normalize_edge_type(name: str, expected: EdgeType | None) -> None:
    assert normalize_edge_type(name) is expected


def test_adjacency_filters_and_orders() -> None:
    edges = [
        Edge("a", "b", R, 0.4),
        Edge("a", "c", D, 0.9),
        Edge("a", "d", R, 0.9),
        Edge("a", "e", R, 0.8, SUGGESTED),
        Edge("f", "a", C, 0.2),
    ]
    out = adjacency(edges)
    assert [n for n, _ in out["a"]] == ["c", "d", "b"]  # strongest first, then by id
    assert [n for n, _ in adjacency(edges, include_suggested=True)["a"]] == ["c", "d", "e", "b"]
    assert [n for n, _ in adjacency(edges, types={R})["a"]] == ["d", "b"]
    assert [n for n, _ in adjacency(edges, min_strength=0.5)["a"]] == ["c", "d"]
    assert [n for n, _ in adjacency(edges, direction="in")["a"]] == ["f"]
    assert [n for n, _ in adjacency(edges, direction="both")["a"]] == ["c", "d", "b", "f"]
    with pytest.raises(ValueError, match="direction"):
        adjacency(edges, direction="up")  # type: ignore[arg-type]


def test_centrality_is_weighted_in_degree() -> None:
    edges = [
        Edge("a", "c", R, 1.0),
        Edge("b", "c", D, 0.5),
        Edge("c", "a", R, 0.5),
        Edge("d", "c", R, 1.0, SUGGESTED),  # suggested: ignored
        Edge("x", "c", R, 1.0),  # unknown source: ignored
        Edge("c", "c", R, 1.0),  # self-loop: ignored
    ]
    ids = ["a", "b", "c"]
    assert centrality(edges, ids) == pytest.approx({"a": 0.25, "b": 0.0, "c": 0.75})
    assert centrality(edges, ids, min_scale=0) == pytest.approx({"a": 1 / 3, "b": 0, "c": 1})
    assert centrality(edges, ids, include_suggested=True, min_scale=0)["c"] == 1.0
    assert centrality([], ["a"], min_scale=0) == {"a": 0.0}


@given(graphs(), st.floats(0, 5))
def test_centrality_is_in_unit_range(graph: tuple[list[str], list[Edge]], scale: float) -> None:
    nodes, edges = graph
    scores = centrality(edges, nodes, min_scale=scale)
    assert set(scores) == set(nodes)
    assert all(0.0 <= s <= 1.0 for s in scores.values())


CHAIN = [
    Edge("a", "b", R, 0.5),
    Edge("b", "c", R, 0.5),
    Edge("c", "d", D, 0.5),
    Edge("a", "c", R, 0.9),
    Edge("d", "e", R, 0.1),
    Edge("z", "a", C, 1.0),
]


def test_traverse_bfs_by_depth() -> None:
    found = traverse("a", CHAIN, depth=2)
    assert [(d, n) for d, n, _ in found] == [(1, "c"), (1, "b"), (2, "d")]
    assert found[2][2] == Edge("c", "d", D, 0.5)  # the edge that reached it
    assert [n for _, n, _ in traverse("a", CHAIN, depth=9)] == ["c", "b", "d", "e"]
    assert traverse("a", CHAIN, depth=0) == []
    assert traverse("missing", CHAIN, depth=3) == []


def test_traverse_options() -> None:
    assert [(d, n) for d, n, _ in traverse("d", CHAIN, 2, direction="in")] == [
        (1, "c"),
        (2, "a"),
        (2, "b"),
    ]
    both = traverse("a", CHAIN, 1, direction="both")
    assert [n for _, n, _ in both] == ["z", "c", "b"]
    assert [n for _, n, _ in traverse("a", CHAIN, 5, types={R})] == ["c", "b"]
    assert [n for _, n, _ in traverse("a", CHAIN, 5, min_strength=0.6)] == ["c"]
    suggested = [Edge("a", "q", R, 1.0, SUGGESTED)]
    assert traverse("a", suggested, 1) == []
    assert [n for _, n, _ in traverse("a", suggested, 1, include_suggested=True)] == ["q"]


@given(graphs(), st.integers(0, 4), st.sampled_from(["out", "in", "both"]))
def test_traverse_visits_each_reachable_node_once_at_its_depth(
    graph: tuple[list[str], list[Edge]], depth: int, direction: str
) -> None:
    nodes, edges = graph
    start = nodes[0]
    found = traverse(start, edges, depth, direction=direction)  # type: ignore[arg-type]
    level = {start: 0} | {n: d for d, n, _ in found}
    names = [n for _, n, _ in found]
    assert start not in names and len(names) == len(set(names))
    assert [d for d, _, _ in found] == sorted(d for d, _, _ in found)
    adj = adjacency(edges, direction)  # type: ignore[arg-type]
    for d, node, edge in found:
        assert 1 <= d <= depth
        parent = edge.source if edge.target == node else edge.target
        assert level.get(parent) == d - 1  # reached from the previous level
    for node, d in level.items():
        if d < depth:  # its neighbours were all found, no deeper than one more hop
            assert all(level.get(n, depth + 1) <= d + 1 for n, _ in adj.get(node, []))


def test_pagerank_two_nodes_matches_closed_form() -> None:
    alpha = 0.15
    ranks = personalized_pagerank({"a": 1.0}, [Edge("a", "b", R, 1.0)], alpha, iters=300)
    # r_a = alpha + (1 - alpha) r_b and r_b = (1 - alpha) r_a.
    assert ranks == pytest.approx({"a": 1 / (2 - alpha), "b": (1 - alpha) / (2 - alpha)})


def test_pagerank_follows_strength_and_ignores_the_unreachable() -> None:
    edges = [
        Edge("s", "strong", R, 0.9),
        Edge("s", "weak", R, 0.1),
        Edge("other", "island", R, 1.0),
    ]
    ranks = personalized_pagerank({"s": 2.0, "nobody": 0.0}, edges)
    assert set(ranks) == {"s", "strong", "weak"}
    assert ranks["s"] > ranks["strong"] > ranks["weak"] > 0
    assert sum(ranks.values()) == pytest.approx(1.0)
    assert personalized_pagerank({"lonely": 1.0}, edges) == {"lonely": 1.0}
    assert personalized_pagerank({"s": 0.0}, edges) == {}
    out_only = personalized_pagerank({"weak": 1.0}, edges, direction="out")
    assert out_only == {"weak": 1.0}  # no out-edges: the walk always restarts
    with pytest.raises(ValueError, match="alpha"):
        personalized_pagerank({"s": 1.0}, edges, alpha=0.0)


@given(graphs(), st.floats(0.05, 1.0), st.integers(0, 40))
def test_pagerank_is_a_distribution(graph: tuple[list[str], list[Edge]], alpha: float, iters: int) -> None:
    nodes, edges = graph
    seeds = {nodes[0]: 1.0, nodes[-1]: 0.5}
    ranks = personalized_pagerank(seeds, edges, alpha=alpha, iters=iters)
    assert sum(ranks.values()) == pytest.approx(1.0)
    assert all(score > 0 for score in ranks.values())
    assert set(seeds) <= set(ranks)


# -- a recall hit's neighbourhood ---------------------------------------------------------------


def test_edge_ref_is_the_promote_and_drop_syntax() -> None:
    assert edge_ref(Edge("a1", "b2", R, 0.5)) == "a1:b2:relates_to"


def test_edges_are_indexed_from_both_ends_once() -> None:
    ab, loop, cb = Edge("a", "b", R, 0.5), Edge("c", "c", R, 0.5), Edge("c", "b", D, 0.5)
    index = edges_by_node([ab, loop, cb])
    assert index == {"a": [ab], "b": [ab, cb], "c": [loop, cb]}


def test_within_two_hops_keeps_only_what_a_depth_two_walk_uses() -> None:
    ab, bc, cd, xy = (Edge("a", "b", R, 0.5), Edge("b", "c", R, 0.5), Edge("c", "d", R, 0.5),
                      Edge("x", "y", R, 0.5))  # fmt: skip
    near = within_two_hops(edges_by_node([ab, bc, cd, xy]), "a")
    assert near == [ab, bc]  # the start's edges first, then its neighbours'; c-d is three hops out
    assert within_two_hops({}, "a") == []


@given(graphs())
def test_within_two_hops_walks_like_the_whole_graph(graph: tuple[list[str], list[Edge]]) -> None:
    nodes, edges = graph
    index = edges_by_node(edges)
    for start in nodes:
        local = traverse(start, within_two_hops(index, start), 2, direction="both")
        assert {n for _, n, _ in local} == {n for _, n, _ in traverse(start, edges, 2, direction="both")}


def test_a_hit_brings_its_code_and_related_memories_not_shown_yet() -> None:
    edges = [
        Edge("hit", "code1", SRC, 1.0),
        Edge("code2", "hit", SRC, 1.0),
        Edge("hit", "rel", R, 0.9),
        Edge("rel", "far", D, 0.8),
        Edge("hit", "shown", R, 0.7),
        Edge("code1", "beyond", R, 0.6),  # a link of the code counts; the code itself does not
    ]
    assert code_link_ends(edges) == {"hit", "code1", "code2"}
    code, see_also = code_and_see_also("hit", edges_by_node(edges), {"hit", "shown"}, 2, 5)
    assert code == ["code1", "code2"]
    assert see_also == ("rel", "beyond", "far")  # breadth first, strongest first within a hop
    assert code_and_see_also("hit", edges_by_node(edges), {"hit"}, 2, 1)[1] == ("rel",)
    assert code_and_see_also("lonely", edges_by_node(edges), set(), 2, 5) == ([], ())
