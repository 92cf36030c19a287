"""Exact similarity joins of one memory type in memory, as blocks of matrix products.

Consolidation (`cortex.lifecycle.pairs`) needs every same-type pair whose stored vectors reach a
cosine, and every pair whose word Jaccard reaches a threshold. Both are found with the same
tool: one matrix product per block of rows, keeping the entries above a bound.

- vectors: unit rows, cosine >= limit; bounded first by a product over the type's strongest
  directions (`cosine_pairs`), then checked on the whole vectors.
- words: each memory as counts of its words over `FEATURES` dimensions: the `EXACT` words
  commonest in the type get a dimension each, the others share the remaining dimensions by
  token id. The product of two rows counts every shared word once plus the pairs of distinct
  rare words that share a dimension, so it is never below the true overlap: a pair whose
  Jaccard computed from the product is below the threshold cannot reach it, and the rest are
  verified on the words themselves (`overlaps`). Rows are ordered by size, so a block is only
  multiplied with the rows whose size allows the threshold.

A block is BLOCK rows; memory stays bounded by one type's matrix and one block of products.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from cortex.core.text import words

EPS = 1e-9  # bounds are loosened by this much, so float rounding never drops a pair
COUNT_SLACK = 1e-3  # float32 products of small counts are exact; this only guards the bound
BLOCK = 512  # rows of one matrix-product block
EXACT = 64  # the commonest words of a type, one dimension each
FEATURES = 128  # dimensions of the word-count rows (EXACT plus shared ones)
VERIFY = 16_384  # candidate pairs verified at once
REDUCED = 64  # directions of the cheaper cosine bound
BOUND_SLACK = 1e-3  # the bound is loosened by this much against float32 rounding
DENSE_SHARE = 0.05  # a block with more bound entries than this share is multiplied whole


class Sets:
    """Word sets as token ids (ascending within each row), in compressed rows."""

    def __init__(self, texts: Sequence[str], polarity: Collection[str]) -> None:
        import numpy as np

        vocab: dict[str, int] = {}
        flat: list[int] = []
        sizes = np.zeros(len(texts), dtype=np.int64)
        for row, text in enumerate(texts):
            ws = set(words(text))
            sizes[row] = len(ws)
            flat.extend(vocab.setdefault(w, len(vocab)) for w in ws)
        self.vocab = max(len(vocab), 1)
        self.ids = vocab
        rows = np.repeat(np.arange(len(texts)), sizes)
        tokens = np.asarray(flat, dtype=np.int64)
        order = np.lexsort((tokens, rows))
        self.tokens = tokens[order]
        self.sizes = sizes
        self.indptr = np.concatenate(([0], np.cumsum(sizes)))
        polar_ids = np.asarray(sorted(vocab[w] for w in polarity if w in vocab), dtype=np.int64)
        self.polar_token = np.isin(self.tokens, polar_ids)
        hits = np.concatenate(([0], np.cumsum(self.polar_token)))
        self.polar = hits[self.indptr[1:]] > hits[self.indptr[:-1]]
        self._keys: Any = None

    def without_polarity(self) -> Sets:
        """The same rows with the polarity words left out."""
        return self._subset(~self.polar_token)

    def only(self, kept: Collection[str]) -> Sets:
        """The same rows holding only the words of `kept`."""
        import numpy as np

        ids = np.asarray(sorted(self.ids[w] for w in kept if w in self.ids), dtype=np.int64)
        return self._subset(np.isin(self.tokens, ids))

    def _subset(self, keep: Any) -> Sets:
        import numpy as np

        other = object.__new__(type(self))
        other.tokens = self.tokens[keep]
        kept = np.concatenate(([0], np.cumsum(keep)))
        other.indptr = kept[self.indptr]
        other.sizes = np.diff(other.indptr)
        other.vocab = self.vocab
        other.ids = self.ids
        other.polar_token = self.polar_token[keep]
        other.polar = self.polar
        other._keys = None
        return other

    def polarity_sets(self) -> Any:
        """Each row's set of polarity words as a number (0: none): a pair flips when they differ."""
        import numpy as np

        rows = np.repeat(np.arange(len(self.sizes)), self.sizes)[self.polar_token].tolist()
        held: dict[int, list[int]] = {}
        for row, token in zip(rows, self.tokens[self.polar_token].tolist(), strict=True):
            held.setdefault(row, []).append(token)  # ascending within a row: one tuple per set
        named: dict[tuple[int, ...], int] = {}
        out = np.zeros(len(self.sizes), dtype=np.int64)
        for row, tokens in held.items():
            out[row] = named.setdefault(tuple(tokens), len(named) + 1)
        return out

    def keys(self) -> Any:
        """row * vocab + token for every token: ascending, so a word of a row is found by bisection."""
        import numpy as np

        if self._keys is None:
            rows = np.repeat(np.arange(len(self.sizes)), self.sizes)
            self._keys = rows * self.vocab + self.tokens
        return self._keys

    def row_tokens(self, rows: Any) -> Any:
        """The tokens of `rows`, one after another."""
        return gather(self.tokens, self.indptr[rows], self.indptr[rows + 1])


def gather(values: Any, lo: Any, hi: Any) -> Any:
    """values[lo[0]:hi[0]] + values[lo[1]:hi[1]] + ... as one array."""
    import numpy as np

    lens = hi - lo
    ends = np.cumsum(lens)
    return values[np.repeat(lo - ends + lens, lens) + np.arange(ends[-1] if len(ends) else 0)]


def overlaps(sets: Sets, a: Any, b: Any) -> Any:
    """How many words rows a[k] and b[k] share, for every k."""
    import numpy as np

    keys = sets.keys()
    out = np.zeros(len(a), dtype=np.int64)
    if not len(keys):
        return out
    for start in range(0, len(a), VERIFY):
        x, y = a[start : start + VERIFY], b[start : start + VERIFY]
        asked = np.repeat(x, sets.sizes[y]) * sets.vocab + sets.row_tokens(y)
        spot = np.minimum(np.searchsorted(keys, asked), len(keys) - 1)
        owner = np.repeat(np.arange(len(x)), sets.sizes[y])
        out[start : start + len(x)] = np.bincount(owner, weights=keys[spot] == asked, minlength=len(x))
    return out


def jaccards(sets: Sets, a: Any, b: Any) -> Any:
    """Word Jaccard of each pair of rows (0 for two empty sets)."""
    import numpy as np

    inter = overlaps(sets, a, b)
    union = sets.sizes[a] + sets.sizes[b] - inter
    return np.where(union > 0, inter / np.maximum(union, 1), 0.0)


def _features(sets: Sets, rows: Any) -> Any:
    """Word counts of `rows` over FEATURES dimensions (see the module's docstring), float32."""
    import numpy as np

    tokens = sets.row_tokens(rows)
    owner = np.repeat(np.arange(len(rows)), sets.sizes[rows])
    uniq, counts = np.unique(tokens, return_counts=True)
    common = np.sort(uniq[np.argsort(-counts, kind="stable")[:EXACT]])
    dims = EXACT + tokens % (FEATURES - EXACT)
    if len(common):
        spot = np.minimum(np.searchsorted(common, tokens), len(common) - 1)
        exact = common[spot] == tokens
        dims[exact] = spot[exact]
    flat = np.bincount(owner * FEATURES + dims, minlength=len(rows) * FEATURES)
    return flat.reshape(len(rows), FEATURES).astype(np.float32)


def _block_pairs(
    left: Any, right: Any, probe: Any, limit: float, window: Any, refine: Any = None
) -> tuple[Any, Any]:
    """Positions (i, j) with i a probe and left[i] . right[j] >= limit, each pair once (j not a
    probe, or j < i); columns limited to window(block) = (lo, hi); refine(block, lo, hi, found)
    may drop some of a block's entries (flat indices)."""
    import numpy as np

    every = bool(probe.all())
    found_i, found_j = [], []
    mine = np.flatnonzero(probe)
    for start in range(0, len(mine), BLOCK):
        block = mine[start : start + BLOCK]
        lo, hi = window(block)
        if every:
            hi = min(hi, int(block[-1]))  # j < i <= the block's last row
        if hi <= lo:
            continue
        near = np.flatnonzero(left[block] @ right[lo:hi].T >= limit)
        if refine is not None:
            near = refine(block, lo, hi, near)
        a, b = block[near // (hi - lo)], near % (hi - lo) + lo
        keep = (a != b) & (~probe[b] | (b < a))
        found_i.append(a[keep])
        found_j.append(b[keep])
    if not found_i:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(found_i), np.concatenate(found_j)


def cosine_pairs(unit: Any, probe: Any, limit: float) -> tuple[Any, Any]:
    """Positions (i, j) of unit rows with cosine >= limit, i a probe, each pair once.

    A cheaper product first: with B the REDUCED strongest directions of the rows (orthonormal),
    a . b = (B'a) . (B'b) + r_a . r_b <= (B'a) . (B'b) + |r_a| |r_b|, r the part outside B
    (Cauchy-Schwarz), so rows [B'a, |r_a|] bound every cosine from above; the entries that
    reach the limit are then checked on the whole vectors (a block with too many: all of it).
    """
    import numpy as np

    def whole(_block: Any) -> tuple[int, int]:
        return 0, len(unit)

    if unit.shape[1] <= 2 * REDUCED or len(unit) <= BLOCK:
        return _block_pairs(unit, unit, probe, limit, whole)
    _, directions = np.linalg.eigh((unit.T @ unit).astype(np.float64))
    coords = unit @ directions[:, -REDUCED:].astype(np.float32)
    rest = np.sqrt(np.maximum(0.0, 1.0 - np.einsum("ij,ij->i", coords, coords, dtype=np.float64)))
    bound = np.hstack((coords, rest[:, None].astype(np.float32)))
    del coords

    def refine(block: Any, lo: int, hi: int, near: Any) -> Any:
        if len(near) > DENSE_SHARE * len(block) * (hi - lo):
            return np.flatnonzero(unit[block] @ unit[lo:hi].T >= limit)
        keep = []
        for start in range(0, len(near), VERIFY):
            part = near[start : start + VERIFY]
            a, b = block[part // (hi - lo)], part % (hi - lo) + lo
            keep.append(part[np.einsum("ij,ij->i", unit[a], unit[b]) >= limit])
        return np.concatenate(keep) if keep else near

    return _block_pairs(bound, bound, probe, limit - BOUND_SLACK, whole, refine)


def word_pairs(sets: Sets, rows: Any, probe: Any, threshold: float) -> tuple[Any, Any]:
    """Rows (i, j) among `rows` (one type) with word Jaccard >= threshold, i a probe (a mask
    over `rows`), each pair once; empty sets never pair."""
    import numpy as np

    nonempty = sets.sizes[rows] > 0
    rows, probe = rows[nonempty], probe[nonempty]
    order = np.argsort(sets.sizes[rows], kind="stable")
    rows, probe = rows[order], probe[order]
    if len(rows) < 2 or not probe.any():
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    size = sets.sizes[rows].astype(np.float64)
    t = threshold - EPS
    # Jaccard from an overlap bound L: L / (|a| + |b| - L) >= t  <=>  (1 + t) L - t |a| - t |b| >= 0,
    # one product with two more columns: [(1 + t) x_a, -(t |a| - slack), -1] . [x_b, 1, t |b|]
    counts = _features(sets, rows)
    ones = np.ones((len(rows), 1), dtype=np.float32)
    own = (COUNT_SLACK - t * size)[:, None].astype(np.float32)
    left = np.hstack((counts * np.float32(1 + t), own, -ones))
    right = np.hstack((counts, ones, (t * size)[:, None].astype(np.float32)))
    del counts

    def window(block: Any) -> tuple[int, int]:
        low, high = float(size[block].min()), float(size[block].max())
        lo = int(np.searchsorted(size, t * low - COUNT_SLACK, "left"))
        return lo, int(np.searchsorted(size, high / t + COUNT_SLACK, "right"))

    i, j = _block_pairs(left, right, probe, 0.0, window)
    a, b = rows[i], rows[j]
    close = jaccards(sets, a, b) >= threshold - EPS
    return a[close], b[close]
