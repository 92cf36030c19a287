"""Second-pass evidence for recall: session context and graph neighbourhoods of first-pass hits. Pure.

Both start from the first-pass fusion (relevance by id) and say which other memories the
strong hits vouch for: memories from the same session, or memories linked to them by edges
(personalized PageRank seeded with the hits).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from cortex.core import graph
from cortex.core.model import Edge

PPR_ALPHA = 0.5  # restart often: a hit vouches for its close neighbours, not the whole graph
PPR_ITERS = 20


def score_session_context(
    relevance: Mapping[str, float], session_of: Mapping[str, str | None]
) -> dict[str, float]:
    """Per id in [0,1]: the best relevance among the *other* candidates of its session, scaled
    by the best relevance overall (0 for ids without a session or without siblings)."""
    top = max(relevance.values(), default=0.0)
    if top <= 0:
        return {}
    best: dict[str, list[float]] = {}  # session -> two best relevances, best first
    for mid, rel in relevance.items():
        session = session_of.get(mid)
        if session is None:
            continue
        pair = best.setdefault(session, [0.0, 0.0])
        if rel > pair[0]:
            pair[0], pair[1] = rel, pair[0]
        elif rel > pair[1]:
            pair[1] = rel
    out: dict[str, float] = {}
    for mid, rel in relevance.items():
        session = session_of.get(mid)
        if session is None:
            continue
        first, second = best[session]
        sibling = second if rel >= first else first
        out[mid] = sibling / top
    return out


def rank_graph_neighbours(
    seeds: Mapping[str, float], edges: Iterable[Edge], limit: int
) -> list[tuple[str, float]]:
    """Ids near the seeds by personalized PageRank over active edges, best first (seeds too)."""
    scores = graph.personalized_pagerank(seeds, edges, alpha=PPR_ALPHA, iters=PPR_ITERS)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[: max(limit, 0)]
