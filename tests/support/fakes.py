"""Deterministic stand-ins for cortex's replaceable backends, for unit tests of the core."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from cortex.core.text import words


class FakeEmbedder:
    """Bag-of-words embedder: each word hashes to a signed slot, so texts sharing words are closer.

    Deterministic across processes (sha256, not `hash()`), unit-norm float32 rows. `calls` records
    the texts of every `embed_documents` call so tests can count model work.
    """

    backend = "fake"

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.key = f"fake-{dim}"
        self.calls: list[tuple[str, ...]] = []

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dim, dtype=np.float64)
        # Texts without words still need a unit vector; they all share the empty-token slot.
        for token in words(text) or [""]:
            digest = hashlib.sha256(token.encode("utf-8")).digest()
            slot = int.from_bytes(digest[:4], "big") % self.dim
            vec[slot] += 1.0 if digest[4] & 1 else -1.0
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:  # signed words cancelled out exactly
            vec[0], norm = 1.0, 1.0
        return (vec / norm).astype(np.float32)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts as unit-norm float32 rows of shape (n, dim)."""
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a sequence of texts, not one string")
        self.calls.append(tuple(texts))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = self._vector(text)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one text as a unit-norm float32 vector of shape (dim,)."""
        return self.embed_documents([text]).reshape(self.dim)
