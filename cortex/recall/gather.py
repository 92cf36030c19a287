"""Recall's gather step: keyword and vector candidates from the stores, their vectors and edges."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from cortex.app import Cortex
from cortex.backends.port import Embedder
from cortex.core.model import Edge, Memory, Scope, SearchMode, Status
from cortex.core.recall import query
from cortex.core.recall.decide import Gathered, RecallParams, RecallRequest
from cortex.core.text import embedding_text, jaccard, word_set
from cortex.store.packing import pack
from cortex.store.port import MemoryStore

log = logging.getLogger("cortex.recall")

CANDIDATES_PER_LIST = 50
CHUNK_FANOUT = 2  # chunk neighbours fetched per memory wanted: several windows of one memory


@dataclass(slots=True)
class Pool:
    """What gather found: the core's input plus what the shell keeps for later passes."""

    got: Gathered
    notes: list[str]
    mode: SearchMode
    embedder: Embedder | None = None
    query_vector: Any = None  # numpy array, or None in keyword-only mode
    raw: dict[str, bytes] = field(default_factory=dict)  # id -> stored float32 vector, when read
    stores: list[MemoryStore] = field(default_factory=list)  # where lazily read vectors come from


def statuses(req: RecallRequest) -> tuple[str, ...]:
    """Statuses a request may see (superseded only on request)."""
    base = (Status.ACTIVE.value, Status.ARCHIVED.value)
    return (*base, Status.SUPERSEDED.value) if req.include_superseded else base


def embed_query(
    cx: Cortex, req: RecallRequest, stores: Sequence[MemoryStore], prefix: bool
) -> tuple[Embedder | None, Any, str]:
    """(embedder, query vector, note); the first two None when vector search cannot run."""
    if not any(s.vectors for s in stores):
        driver_note = stores[0].vector_note if stores else "no store"
        return None, None, f"keyword-only: vector search unavailable ({driver_note})"
    key = cx.embedder_key()
    if key is not None and not any(s.vectors and s.vector_index(key) is not None for s in stores):
        return None, None, "keyword-only: no memory has been embedded yet (run `cortex backfill`)"
    choice = cx.query_embedder()
    if choice.backend is None:
        return None, None, f"keyword-only: {choice.note}"
    try:
        qvec = choice.backend.embed_query(query_text(cx, req, prefix))
    except Exception as exc:  # a broken model must not break recall: keywords still work
        log.warning("embedding the query failed: %s", exc)
        return None, None, f"keyword-only: embedding the query failed ({type(exc).__name__}: {exc})"
    return choice.backend, qvec, choice.note


def query_text(cx: Cortex, req: RecallRequest, prefix: bool) -> str:
    """The text embedded for a query: bare, or with the `[type] [project:x]` prefix of memories."""
    if not prefix:
        return req.text
    mem_type = req.types[0] if len(req.types) == 1 else None
    return embedding_text(req.text, mem_type, cx.project_name)


def vector_candidates(
    stores: Sequence[MemoryStore],
    embedder: Embedder,
    qvec: Any,
    k: int,
    allowed: Sequence[str],
    chunks: bool,
) -> list[tuple[str, float]]:
    """(id, cosine) best first over every store; with `chunks`, a memory is as near as the
    nearest of its own vector and its windows' vectors (max-pooling)."""
    packed = pack([float(x) for x in qvec])
    chunk_k = k * CHUNK_FANOUT if chunks else 0
    found: list[tuple[str, float]] = []
    for store in stores:
        near = store.nearest(embedder.key, packed, k, chunk_k=chunk_k)
        found.extend((hit.id, 1.0 - hit.distance) for hit in near if hit.status in allowed)
    found.sort(key=lambda item: -item[1])
    # A shared memory is in the project and the team store under one id: count it once.
    best: dict[str, float] = {}
    for mid, cos in found:
        best.setdefault(mid, cos)
    return list(best.items())[:k]


def count_pending(store: MemoryStore, embedder_key: str) -> int:
    """Memories of a store without a vector from this embedder yet."""
    index = store.vector_index(embedder_key)
    return store.count_unembedded(index.name if index else None)


def gather(
    cx: Cortex,
    req: RecallRequest,
    stores: Sequence[MemoryStore],
    params: RecallParams,
    candidates: int = CANDIDATES_PER_LIST,
) -> Pool:
    """Lexical and vector candidates from every store, plus the memories they name."""
    notes: list[str] = []
    allowed = statuses(req)
    lexical: dict[str, list[tuple[str, float]]] = {}
    keywords = query.text_query(req.text)
    for store in stores:
        if keywords and params.use_lexical:
            ranked = store.search_text(keywords, candidates, allowed)
            if ranked:
                lexical[f"bm25:{store.scope.value}"] = ranked
    embedder, qvec, note = (
        embed_query(cx, req, stores, params.query_prefix)
        if params.use_vector
        else (None, None, "keyword-only: vector search switched off")
    )
    notes.append(note)
    found: list[tuple[str, float]] = []
    if embedder is not None:
        found = vector_candidates(stores, embedder, qvec, candidates, allowed, params.use_chunks)
        # The team store's vectors come with its memories; `cortex backfill` embeds local ones.
        pending = sum(count_pending(s, embedder.key) for s in stores if s.scope is not Scope.TEAM)
        if pending:
            notes.append(f"{pending} memories are not embedded yet (run `cortex backfill`)")
    ids = [mid for ranked in lexical.values() for mid, _ in ranked] + [mid for mid, _ in found]
    memories = read_memories(stores, ids)
    team = f"bm25:{Scope.TEAM.value}"
    if team in lexical:  # the team's copy of a memory also here: the local one answers for it
        shared = {i for i, m in memories.items() if m.scope is Scope.TEAM}
        lexical[team] = [(i, v) for i, v in lexical[team] if i in shared]
    mode = SearchMode.HYBRID if embedder is not None else SearchMode.KEYWORD_ONLY
    return Pool(Gathered(lexical, found, memories), notes, mode, embedder, qvec, {}, list(stores))


def read_memories(stores: Sequence[MemoryStore], ids: Sequence[str]) -> dict[str, Memory]:
    """Memories by id from whichever store holds them."""
    out: dict[str, Memory] = {}
    for store in stores:
        out.update(store.get_many([i for i in dict.fromkeys(ids) if i not in out]))
    return out


def read_vectors_for(
    stores: Sequence[MemoryStore], embedder_key: str, ids: Sequence[str]
) -> dict[str, bytes]:
    """Own vectors of memories by id, unit length (ids without one are absent)."""
    out: dict[str, bytes] = {}
    for store in stores:
        index = store.vector_index(embedder_key) if store.vectors else None
        if index is None:
            continue
        out.update(store.read_vectors(index.name, [i for i in ids if i not in out], exact=False))
    return out


def with_feedback(
    pool: Pool,
    stores: Sequence[MemoryStore],
    req: RecallRequest,
    feedback: Sequence[str],
    weight: float,
    candidates: int,
    chunks: bool,
) -> Pool:
    """Pseudo-relevance feedback: move the query vector towards the first pass's best hits
    (Rocchio) and search vectors again; the new list replaces the old one."""
    import numpy as np

    embedder = pool.embedder
    if embedder is None:  # keyword-only: no query vector to move
        return pool
    have = {**pool.raw, **read_vectors_for(stores, embedder.key, feedback)}
    vecs = [np.frombuffer(have[mid], dtype="<f4") for mid in feedback if mid in have]
    if not vecs:
        return pool
    moved = np.asarray(pool.query_vector, dtype=np.float32) + weight * np.mean(vecs, axis=0)
    moved /= float(np.linalg.norm(moved)) or 1.0
    found = vector_candidates(stores, embedder, moved, candidates, statuses(req), chunks)
    memories = {**pool.got.memories, **read_memories(stores, [m for m, _ in found])}
    got = replace(pool.got, vector=found, memories=memories)
    return replace(pool, got=got, raw=have)


def with_edges(pool: Pool, stores: Sequence[MemoryStore], ids: Sequence[str]) -> Pool:
    """Add the active edges touching `ids` and the memories at their other ends."""
    edges: list[Edge] = []
    for store in stores:
        edges.extend(store.edges(list(ids), status="active"))
    if not edges:
        return pool
    ends = {e.source for e in edges} | {e.target for e in edges}
    memories = {**pool.got.memories, **read_memories(stores, sorted(ends - set(pool.got.memories)))}
    return replace(pool, got=replace(pool.got, edges=edges, memories=memories))


def similarity(pool: Pool) -> Callable[[str, str], float]:
    """Pairwise similarity for MMR: cosine of stored vectors, else word Jaccard.

    Vectors are read on first use: MMR compares only its small pool (limit x 2), not every
    candidate, so reading them all up front would cost more than the comparisons."""
    vecs: dict[str, Any] = {}
    missing: set[str] = set()
    words: dict[str, frozenset[str]] = {}

    def vector(mid: str) -> Any:
        if mid not in vecs and mid not in missing and pool.embedder is not None:
            import numpy as np  # keyword-only recall never pays for importing numpy

            blob = pool.raw.get(mid) or read_vectors_for(pool.stores, pool.embedder.key, [mid]).get(mid)
            if blob is None:
                missing.add(mid)
            else:
                vecs[mid] = np.frombuffer(blob, dtype="<f4")
        return vecs.get(mid)

    def sim(a: str, b: str) -> float:
        va, vb = vector(a), vector(b)
        if va is not None and vb is not None:
            return float(va @ vb)
        for mid in (a, b):
            if mid not in words:
                memory = pool.got.memories.get(mid)
                words[mid] = word_set(memory.content) if memory else frozenset()
        return jaccard(words[a], words[b])

    return sim
