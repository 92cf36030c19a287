"""Hypothesis strategies for cortex's values: memories, edges, graphs, search text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st

from cortex.core.model import (
    Edge,
    EdgeStatus,
    EdgeType,
    Memory,
    MemoryType,
    Scope,
    Source,
    Status,
)
from cortex.core.text import content_hash

EPOCH = datetime(2025, 1, 1, tzinfo=UTC)

ids = st.text(alphabet="abcdefghij0123456789", min_size=1, max_size=6)

datetimes = st.integers(min_value=0, max_value=3 * 365 * 86_400).map(lambda s: EPOCH + timedelta(seconds=s))

# Pieces of FTS5 query syntax and tokenizer edge cases that user text must not smuggle in.
FTS_SYNTAX = (
    '"', '""', "*", "^", ":", "-", "+", "(", ")", "{", "}", "NEAR(", "NEAR/2", "AND", "OR",
    "NOT", "content:", "{content summary}:", "'", "\\", "\x00", "\u2019", "\u200b", "\u0301",
    "\U0001f600", "\U0001f914", "_", ".", "e\u0301", "\u19b0", "\u1cf2", "\ufeff", "ß", "İ",
)  # fmt: skip

fts_text = st.one_of(
    st.text(),
    st.lists(
        st.one_of(st.sampled_from(FTS_SYNTAX), st.text(max_size=8), st.sampled_from([" ", "  "])),
        max_size=12,
    ).map("".join),
)


@st.composite
def memories(draw: st.DrawFn, memory_id: st.SearchStrategy[str] = ids) -> Memory:
    """A valid Memory with arbitrary ranking-relevant fields."""
    content = draw(st.text(min_size=1, max_size=60))
    created = draw(datetimes)
    return Memory(
        id=draw(memory_id),
        content=content,
        summary=content[:20],
        type=draw(st.sampled_from(MemoryType)),
        scope=draw(st.sampled_from(Scope)),
        confidence=draw(st.floats(0.0, 1.0)),
        priority=draw(st.integers(1, 10)),
        pinned=draw(st.booleans()),
        source=Source(branch=draw(st.sampled_from([None, "main", "feature/x"]))),
        tags=tuple(draw(st.lists(st.sampled_from(["main", "feature/x", "db", "ui"]), max_size=3))),
        access_count=draw(st.integers(0, 500)),
        last_accessed=None,
        created=created,
        updated=created + timedelta(seconds=draw(st.integers(0, 86_400 * 30))),
        status=Status.ACTIVE,
        content_hash=content_hash(content),
        centrality=draw(st.floats(0.0, 1.0)),
    )


def edges(nodes: st.SearchStrategy[str] = ids) -> st.SearchStrategy[Edge]:
    """An Edge between nodes drawn from `nodes` (self-loops allowed: callers must cope)."""
    return st.builds(
        Edge,
        source=nodes,
        target=nodes,
        type=st.sampled_from(EdgeType),
        strength=st.floats(0.0, 1.0),
        status=st.sampled_from(EdgeStatus),
    )


@st.composite
def graphs(draw: st.DrawFn, max_nodes: int = 12) -> tuple[list[str], list[Edge]]:
    """Distinct node ids and edges among them, unique per (source, target, type) as stored."""
    nodes = draw(st.lists(ids, min_size=1, max_size=max_nodes, unique=True))
    drawn = draw(st.lists(edges(st.sampled_from(nodes)), max_size=3 * len(nodes)))
    unique = {(e.source, e.target, e.type): e for e in drawn}
    return nodes, list(unique.values())


@st.composite
def ranked_lists(draw: st.DrawFn) -> dict[str, list[str]]:
    """Named ranked id lists, overlapping, possibly empty, possibly with repeats."""
    pool = draw(st.lists(ids, min_size=1, max_size=15, unique=True))
    names = draw(st.lists(st.sampled_from(["bm25", "vector", "code"]), unique=True, max_size=3))
    return {name: draw(st.lists(st.sampled_from(pool), max_size=12)) for name in names}
