"""A digest of a store's logical state (memories and edges, no derived fields). Pure.

Two stores with equal digests hold the same memories with the same fields and the same edges;
row numbers, FTS and vector indexes, centrality and the journal do not count, so rebuilding
the indexes, exporting and importing, or restoring a checkpoint can be checked by equality.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from cortex.core.model import Edge, Memory
from cortex.core.serial import dumps, edge_to_dict, logical_dict


@dataclass(frozen=True, slots=True)
class StateDigest:
    """The digest and the counts behind it (for display)."""

    digest: str
    memories: int
    edges: int

    def short(self) -> str:
        """The first 16 hex digits, enough to compare by eye."""
        return self.digest[:16]

    def describe(self) -> str:
        """`<short digest> (<n> memories, <m> edges)`."""
        return f"{self.short()} ({self.memories} memories, {self.edges} edges)"


def _edge_key(e: Edge) -> tuple[str, str, str]:
    return (e.source, e.target, e.type.value)


def digest_state(memories: Iterable[Memory], edges: Iterable[Edge]) -> StateDigest:
    """SHA-256 over canonical JSON lines of every memory (by id) and edge (by key)."""
    h = hashlib.sha256()
    mems = sorted(memories, key=lambda m: m.id)
    for m in mems:
        h.update(b"m" + dumps(logical_dict(m)).encode("utf-8") + b"\n")
    links = sorted(edges, key=_edge_key)
    for e in links:
        h.update(b"e" + dumps(edge_to_dict(e)).encode("utf-8") + b"\n")
    return StateDigest(h.hexdigest(), len(mems), len(links))
