"""Memory graph: edge-type names, adjacency, centrality, traversal, personalized PageRank, and
the neighbourhood a recall hit shows (its raw code and 'see also'). Pure."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Literal

from cortex.core.model import Edge, EdgeStatus, EdgeType

Direction = Literal["out", "in", "both"]
DIRECTIONS: tuple[Direction, ...] = ("out", "in", "both")

# A hub needs this much incoming strength before max-normalisation can call it 1.0, so in a
# sparse graph one weak link does not make a hub (SPEC §6 exempts hubs, centrality > 0.5).
CENTRALITY_MIN_SCALE = 2.0

_EDGE_ALIASES: dict[str, EdgeType] = {
    "related": EdgeType.RELATES_TO,
    "relates": EdgeType.RELATES_TO,
    "related_to": EdgeType.RELATES_TO,
    "relate": EdgeType.RELATES_TO,
    "see_also": EdgeType.RELATES_TO,
    "derives_from": EdgeType.DERIVED_FROM,
    "derived": EdgeType.DERIVED_FROM,
    "contradict": EdgeType.CONTRADICTS,
    "conflicts_with": EdgeType.CONTRADICTS,
    "example_of": EdgeType.EXEMPLIFIES,
    "exemplify": EdgeType.EXEMPLIFIES,
    "refine": EdgeType.REFINES,
    "refinement_of": EdgeType.REFINES,
    "supersede": EdgeType.SUPERSEDES,
    "replaces": EdgeType.SUPERSEDES,
    "source": EdgeType.SOURCE_OF,
    "code_for": EdgeType.SOURCE_OF,
}


def edge_ref(e: Edge) -> str:
    """An edge as the `SRC:TGT:TYPE` text `consolidate --promote/--drop` accepts."""
    return f"{e.source}:{e.target}:{e.type.value}"


def normalize_edge_type(name: str) -> EdgeType | None:
    """An edge type from a name or common alias ("see also", "Derived-From"); None if unknown."""
    key = "_".join(name.strip().casefold().replace("-", " ").split())
    try:
        return EdgeType(key)
    except ValueError:
        return _EDGE_ALIASES.get(key)


def _usable(edge: Edge, include_suggested: bool, min_strength: float) -> bool:
    return (include_suggested or edge.status is EdgeStatus.ACTIVE) and edge.strength >= min_strength


def adjacency(
    edges: Iterable[Edge],
    direction: Direction = "out",
    types: Collection[EdgeType] | None = None,
    min_strength: float = 0.0,
    include_suggested: bool = False,
) -> dict[str, list[tuple[str, Edge]]]:
    """Map each node to its (neighbour, edge) pairs, strongest first, then by neighbour id.

    Only active edges count unless `include_suggested`; "in" follows edges backwards, "both"
    either way (a self-loop then appears twice).
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    adj: dict[str, list[tuple[str, Edge]]] = {}
    for edge in edges:
        if not _usable(edge, include_suggested, min_strength):
            continue
        if types is not None and edge.type not in types:
            continue
        if direction in ("out", "both"):
            adj.setdefault(edge.source, []).append((edge.target, edge))
        if direction in ("in", "both"):
            adj.setdefault(edge.target, []).append((edge.source, edge))
    for neighbours in adj.values():
        neighbours.sort(key=lambda ne: (-ne[1].strength, ne[0], ne[1].type.value))
    return adj


def centrality(
    edges: Iterable[Edge],
    ids: Collection[str],
    include_suggested: bool = False,
    min_scale: float = CENTRALITY_MIN_SCALE,
) -> dict[str, float]:
    """Weighted in-degree centrality in [0,1] for every id in `ids`.

    A node's in-degree is the summed strength of the active edges pointing at it from other
    nodes in `ids` (self-loops and edges to or from unknown ids do not count); it is divided
    by max(largest in-degree, `min_scale`), so the best-linked node scores 1 once it has at
    least `min_scale` incoming strength.
    """
    known = set(ids)
    weight = dict.fromkeys(known, 0.0)
    for edge in edges:
        if (
            _usable(edge, include_suggested, 0.0)
            and edge.source != edge.target
            and edge.source in known
            and edge.target in known
        ):
            weight[edge.target] += max(edge.strength, 0.0)
    scale = max([min_scale, *weight.values()])
    if scale <= 0:
        return dict.fromkeys(known, 0.0)
    return {node: min(w / scale, 1.0) for node, w in weight.items()}


def traverse(
    start: str,
    edges: Iterable[Edge],
    depth: int,
    types: Collection[EdgeType] | None = None,
    direction: Direction = "out",
    min_strength: float = 0.0,
    include_suggested: bool = False,
) -> list[tuple[int, str, Edge]]:
    """Breadth-first neighbours of `start` up to `depth` hops, as (hops, id, edge that reached it).

    Each node appears once, at its smallest hop count; `start` never appears. Within a hop,
    nodes come in the order their parents did, each parent's neighbours strongest first.
    """
    adj = adjacency(edges, direction, types, min_strength, include_suggested)
    seen = {start}
    frontier = [start]
    found: list[tuple[int, str, Edge]] = []
    for hops in range(1, depth + 1):
        next_frontier: list[str] = []
        for node in frontier:
            for neighbour, edge in adj.get(node, []):
                if neighbour not in seen:
                    seen.add(neighbour)
                    next_frontier.append(neighbour)
                    found.append((hops, neighbour, edge))
        if not next_frontier:
            break
        frontier = next_frontier
    return found


def _transitions(adj: Mapping[str, list[tuple[str, Edge]]]) -> dict[str, list[tuple[str, float]]]:
    # Per node, where a walker goes and with what probability (strength-proportional).
    step: dict[str, list[tuple[str, float]]] = {}
    for node, neighbours in adj.items():
        weight: dict[str, float] = {}
        for neighbour, edge in neighbours:
            weight[neighbour] = weight.get(neighbour, 0.0) + max(edge.strength, 0.0)
        total = sum(weight.values())
        if total > 0:  # ratio per edge first: tiny strengths must not underflow to nothing
            step[node] = [(n, w / total) for n, w in weight.items() if w > 0]
    return step


def personalized_pagerank(
    seeds: Mapping[str, float],
    edges: Iterable[Edge],
    alpha: float = 0.15,
    iters: int = 30,
    direction: Direction = "both",
    include_suggested: bool = False,
) -> dict[str, float]:
    """Random walk with restart to `seeds`: how much each node is "near" the seeds.

    Seed weights (negative = 0) are normalised to a restart distribution; each step restarts
    with probability `alpha`, else follows an edge chosen in proportion to its strength
    ("both" by default: a link relates its two memories either way). Walks stuck at a node
    without edges restart. Returns the nodes with a positive score; scores sum to 1.
    Power iteration, O(iters * edges): for recall, pass the seeds' neighbourhood, not the store.
    """
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha must be in (0, 1], got {alpha}")
    restart = {node: w for node, w in sorted(seeds.items()) if 0 < w < math.inf}
    total = sum(restart.values())
    if not total:
        return {}
    restart = {node: w / total for node, w in restart.items()}
    step = _transitions(adjacency(edges, direction, include_suggested=include_suggested))
    rank = dict(restart)
    for _ in range(max(iters, 0)):
        stuck = 0.0
        nxt: dict[str, float] = {}
        for node, score in rank.items():
            mass = score * (1.0 - alpha)
            moves = step.get(node)
            if not moves:
                stuck += mass
                continue
            for neighbour, ratio in moves:
                nxt[neighbour] = nxt.get(neighbour, 0.0) + mass * ratio
        for node, w in restart.items():
            nxt[node] = nxt.get(node, 0.0) + (alpha + stuck) * w
        rank = nxt
    return {node: score for node, score in sorted(rank.items()) if score > 0}


# -- a recall hit's neighbourhood ---------------------------------------------------------------
def code_link_ends(edges: Iterable[Edge]) -> set[str]:
    """Every id at either end of a `source_of` edge: the raw code (and descriptions) to read."""
    return {end for e in edges if e.type == EdgeType.SOURCE_OF for end in (e.source, e.target)}


def edges_by_node(edges: Iterable[Edge]) -> dict[str, list[Edge]]:
    """Each node's edges, found from either end."""
    index: dict[str, list[Edge]] = {}
    for e in edges:
        index.setdefault(e.source, []).append(e)
        if e.target != e.source:
            index.setdefault(e.target, []).append(e)
    return index


def within_two_hops(index: Mapping[str, Sequence[Edge]], start: str) -> list[Edge]:
    """The edges a depth-2 walk from `start` can use, from an index of edges by node."""
    first = list(index.get(start, []))
    ring = {e.source for e in first} | {e.target for e in first}
    local = {(e.source, e.target, e.type): e for n in ring for e in index.get(n, [])}
    return [*first, *(e for key, e in local.items() if e not in first)]


def code_and_see_also(
    start: str, index: Mapping[str, Sequence[Edge]], shown: Collection[str], depth: int, limit: int
) -> tuple[list[str], tuple[str, ...]]:
    """For a recall hit: the ids its `source_of` edges link (its raw code), and up to `limit`
    related ids within `depth` (at most 2) links that the recall does not show already."""
    near_edges = within_two_hops(index, start)
    code_ids = [e.target for e in near_edges if e.type == EdgeType.SOURCE_OF and e.source == start]
    code_ids += [e.source for e in near_edges if e.type == EdgeType.SOURCE_OF and e.target == start]
    near = traverse(start, near_edges, depth, direction="both")
    see_also = tuple(nid for _, nid, e in near if nid not in shown and e.type != EdgeType.SOURCE_OF)
    return list(dict.fromkeys(code_ids)), see_also[:limit]
