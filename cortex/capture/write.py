"""The write path shared by `cortex remember` and the extraction worker: redact, gate, apply, embed.

One candidate at a time (`write_candidate`, its own transaction and an embedding) or a batch
inside the caller's transaction (`write_batch`, embedded after the commit). Carrying out the
gate's plan is `cortex.capture.apply`; vectors are `cortex.capture.embed`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from cortex.app import Cortex
from cortex.backends.port import Embedder
from cortex.capture.anchors import record_quietly
from cortex.capture.apply import apply_plan
from cortex.capture.embed import embed_memories, memory_text, remembering
from cortex.core.model import Candidate, Scope, Source
from cortex.core.recall import query
from cortex.core.text import content_hash, jaccard, word_set
from cortex.core.write import gate
from cortex.core.write.apply import WriteEffect, WriteOutcome
from cortex.core.write.sanitise import sanitise_candidate
from cortex.errors import InputError
from cortex.store.packing import pack, unit_rows
from cortex.store.port import MemoryStore

log = logging.getLogger("cortex.capture.write")

NEIGHBOURS = 8
GLOBAL_SCOPE_MIN_CONFIDENCE = 0.8


# -- gathering ---------------------------------------------------------------------------------
SEARCHED = ("active", "archived", "superseded")


def _neighbours(store: MemoryStore, cand: Candidate) -> list[gate.Neighbour]:
    keywords = query.text_query(cand.content)
    if not keywords:
        return []
    found = store.search_text(keywords, NEIGHBOURS, SEARCHED)
    mems = store.get_many([mid for mid, _ in found])
    mine = word_set(cand.content)
    return [gate.Neighbour(m, jaccard(mine, word_set(m.content))) for m in mems.values()]


def _with_cosines(
    cx: Cortex, store: MemoryStore, cand: Candidate, neighbours: list[gate.Neighbour], embedder: Embedder
) -> list[gate.Neighbour]:
    """Every neighbour with its cosine to the candidate, and the memories nearest to the
    candidate's vector added: a paraphrase may share no keyword at all.

    Stored vectors are used where they exist; the other neighbours' texts are embedded.
    """
    import numpy as np

    mine = np.asarray(embedder.embed_documents([memory_text(cx, cand.content, cand.type, store.scope)])[0])
    mine = mine / (np.linalg.norm(mine) or 1.0)
    by_id = {n.memory.id: n for n in neighbours}
    index = store.vector_index(embedder.key) if store.vectors else None
    stored: dict[str, bytes] = {}
    if index is not None:
        hits = store.nearest(embedder.key, pack([float(x) for x in mine]), NEIGHBOURS)
        near = [h.id for h in hits if h.status in SEARCHED and h.id not in by_id]
        words_mine = word_set(cand.content)
        for m in store.get_many(near).values():
            by_id[m.id] = gate.Neighbour(m, jaccard(words_mine, word_set(m.content)))
        stored = store.read_vectors(index.name, list(by_id))
    missing = [i for i in by_id if i not in stored]
    texts = [memory_text(cx, by_id[i].memory.content, by_id[i].memory.type, store.scope) for i in missing]
    fresh = list(embedder.embed_documents(texts)) if texts else []
    rows = [*(unit_rows([stored[i]])[0] for i in by_id if i in stored), *fresh]
    ids = [*(i for i in by_id if i in stored), *missing]
    out = []
    for mid, row in zip(ids, rows, strict=True):
        vec = np.asarray(row, dtype="float64")
        cosine = float(mine @ vec / (np.linalg.norm(vec) or 1.0))
        out.append(replace(by_id[mid], cosine=round(min(1.0, max(-1.0, cosine)), 6)))
    return out


def _gathered(
    cx: Cortex, store: MemoryStore, cand: Candidate, embedder: Embedder | None
) -> list[gate.Neighbour]:
    """The candidate's neighbours, with cosines when an embedder is at hand."""
    neighbours = _neighbours(store, cand)
    if embedder is None:
        return neighbours
    try:
        return _with_cosines(cx, store, cand, neighbours, embedder)
    except Exception as exc:  # words alone decide; the uncertain band gets suggested edges
        log.warning("cosine for the write gate failed: %s", exc)
        return neighbours


def candidate_scope(cand: Candidate) -> Scope:
    """The store a candidate belongs in: global only when the extractor is confident it is not
    project-specific."""
    if cand.scope == Scope.GLOBAL or cand.global_confidence >= GLOBAL_SCOPE_MIN_CONFIDENCE:
        return Scope.GLOBAL
    return Scope.PROJECT


def redacted(cand: Candidate) -> Candidate:
    """The candidate through the sanitising gate: secrets and private text removed from its
    text, tags and files made plain bounded data, its content normalised."""
    return sanitise_candidate(cand)


def plan_candidate(
    cx: Cortex,
    store: MemoryStore,
    cand: Candidate,
    embedder: Embedder | None = None,
    source: Source | None = None,
    read_at: datetime | None = None,
) -> gate.WritePlan:
    """The write gate's plan for a redacted candidate against `store`; with an embedder, the
    neighbours in the uncertain band are compared by cosine too. `source`: where a transcript
    said it; `read_at`: when this read of it began."""
    exact = store.by_hash(content_hash(cand.content))
    if exact is not None:
        return gate.plan_write(cand, exact=exact, neighbours=[], source=source)
    neighbours = _gathered(cx, store, cand, embedder)
    return gate.plan_write(cand, exact=None, neighbours=neighbours, source=source, read_at=read_at)


def write_candidate(
    cx: Cortex,
    cand: Candidate,
    source: Source,
    *,
    scope: Scope | None = None,
    embedder: Embedder | None = None,
) -> WriteOutcome:
    """Redact, gate and store one candidate; embed it when an embedder is given."""
    cand = redacted(cand)
    if not cand.content:
        raise InputError("nothing left to store after removing private and secret text", "")
    if scope is None:
        scope = candidate_scope(cand)
    store = cx.write_store(scope)
    embedder = remembering(embedder)  # the gate's vector of the candidate is the one written
    chash = content_hash(cand.content)
    neighbours = _gathered(cx, store, cand, embedder)
    plan = gate.plan_write(cand, exact=store.by_hash(chash), neighbours=neighbours)
    now = cx.now()
    with store.transaction():
        exact = store.by_hash(chash)  # another writer may have stored it meanwhile
        if exact is not None and plan.action != gate.WriteAction.SKIP:
            plan = gate.plan_write(cand, exact=exact, neighbours=neighbours)
        outcome = apply_plan(cx, store, cand, plan, source, now)
    embedded = False
    if embedder is not None and outcome.action.changed:
        embedded = embed_memories(cx, store, [outcome.memory], embedder)
    if outcome.action in (WriteEffect.STORED, WriteEffect.REINFORCED):
        record_quietly(cx, store, [outcome.memory])  # what it says of the code, as the code is now
    return replace(outcome, scope=scope, embedded=embedded)


def write_batch(
    cx: Cortex, store: MemoryStore, items: Sequence[tuple[Candidate, Source]], read_at: datetime | None = None
) -> list[WriteOutcome]:
    """Redact, gate and apply candidates in order, inside the caller's open transaction on `store`.

    Nothing is stored embedded: the worker commits a chunk's candidates together with its
    transcript cursor (so a kill -9 leaves both or neither) and embeds after the commit. When the
    local embedder is cheap to load here, the gate compares each candidate's meaning with its
    neighbours' (a paraphrase merges). Candidates left empty by redaction are dropped.
    `read_at`: when the read of the transcript these come from began (a memory stored before
    it, from the same record, is read again).
    """
    now = cx.now()
    out = []
    embedder = remembering(fast_embedder(cx)) if items else None
    todo = [(c, source) for c, source in ((redacted(c), s) for c, s in items) if c.content]
    if embedder is not None and todo:
        try:  # the whole batch in one call: each candidate's gate then finds its vector made
            embedder.embed_documents([memory_text(cx, c.content, c.type, store.scope) for c, _ in todo])
        except Exception as exc:  # the gate embeds (or falls back to words) one by one
            log.warning("embedding the batch for the write gate failed: %s", exc)
    for cand, source in todo:
        plan = plan_candidate(cx, store, cand, embedder, source, read_at)
        out.append(apply_plan(cx, store, cand, plan, source, now))
    return out


# -- embedders ---------------------------------------------------------------------------------
def fast_embedder(cx: Cortex) -> Embedder | None:
    """An embedder that is cheap to load here (the ONNX export), else None: never load torch."""
    return cx.query_embedder().backend if cx.query_embedder_ready() else None
