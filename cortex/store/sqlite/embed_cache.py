"""Embedding cache for backfill and benchmarks: one small SQLite file. Reads and writes it."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType

import numpy as np

from cortex.backends.port import Embedder
from cortex.errors import StoreError

BUSY_TIMEOUT_MS = 10_000
_MAX_SQL_VARS = 500  # stay well under SQLite's bound-parameter limit
_VECTOR_DTYPE = "<f4"  # little-endian float32 whatever the machine, so cache files travel

_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS embeddings (
    embedder TEXT NOT NULL,
    text_sha256 TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (embedder, text_sha256)
) WITHOUT ROWID
"""


def text_sha256(text: str) -> str:
    """The cache key of a text (lone surrogates allowed, so any Python str has one)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _select_sql(n: int) -> str:
    marks = ", ".join("?" * n)
    return f"SELECT text_sha256, dim, vector FROM embeddings WHERE embedder = ? AND text_sha256 IN ({marks})"


class EmbeddingCache:
    """A SQLite file mapping (embedder key, text sha256) to a float32 vector; multi-process safe."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(_SCHEMA_SQL)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(
                f"cannot open the embedding cache {self.path}: {exc}",
                fix=f"delete {self.path} (it is only a cache) or check the directory's permissions",
            ) from exc

    def read_many(self, key: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached vectors for these text hashes under this embedder key (misses are absent)."""
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(hashes))
        for start in range(0, len(unique), _MAX_SQL_VARS):
            chunk = unique[start : start + _MAX_SQL_VARS]
            for sha, dim, blob in self._conn.execute(_select_sql(len(chunk)), (key, *chunk)):
                vector = np.frombuffer(blob, dtype=_VECTOR_DTYPE).astype(np.float32)
                if vector.shape == (dim,):
                    found[sha] = vector
        return found

    def write_many(self, key: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Store vectors by text hash under this embedder key, in one transaction."""
        rows = [
            (key, sha, int(vec.shape[0]), np.asarray(vec, dtype=_VECTOR_DTYPE).tobytes())
            for sha, vec in items
        ]
        if not rows:
            return
        with self._conn:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.executemany(
                "INSERT OR REPLACE INTO embeddings (embedder, text_sha256, dim, vector) VALUES (?, ?, ?, ?)",
                rows,
            )

    def count(self, key: str | None = None) -> int:
        """How many vectors are cached (for one embedder key, or all)."""
        if key is None:
            row = self._conn.execute("SELECT count(*) FROM embeddings").fetchone()
        else:
            sql = "SELECT count(*) FROM embeddings WHERE embedder = ?"
            row = self._conn.execute(sql, (key,)).fetchone()
        return int(row[0])

    def close(self) -> None:
        """Close the underlying connection."""
        self._conn.close()

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class CachedEmbedder:
    """Wraps any Embedder: cached texts are read back, misses are embedded in one batch and kept."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache
        self.key = inner.key
        self.dim = inner.dim
        self.backend = inner.backend

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts as unit-norm float32 rows, computing each distinct uncached text once."""
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a sequence of texts, not one string")
        hashes = [text_sha256(t) for t in texts]
        found = self.cache.read_many(self.key, hashes)
        missing = {h: t for h, t in zip(hashes, texts, strict=True) if h not in found}
        if missing:
            fresh = self.inner.embed_documents(list(missing.values()))
            computed = dict(zip(missing, np.asarray(fresh, dtype=np.float32), strict=True))
            self.cache.write_many(self.key, computed.items())
            found.update(computed)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, sha in enumerate(hashes):
            out[i] = found[sha]
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one text as a unit-norm float32 vector."""
        return self.embed_documents([text]).reshape(self.dim)
