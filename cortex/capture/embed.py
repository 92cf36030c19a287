"""Vectors for stored memories: what gets embedded, and writing the vectors after the commit.

Every writer embeds through here: a memory's own vector plus one per extra window of a long
memory (`cortex.core.write.chunks`), in one embedding call.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Sequence
from typing import Any

from cortex.app import Cortex
from cortex.backends.port import Embedder
from cortex.core.model import Memory, MemoryType, Scope
from cortex.core.text import embedding_text
from cortex.core.write.chunks import plan_chunks
from cortex.store.packing import pack
from cortex.store.port import MemoryStore

log = logging.getLogger("cortex.capture.embed")


MAX_REMEMBERED = 4096  # texts whose vectors an embedder keeps (~6 MB at 384 dimensions)


class Remembering:
    """An embedder that embeds each text once: the write gate embeds a candidate to compare it
    with its neighbours, and the write embeds the same text again for its vector. Keeps the
    vectors of the last MAX_REMEMBERED texts."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self._seen: dict[str, Any] = {}

    @property
    def key(self) -> str:
        return self.inner.key

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def backend(self) -> str:
        return self.inner.backend

    def embed_documents(self, texts: Sequence[str]) -> Any:
        import numpy as np

        if getattr(self.inner, "reads_calls_whole", False) and any(t not in self._seen for t in texts):
            # This embedder reads one text in the light of the others in its call (Voyage strips
            # the code of a memory's windows using the memory itself): the call goes whole.
            todo = list(dict.fromkeys(texts))
        else:
            todo = list(dict.fromkeys(t for t in texts if t not in self._seen))
        fresh = dict(zip(todo, self.inner.embed_documents(todo), strict=True)) if todo else {}
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        out = np.asarray([fresh[t] if t in fresh else self._seen[t] for t in texts], dtype=np.float32)
        self._seen.update(fresh)
        while len(self._seen) > MAX_REMEMBERED:
            del self._seen[next(iter(self._seen))]
        return out

    def embed_query(self, text: str) -> Any:
        return self.inner.embed_query(text)


# One Remembering per embedder object: the worker's gate and its embedding after the commit
# share what was embedded (the same candidate text is never embedded twice in one run).
_SHARED: weakref.WeakKeyDictionary[Any, Remembering] = weakref.WeakKeyDictionary()


def remembering(embedder: Embedder | None) -> Embedder | None:
    """`embedder` embedding each text once (None stays None)."""
    return None if embedder is None else remembered(embedder)


def remembered(embedder: Embedder) -> Embedder:
    """`embedder` embedding each text once: the same wrapper for the same embedder object
    wherever it is asked for."""
    if isinstance(embedder, Remembering):
        return embedder
    try:
        shared = _SHARED.get(embedder)
        if shared is None:
            shared = _SHARED[embedder] = Remembering(embedder)
        return shared
    except TypeError:  # an embedder that cannot be weakly referenced: remembered per call
        return Remembering(embedder)


def memory_text(cx: Cortex, content: str, mem_type: MemoryType, scope: Scope) -> str:
    """What gets embedded for a memory."""
    return embedding_text(content, mem_type.value, cx.project_name if scope == Scope.PROJECT else None)


def embedding_texts(cx: Cortex, memory: Memory, scope: Scope) -> list[str]:
    """What gets embedded for a memory: its own text, then its extra windows (same prefix)."""
    project = cx.project_name if scope == Scope.PROJECT else None
    main = memory_text(cx, memory.content, memory.type, scope)
    windows = [embedding_text(c, memory.type.value, project) for c in plan_chunks(memory.content)]
    return [main, *windows]


def write_embeddings(cx: Cortex, store: MemoryStore, memories: Sequence[Memory], embedder: Embedder) -> int:
    """Embed memories (never code) with their windows in one call; returns vectors written."""
    todo = [m for m in memories if m.type != MemoryType.CODE]
    if not todo or not store.vectors:
        return 0
    texts = [embedding_texts(cx, m, store.scope) for m in todo]
    flat = [t for group in texts for t in group]
    vecs = embedder.embed_documents(flat)
    packed = [pack([float(x) for x in v]) for v in vecs]
    main: list[tuple[str, bytes]] = []
    chunks: list[tuple[str, list[bytes]]] = []
    at = 0
    for m, group in zip(todo, texts, strict=True):
        main.append((m.id, packed[at]))
        chunks.append((m.id, packed[at + 1 : at + len(group)]))
        at += len(group)
    now = cx.now()
    with store.transaction():  # ids no longer in the store are skipped
        table = store.ensure_vector_index(embedder.key, embedder.dim, now)
        store.write_vectors(table, main)
        chunk_table = store.ensure_chunk_index(embedder.key, embedder.dim, now)
        store.write_chunk_vectors(chunk_table, chunks)
    return len(flat)


def embed_memories(cx: Cortex, store: MemoryStore, memories: Sequence[Memory], embedder: Embedder) -> bool:
    """Embed and store vectors for memories (never code); False when it could not."""
    todo = [m for m in memories if m.type != MemoryType.CODE]
    if not todo or not store.vectors:
        return False
    try:
        # One path for every writer: the memory's vector plus the windows of a long memory.
        write_embeddings(cx, store, todo, embedder)
        return True
    except Exception as exc:  # the memory is stored; backfill embeds it later
        log.warning("embedding failed, left for backfill: %s", exc)
        return False
