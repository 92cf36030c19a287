"""cortex as a RetrievalSystem: its real write path in, its real recall path out.

Each `reset` makes a fresh project store in a temporary directory with its own CORTEX_HOME.
Items go through `cortex.capture.ingest.ingest_batch` (redaction, the write gate, the store, vectors)
stamped with their session date; questions go through `cortex.recall.search.recall` with the
question date as the clock's "now". Memory ids map back to the harness's keys here, outside
the store; a memory the gate merged several items into answers with all their keys.

Document vectors come from an embedding cache under `benchmarks/.cache/` (keyed by model and
text) so reruns skip the model; query vectors come from the ONNX query path, uncached, so the
measured latency is what a user would see.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.retrieval.system import IngestItem
from cortex.app import Cortex
from cortex.backends.port import Choice
from cortex.capture.ingest import BatchItem, ingest_batch
from cortex.capture.manual import USER_CONFIDENCE
from cortex.config import Settings
from cortex.core.model import Candidate, Layer, MemoryType, Scope, Source
from cortex.core.recall.decide import RecallParams, RecallRequest
from cortex.core.write.apply import DEFAULT_PRIORITY
from cortex.paths import Paths

# CORTEX_BENCH_CACHE points the embedding cache and the model elsewhere (e.g. an empty folder to
# re-embed every document with the current model files).
CACHE_DIR = Path(os.environ.get("CORTEX_BENCH_CACHE") or Path(__file__).resolve().parents[1] / ".cache")
CACHE_FILE = "embeddings.sqlite"
MODEL_HOME = "home"  # a CORTEX_HOME that only holds the ONNX export, shared by every run
PROJECT_DIR = "bench"  # the project root's name: it is part of every embedded text
RERANKER = "none (no FlashRank model is cached here)"
MEMORY_TYPE = MemoryType.CONTEXT  # what `cortex remember --type context` would store


def _utc(when: datetime) -> datetime:
    """The dataset's naive local dates, read as UTC (cortex stores UTC)."""
    return when if when.tzinfo else when.replace(tzinfo=UTC)


class _Clock:
    """A settable clock: the session date while writing, the question date while asking."""

    def __init__(self) -> None:
        self.now = datetime(2000, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def load_embedders(cache_dir: Path = CACHE_DIR) -> tuple[Any, Any, str]:
    """(cached document embedder, query embedder, description) for the local model.

    The ONNX export gives the same vectors as sentence-transformers and runs faster on CPU, so
    it fills the cache too; it is created once under `cache_dir` if missing.
    """
    from cortex.backends import local as embed
    from cortex.backends.model_locate import resolve_model
    from cortex.store.sqlite.embed_cache import CachedEmbedder, EmbeddingCache

    home = cache_dir / MODEL_HOME
    embed.ensure_onnx_export(resolve_model(None), home)
    choice = embed.load_query_embedder(None, home)
    if choice.backend is None:
        raise RuntimeError(f"no local embedder for the benchmark: {choice.note}")
    cache = EmbeddingCache(cache_dir / CACHE_FILE)
    return CachedEmbedder(choice.backend, cache), choice.backend, choice.note


class _RememberedQueries:
    """An embedder that computes each query once (ablations ask the same questions many times)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.key, self.dim, self.backend = inner.key, inner.dim, inner.backend
        self._seen: dict[str, Any] = {}

    def embed_query(self, text: str) -> Any:
        if text not in self._seen:
            self._seen[text] = self.inner.embed_query(text)
        return self._seen[text]

    def embed_documents(self, texts: Sequence[str]) -> Any:
        return self.inner.embed_documents(texts)


class CortexSystem:
    """cortex's write and recall paths behind the harness's RetrievalSystem protocol."""

    name = "cortex"

    def __init__(
        self,
        params: RecallParams | None = None,
        cache_dir: Path = CACHE_DIR,
        remember_queries: bool = False,
        embedders: tuple[Any, Any, str] | None = None,
    ) -> None:
        self.params = params or RecallParams(abstain=False)
        self._docs, self._query, self._note = embedders or load_embedders(cache_dir)
        if remember_queries:
            self._query = _RememberedQueries(self._query)
        self._clock = _Clock()
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._cx: Cortex | None = None
        self._keys: dict[str, list[str]] = {}

    def describe(self) -> dict[str, str]:
        """Embedder, reranker, LLM and the recall parameters of this run."""
        changed = {k: v for k, v in asdict(self.params).items() if getattr(RecallParams(), k) != v}
        return {
            "embedder": f"{self._docs.key} (all-MiniLM-L6-v2 for the local model): documents "
            f"through the embedding cache, queries through the {self._query.backend} query path",
            "reranker": RERANKER,
            "llm": "none",
            "params": ", ".join(f"{k}={v}" for k, v in changed.items()) or "defaults",
        }

    def reset(self) -> None:
        """A fresh project store and CORTEX_HOME in a new temporary directory."""
        self._drop()
        self._tmp = tempfile.TemporaryDirectory(prefix="cortex-bench-")
        base = Path(self._tmp.name)
        paths = Paths(root=base / PROJECT_DIR, home=base / "home")
        self._cx = Cortex(
            paths,
            Settings(),
            clock=self._clock,
            actor="benchmark",
            query_embedder=Choice(self._query, self._note),
            bulk_embedder=Choice(self._docs, self._note),
            # No FlashRank model can be fetched on this machine: say so rather than probe.
            reranker=Choice(None, RERANKER),
        )
        self._keys = {}

    def ingest(self, items: Sequence[IngestItem]) -> None:
        """Write items (chronological) as context memories dated by their session."""
        cx = self._require()
        # Items of one session share its date: one session id per date, as the worker would
        # record the Claude Code session a memory came from (an opaque counter, no dataset id).
        sessions: dict[datetime, str] = {}
        for item in items:
            sessions.setdefault(item.time, f"s{len(sessions) + 1}")
        batch = [
            BatchItem(
                Candidate(
                    content=item.text,
                    type=MEMORY_TYPE,
                    layer=Layer.USER,
                    confidence=USER_CONFIDENCE,
                    priority=DEFAULT_PRIORITY[MEMORY_TYPE],
                    scope=Scope.PROJECT,
                ),
                _utc(item.time),
                Source(session_id=sessions[item.time]),
            )
            for item in items
        ]
        if batch:
            self._clock.now = batch[-1].time
        outcomes = ingest_batch(cx, batch, embedder=self._docs)
        for item, outcome in zip(items, outcomes, strict=True):
            if outcome.memory_id is not None:
                self._keys.setdefault(outcome.memory_id, []).append(item.key)

    def search(self, query: str, now: datetime, k: int) -> list[str]:
        """cortex recall with `now` as the clock; each hit's memory -> the keys it holds."""
        from cortex.recall.search import recall

        cx = self._require()
        self._clock.now = _utc(now)
        req = RecallRequest(text=query, limit=k)
        result = recall(cx, req, scope="project", params=self.params, record=False)
        return ["+".join(self._keys[h.memory.id]) for h in result.hits if h.memory.id in self._keys]

    def evidence(self, query: str, now: datetime) -> dict[str, float | None]:
        """The best cosine and keyword coverage recall's abstention floors would look at."""
        from cortex.recall.search import recall

        cx = self._require()
        self._clock.now = _utc(now)
        req = RecallRequest(text=query, limit=1)
        # Floors no evidence can fall below: the evidence is computed, nothing is turned away.
        params = replace(
            self.params, abstain=True, vector_floor=-2.0, lexical_floor=-1.0, trim_weak_hits=False
        )
        return dict(recall(cx, req, scope="project", params=params, record=False).evidence)

    def close(self) -> None:
        """Close the store and delete the temporary directory."""
        self._drop()

    def with_params(self, **changes: Any) -> CortexSystem:
        """The same system (same loaded models) with other recall parameters."""
        self.params = replace(self.params, **changes)
        return self

    def _require(self) -> Cortex:
        if self._cx is None:
            self.reset()
        assert self._cx is not None
        return self._cx

    def _drop(self) -> None:
        if self._cx is not None:
            self._cx.close()
            self._cx = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
