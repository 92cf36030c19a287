"""The matrix-product joins find exactly the pairs a comparison of every pair finds."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from cortex.core.text import jaccard, word_set
from cortex.core.write.gate import POLARITY_WORDS
from cortex.lifecycle import pair_joins as joins


def _texts(n: int, seed: int) -> list[str]:
    """Template sentences over a small vocabulary: many pairs near every threshold."""
    rng = random.Random(seed)
    common = [f"w{i}" for i in range(40)]
    rare = [f"r{i}" for i in range(400)]
    out = []
    for _ in range(n):
        if out and rng.random() < 0.2:  # a restatement: one word more or fewer
            ws = rng.choice(out).split()
            ws = ws[1:] if rng.random() < 0.5 else [*ws, rng.choice(rare)]
            out.append(" ".join(ws))
            continue
        ws = rng.sample(common, rng.randint(6, 12)) + rng.sample(rare, rng.randint(0, 4))
        if rng.random() < 0.3:
            ws.append(rng.choice(["not", "never", "without"]))
        out.append(" ".join(ws))
    return out


def _pairs(i: np.ndarray, j: np.ndarray) -> set[tuple[int, int]]:
    return {(min(a, b), max(a, b)) for a, b in zip(i.tolist(), j.tolist(), strict=True)}


@pytest.mark.parametrize("threshold", [0.5, 0.6, 0.8])
@pytest.mark.parametrize("features", [(2, 4), (64, 128)])  # (2, 4): words share dimensions heavily
def test_word_pairs_equal_every_pair_compared(
    threshold: float, features: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(joins, "EXACT", features[0])
    monkeypatch.setattr(joins, "FEATURES", features[1])
    monkeypatch.setattr(joins, "BLOCK", 64)  # several blocks, windows and triangles
    texts = _texts(700, seed=int(threshold * 10) + features[0])
    sets = joins.Sets(texts, POLARITY_WORDS)
    rows = np.arange(len(texts))
    probe = np.zeros(len(texts), dtype=bool)
    probe[::7] = True
    for mask in (np.ones(len(texts), dtype=bool), probe):
        found = _pairs(*joins.word_pairs(sets, rows, mask, threshold))
        expected = {
            (a, b)
            for a, b in itertools.combinations(range(len(texts)), 2)
            if (mask[a] or mask[b]) and jaccard(word_set(texts[a]), word_set(texts[b])) >= threshold
        }
        assert expected and found == expected


def test_cosine_pairs_equal_every_pair_compared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(joins, "BLOCK", 128)
    rng = np.random.default_rng(5)
    low = rng.normal(size=(900, 40)) @ rng.normal(size=(40, 384))  # most energy in 40 directions
    spread = rng.normal(size=(900, 384))  # none: the bound is loose, blocks are multiplied whole
    for base in (low + 0.05 * spread, spread):
        near = base[rng.integers(0, len(base), 300)] + 0.2 * rng.normal(size=(300, 384))
        unit = np.vstack((base, near)).astype(np.float32)
        unit /= np.linalg.norm(unit, axis=1, keepdims=True)
        exact = unit @ unit.T
        for limit in (0.8, 0.9):
            every = np.ones(len(unit), dtype=bool)
            found = _pairs(*joins.cosine_pairs(unit, every, limit))
            expected = {(a, b) for a, b in zip(*np.nonzero(np.triu(exact >= limit, 1)), strict=True)}
            assert expected and found == {(int(a), int(b)) for a, b in expected}
