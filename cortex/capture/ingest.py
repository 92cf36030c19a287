"""Batch ingest: many memories through the write path (redact, gate, store) in one transaction.

The same code as `cortex.capture.write.write_candidate`, one transaction for the whole batch instead of
one per memory, each memory stamped with its own time (imports, backfills, benchmarks). Vectors
are written afterwards in one embedding call (`cortex.capture.embed.write_embeddings`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from cortex.app import Cortex
from cortex.backends.port import Embedder
from cortex.capture.apply import apply_plan
from cortex.capture.embed import remembering, write_embeddings
from cortex.capture.write import plan_candidate, redacted
from cortex.core.model import Candidate, Memory, Scope, Source
from cortex.core.write.apply import WriteEffect
from cortex.recall.traverse import refresh_centrality


@dataclass(frozen=True, slots=True)
class BatchItem:
    """One memory to write: a candidate, where it came from, and its time."""

    candidate: Candidate
    time: datetime
    source: Source = field(default_factory=Source)


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    """What happened to one item: stored, reinforced, duplicate, restored or empty."""

    action: WriteEffect
    memory_id: str | None
    reason: str


def ingest_batch(
    cx: Cortex,
    items: Sequence[BatchItem],
    *,
    scope: Scope = Scope.PROJECT,
    embedder: Embedder | None = None,
    centrality: bool = True,
) -> list[BatchOutcome]:
    """Write items in order (each gated against the store and the items before it), then embed."""
    store = cx.write_store(scope)
    embedder = remembering(embedder)  # the gate's vector of a candidate is the one written
    outcomes: list[BatchOutcome] = []
    touched: dict[str, Memory] = {}
    with store.transaction():
        for item in items:
            cand = redacted(item.candidate)  # once: redaction and normalising cost ~40 ms per 10 kB
            if not cand.content:
                outcomes.append(BatchOutcome(WriteEffect.EMPTY, None, "nothing left after redaction"))
                continue
            plan = plan_candidate(cx, store, cand, embedder)
            done = apply_plan(cx, store, cand, plan, item.source, item.time)
            outcomes.append(BatchOutcome(done.action, done.memory.id, done.reason))
            if done.action.changed:
                touched[done.memory.id] = done.memory
        if centrality:
            refresh_centrality(store)
    if embedder is not None and touched:
        write_embeddings(cx, store, list(touched.values()), embedder)
    return outcomes
