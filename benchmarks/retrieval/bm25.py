"""Plain BM25 over the same memory texts the system under test gets: the baseline. In memory.

Okapi BM25, k1 1.2, b 0.75, lowercased alphanumeric tokens, no stemming or stop words, and the
non-negative IDF ln(1 + (N - n + 0.5) / (n + 0.5)). Ties keep ingestion order, and every stored
memory is ranked (zero scores last), so a cut at k always holds k memories when the store does.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from datetime import datetime

from benchmarks.retrieval.system import IngestItem

K1 = 1.2
B = 0.75
_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lowercased ASCII alphanumeric runs: `"Don't stop, 2023!"` -> `don t stop 2023`."""
    return _TOKEN.findall(text.lower())


class BM25System:
    """A RetrievalSystem that scores every stored text with BM25; time plays no part."""

    name = "bm25"

    def __init__(self, k1: float = K1, b: float = B) -> None:
        self.k1 = k1
        self.b = b
        self.reset()

    def describe(self) -> dict[str, str]:
        """The baseline's result line: no embedder, reranker or LLM."""
        return {
            "embedder": "none",
            "reranker": "none",
            "llm": "none",
            "ranking": f"BM25 k1={self.k1} b={self.b}, lowercased alphanumeric tokens",
        }

    def reset(self) -> None:
        """Forget every stored text."""
        self._keys: list[str] = []
        self._tfs: list[Counter[str]] = []
        self._lengths: list[int] = []
        self._df: Counter[str] = Counter()

    def ingest(self, items: Sequence[IngestItem]) -> None:
        """Index the items' texts (their times are ignored)."""
        for item in items:
            tf = Counter(tokenize(item.text))
            self._keys.append(item.key)
            self._tfs.append(tf)
            self._lengths.append(sum(tf.values()))
            self._df.update(tf.keys())

    def search(self, query: str, now: datetime, k: int) -> list[str]:
        """Top k keys by BM25 score of the query's tokens (repeated query tokens count again)."""
        n_docs = len(self._keys)
        if n_docs == 0 or k <= 0:
            return []
        avg_len = sum(self._lengths) / n_docs or 1.0
        weights = Counter(tokenize(query))
        idf = {t: math.log(1.0 + (n_docs - self._df[t] + 0.5) / (self._df[t] + 0.5)) for t in weights}
        scores = []
        for tf, length in zip(self._tfs, self._lengths, strict=True):
            norm = self.k1 * (1.0 - self.b + self.b * length / avg_len)
            score = 0.0
            for term, qtf in weights.items():
                f = tf.get(term)
                if f:
                    score += qtf * idf[term] * f * (self.k1 + 1.0) / (f + norm)
            scores.append(score)
        order = sorted(range(n_docs), key=lambda i: -scores[i])
        return [self._keys[i] for i in order[:k]]

    def close(self) -> None:
        """Nothing to release; drops the index."""
        self.reset()
