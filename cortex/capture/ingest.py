"""Batch ingest: many memories through the write path (redact, gate, store) in one transaction.

The same code as `cortex.capture.write.write_candidate`, one transaction for the whole batch instead of
one per memory, each memory stamped with its own time (imports, backfills, benchmarks). Vectors
are written afterwards in one embedding call: the memory's own vector plus one per extra window
of a long memory (`cortex.core.write.chunks`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cortex.app import Cortex
from cortex.capture import write as writer
from cortex.core.model import Candidate, Memory, MemoryType, Scope, Source
from cortex.core.text import embedding_text
from cortex.core.write.chunks import plan_chunks
from cortex.recall.traverse import refresh_centrality
from cortex.store.sqlite import chunk_vectors, vectors
from cortex.store.sqlite.store import Store

log = logging.getLogger("cortex.capture.ingest")


@dataclass(frozen=True, slots=True)
class BatchItem:
    """One memory to write: a candidate, where it came from, and its time."""

    candidate: Candidate
    time: datetime
    source: Source = field(default_factory=Source)


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    """What happened to one item: stored, reinforced, duplicate, restored or empty."""

    action: str
    memory_id: str | None
    reason: str


def _write_one(
    cx: Cortex, store: Store, cand: Candidate, item: BatchItem, embedder: Any
) -> tuple[str, Memory, str]:
    plan = writer.plan_candidate(cx, store, cand, embedder)
    action, memory, _ = writer._apply(cx, store, cand, plan, item.source, item.time)
    return action, memory, plan.reason


def ingest_batch(
    cx: Cortex,
    items: Sequence[BatchItem],
    *,
    scope: Scope = Scope.PROJECT,
    embedder: Any = None,
    centrality: bool = True,
) -> list[BatchOutcome]:
    """Write items in order (each gated against the store and the items before it), then embed."""
    store = cx.write_store(scope)
    outcomes: list[BatchOutcome] = []
    touched: dict[str, Memory] = {}
    with store.transaction():
        for item in items:
            cand = writer.redacted(item.candidate)  # once: redaction and normalising cost ~40 ms per 10 kB
            if not cand.content:
                outcomes.append(BatchOutcome("empty", None, "nothing left after redaction"))
                continue
            action, memory, reason = _write_one(cx, store, cand, item, embedder)
            outcomes.append(BatchOutcome(action, memory.id, reason))
            if action in ("stored", "reinforced", "restored"):
                touched[memory.id] = memory
        if centrality:
            refresh_centrality(store)
    if embedder is not None and touched:
        write_embeddings(cx, store, list(touched.values()), embedder)
    return outcomes


def embedding_texts(cx: Cortex, memory: Memory, scope: Scope) -> list[str]:
    """What gets embedded for a memory: its own text, then its extra windows (same prefix)."""
    project = cx.project_name if scope == Scope.PROJECT else None
    main = writer.memory_text(cx, memory.content, memory.type, scope)
    windows = [embedding_text(c, memory.type.value, project) for c in plan_chunks(memory.content)]
    return [main, *windows]


def write_embeddings(cx: Cortex, store: Store, memories: Sequence[Memory], embedder: Any) -> int:
    """Embed memories (never code) with their windows in one call; returns vectors written."""
    todo = [m for m in memories if m.type != MemoryType.CODE]
    if not todo or not store.vectors:
        return 0
    texts = [embedding_texts(cx, m, store.scope) for m in todo]
    flat = [t for group in texts for t in group]
    vecs = embedder.embed_documents(flat)
    packed = [vectors.pack([float(x) for x in v]) for v in vecs]
    rows = store.row_numbers([m.id for m in todo])
    main: list[tuple[int, bytes]] = []
    chunks: list[tuple[int, list[bytes]]] = []
    at = 0
    for m, group in zip(todo, texts, strict=True):
        if m.id in rows:
            main.append((rows[m.id], packed[at]))
            chunks.append((rows[m.id], packed[at + 1 : at + len(group)]))
        at += len(group)
    now = cx.now()
    with store.transaction():
        table = vectors.ensure_index(store, embedder.key, embedder.dim, now)
        vectors.write_vectors(store, table, main)
        chunk_table = chunk_vectors.ensure_chunk_index(store, embedder.key, embedder.dim, now)
        chunk_vectors.write_chunk_vectors(store, chunk_table, chunks)
    return len(flat)
