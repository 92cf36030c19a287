"""Recall's gather step: keyword and vector candidates from the stores, their vectors and edges."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from cortex.app import Cortex
from cortex.core.model import Edge, Memory, Status
from cortex.core.recall import query
from cortex.core.recall.decide import Gathered, RecallParams, RecallRequest
from cortex.core.text import embedding_text, jaccard, word_set
from cortex.store.sqlite import chunk_vectors, vector_matrix, vectors
from cortex.store.sqlite.store import Store

log = logging.getLogger("cortex.recall")

CANDIDATES_PER_LIST = 50
MAX_PENDING_KEYS = 64
LIVE_SHAPE_SQL = (
    "SELECT max(n), (SELECT count(*) FROM memories WHERE status IN ('active', 'archived') "
    "AND type != 'code') FROM memories"
)
# (connection id, table) -> (connection, store version, pending count): recall asks every time,
# the answer changes only when the store does.
_PENDING: dict[tuple[int, str], tuple[Any, tuple[Any, ...], int]] = {}
CHUNK_FANOUT = 2  # chunk neighbours fetched per memory wanted: several windows of one memory


@dataclass(slots=True)
class Pool:
    """What gather found: the core's input plus what the shell keeps for later passes."""

    got: Gathered
    notes: list[str]
    mode: str  # "hybrid" | "keyword-only"
    embedder: Any = None
    query_vector: Any = None  # numpy array, or None in keyword-only mode
    raw: dict[str, bytes] = field(default_factory=dict)  # id -> stored float32 vector, when read
    stores: list[Store] = field(default_factory=list)  # where lazily read vectors come from


def statuses(req: RecallRequest) -> tuple[str, ...]:
    """Statuses a request may see (superseded only on request)."""
    base = (Status.ACTIVE.value, Status.ARCHIVED.value)
    return (*base, Status.SUPERSEDED.value) if req.include_superseded else base


def embed_query(
    cx: Cortex, req: RecallRequest, stores: Sequence[Store], prefix: bool
) -> tuple[Any, Any, str]:
    """(embedder, query vector, note); the first two None when vector search cannot run."""
    if not any(s.vectors for s in stores):
        driver_note = stores[0].conn.driver.note if stores else "no store"
        return None, None, f"keyword-only: vector search unavailable ({driver_note})"
    key = cx.embedder_key()
    if key is not None and not any(s.vectors and vectors.existing_index(s, key) is not None for s in stores):
        return None, None, "keyword-only: no memory has been embedded yet (run `cortex backfill`)"
    choice = cx.query_embedder()
    if choice.embedder is None:
        return None, None, f"keyword-only: {choice.note}"
    try:
        qvec = choice.embedder.embed_query(query_text(cx, req, prefix))
    except Exception as exc:  # a broken model must not break recall: keywords still work
        log.warning("embedding the query failed: %s", exc)
        return None, None, f"keyword-only: embedding the query failed ({type(exc).__name__}: {exc})"
    return choice.embedder, qvec, choice.note


def query_text(cx: Cortex, req: RecallRequest, prefix: bool) -> str:
    """The text embedded for a query: bare, or with the `[type] [project:x]` prefix of memories."""
    if not prefix:
        return req.text
    mem_type = req.types[0] if len(req.types) == 1 else None
    return embedding_text(req.text, mem_type, cx.project_name)


def _knn_rows(
    store: Store, embedder_key: str, table: str, packed: bytes, k: int, chunks: bool
) -> list[tuple[int, float]]:
    """(row number, cosine distance) of the k nearest memories; with `chunks`, a memory is as
    near as the nearest of its own vector and its windows' vectors (max-pooling)."""
    best = dict(vector_matrix.knn(store, table, packed, k))
    chunk_table = chunk_vectors.existing_chunk_index(store, embedder_key) if chunks else None
    if chunk_table is not None:
        for n, distance in chunk_vectors.knn_chunks(store, chunk_table, packed, k * CHUNK_FANOUT):
            if distance < best.get(n, 2.0):
                best[n] = distance
    return sorted(best.items(), key=lambda item: item[1])[:k]


def vector_candidates(
    stores: Sequence[Store],
    embedder: Any,
    qvec: Any,
    k: int,
    allowed: Sequence[str],
    chunks: bool,
) -> list[tuple[str, float]]:
    """(id, cosine) best first over every store."""
    packed = vectors.pack([float(x) for x in qvec])
    found: list[tuple[str, float]] = []
    for store in stores:
        index = vectors.existing_index(store, embedder.key) if store.vectors else None
        if index is None:
            continue
        near = _knn_rows(store, embedder.key, index[0], packed, k, chunks)
        rows = store.ids_for_rows([n for n, _ in near])
        found.extend((rows[n][0], 1.0 - d) for n, d in near if n in rows and rows[n][1] in allowed)
    found.sort(key=lambda item: -item[1])
    return found[:k]


def count_pending(store: Store, table: str) -> int:
    """Memories of a store without a vector in `table`, counted once per change of the store."""
    # What can change the count: another connection's commit, a new memory, a status change
    # (the live count, from an index), or vectors written by this process.
    version = (
        int(store.conn.execute("PRAGMA data_version").fetchone()[0]),
        tuple(store.conn.execute(LIVE_SHAPE_SQL).fetchone()),
        vector_matrix.generation(),
    )
    key = (id(store.conn.raw), table)
    held = _PENDING.get(key)
    if held is not None and held[0] is store.conn.raw and held[1] == version:
        return held[2]
    count = vectors.count_pending(store, table)
    if len(_PENDING) > MAX_PENDING_KEYS:
        _PENDING.clear()
    _PENDING[key] = (store.conn.raw, version, count)
    return count


def gather(
    cx: Cortex,
    req: RecallRequest,
    stores: Sequence[Store],
    params: RecallParams,
    candidates: int = CANDIDATES_PER_LIST,
) -> Pool:
    """Lexical and vector candidates from every store, plus the memories they name."""
    notes: list[str] = []
    allowed = statuses(req)
    lexical: dict[str, list[tuple[str, float]]] = {}
    match = query.fts_match_sql(req.text)
    for store in stores:
        if match and params.use_lexical:
            ranked = store.fts_search(match, candidates, allowed)
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
        pending = sum(count_pending(s, (vectors.existing_index(s, embedder.key) or ("",))[0]) for s in stores)
        if pending:
            notes.append(f"{pending} memories are not embedded yet (run `cortex backfill`)")
    ids = [mid for ranked in lexical.values() for mid, _ in ranked] + [mid for mid, _ in found]
    memories = read_memories(stores, ids)
    mode = "hybrid" if embedder is not None else "keyword-only"
    return Pool(Gathered(lexical, found, memories), notes, mode, embedder, qvec, {}, list(stores))


def read_memories(stores: Sequence[Store], ids: Sequence[str]) -> dict[str, Memory]:
    """Memories by id from whichever store holds them."""
    out: dict[str, Memory] = {}
    for store in stores:
        out.update(store.get_many([i for i in dict.fromkeys(ids) if i not in out]))
    return out


def read_vectors_for(stores: Sequence[Store], embedder_key: str, ids: Sequence[str]) -> dict[str, bytes]:
    """Stored own vectors of memories by id (ids without one are absent)."""
    out: dict[str, bytes] = {}
    for store in stores:
        index = vectors.existing_index(store, embedder_key) if store.vectors else None
        if index is None:
            continue
        rows = store.row_numbers([i for i in ids if i not in out])
        by_row = {n: mid for mid, n in rows.items()}
        for n, blob in vector_matrix.read(store, index[0], list(by_row)).items():
            out[by_row[n]] = blob
    return out


def with_feedback(
    pool: Pool,
    stores: Sequence[Store],
    req: RecallRequest,
    feedback: Sequence[str],
    weight: float,
    candidates: int,
    chunks: bool,
) -> Pool:
    """Pseudo-relevance feedback: move the query vector towards the first pass's best hits
    (Rocchio) and search vectors again; the new list replaces the old one."""
    import numpy as np

    have = {**pool.raw, **read_vectors_for(stores, pool.embedder.key, feedback)}
    vecs = [np.frombuffer(have[mid], dtype="<f4") for mid in feedback if mid in have]
    if not vecs:
        return pool
    moved = np.asarray(pool.query_vector, dtype=np.float32) + weight * np.mean(vecs, axis=0)
    moved /= float(np.linalg.norm(moved)) or 1.0
    found = vector_candidates(stores, pool.embedder, moved, candidates, statuses(req), chunks)
    memories = {**pool.got.memories, **read_memories(stores, [m for m, _ in found])}
    got = replace(pool.got, vector=found, memories=memories)
    return replace(pool, got=got, raw=have)


def with_edges(pool: Pool, stores: Sequence[Store], ids: Sequence[str]) -> Pool:
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
