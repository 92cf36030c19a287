"""Graph use cases over a store: gather edges hop by hop, traverse, recompute centrality."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cortex.app import Cortex
from cortex.core import graph
from cortex.core.model import Edge, EdgeType
from cortex.store.port import MemoryStore


def read_edges_near(
    store: MemoryStore, start: str, depth: int, include_suggested: bool = False
) -> list[Edge]:
    """Edges within `depth` hops of `start`, fetched one ring at a time (never the whole graph)."""
    seen_nodes = {start}
    frontier = [start]
    edges: dict[tuple[str, str, str], Edge] = {}
    for _ in range(depth):
        if not frontier:
            break
        ring = store.edges(frontier, status=None if include_suggested else "active")
        nxt = []
        for e in ring:
            edges[(e.source, e.target, e.type.value)] = e
            for node in (e.source, e.target):
                if node not in seen_nodes:
                    seen_nodes.add(node)
                    nxt.append(node)
        frontier = nxt
    return list(edges.values())


def traverse(
    cx: Cortex,
    ref: str,
    *,
    depth: int = 2,
    types: Sequence[str] = (),
    direction: str = "both",
    min_strength: float = 0.0,
) -> dict[str, Any]:
    """Memories linked to `ref`, grouped by depth, with the edge that reached each."""
    store, start = cx.find(ref)
    edges = read_edges_near(store, start.id, depth)
    wanted = [EdgeType(t) for t in types] if types else None
    found = graph.traverse(
        start.id,
        edges,
        depth,
        wanted,
        direction,  # type: ignore[arg-type]
        min_strength,
    )
    memories = store.get_many([nid for _, nid, _ in found])
    levels: dict[int, list[dict[str, Any]]] = {}
    for hops, nid, edge in found:
        m = memories.get(nid)
        levels.setdefault(hops, []).append(
            {
                "id": nid,
                "type": m.type.value if m else "?",
                "summary": (m.summary or m.content[:80]) if m else "(not in this store)",
                "status": m.status.value if m else "missing",
                "edge": edge.type.value,
                "strength": edge.strength,
                "direction": "out" if edge.target == nid else "in",
            }
        )
    return {
        "start": {
            "id": start.id,
            "type": start.type.value,
            "summary": start.summary or start.content[:80],
        },
        "levels": [{"depth": d, "nodes": nodes} for d, nodes in sorted(levels.items())],
    }


def refresh_centrality(store: MemoryStore) -> dict[str, float]:
    """Recompute in-degree centrality from the active edges and store it (derived data)."""
    scores = graph.centrality(store.edges(status="active"), store.active_ids())
    store.write_centrality(scores)
    return scores
