"""The pairs consolidation compares, found without comparing every memory with every other.

A pair can change a consolidation plan (`cortex.core.lifecycle.consolidate`) only when one of
these holds:

- its words overlap enough to be a duplicate on words alone (Jaccard >= NEAR_DUPLICATE_JACCARD);
- its stored vectors are close enough to be a paraphrase (cosine >= NEAR_DUPLICATE_COSINE), whatever
  words it shares;
- its word Jaccard reaches UNCERTAIN_JACCARD, one side negates the other and the rest of their
  words overlap (>= CONTRADICTION_JACCARD).

Every other pair of the all-pairs search is dropped by the plan unread, so the plan made from
the pairs found here is the all-pairs plan. Each condition is an exact similarity join:

- words, in memory (a full run, or many changed memories): prefix filtering over integer token
  ids, rarest first, with the overlap of every candidate counted in numpy; a memory that
  overlaps another by t of its words shares one of its first `size - ceil(t * size) + 1`;
- words, from the store (a few changed memories): the same bound read the other way round; a
  memory missing at most `spare` of a probe's words holds every word of some `size`-subset of
  any `spare + size` of them (the rarest are taken), so the keyword index (`WordSearch`) finds
  every candidate; stemming only adds some, and all are verified on the words themselves;
- vectors, in memory: per type, blocks of a matrix product of unit vectors (bounded memory:
  one type's vectors and one block of products at a time);
- vectors, from the store: `nearest()`, asking for more neighbours until the farthest is below
  the threshold; exact as long as the vector search returns every vector that close (a search
  by binary codes re-ranks its best candidates by their floats: a near-duplicate at cosine
  0.90 ranks among them unless hundreds of others are closer still).

Only pairs that have a member among `probes` (the memories changed since the last run) are
found when probes are given.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Sequence
from typing import Any

from cortex.app import Cortex
from cortex.core.lifecycle.consolidate import CONTRADICTION_JACCARD
from cortex.core.model import Status
from cortex.core.text import jaccard, words
from cortex.core.write.gate import (
    NEAR_DUPLICATE_COSINE,
    NEAR_DUPLICATE_JACCARD,
    POLARITY_WORDS,
    UNCERTAIN_JACCARD,
)
from cortex.core.write.similar import UNMERGEABLE_TYPES, SimilarPair, Text, pair_key
from cortex.store.packing import unit_rows
from cortex.store.port import StoreAdmin, VectorIndex, WordSearch

EPS = 1e-9  # bounds are loosened by this much, so float rounding never drops a pair
COSINE_SLACK = 1e-4  # float32 products may differ from the float64 cosine that decides
BLOCK = 512  # rows of one matrix-product block
JOIN_BLOCK = 64  # probes whose candidates are verified together
STORE_PROBES = 64  # up to this many changed memories, ask the store's indexes, not memory
FIRST_K = 16  # neighbours asked of nearest() first; four times more while all are close enough
MAX_WORD_QUERIES = 32  # word groups in one text-index query
WORD_COUNT_CAP = 2_000  # rarity is counted up to this; longer words first among the commoner ones


def vector_index(cx: Cortex, store: StoreAdmin) -> VectorIndex | None:
    """The index whose vectors consolidation compares: the configured embedder's, else the first."""
    if not store.vectors:
        return None
    indexes = store.vector_indexes()
    key = cx.embedder_key()
    preferred = [i for i in indexes if i.embedder_key == key] or indexes
    return preferred[0] if preferred else None


def candidate_pairs(
    cx: Cortex, store: StoreAdmin, probes: Collection[str] | None = None
) -> list[SimilarPair]:
    """Every pair that can change the plan (with a member in `probes`, when given), ordered as
    `find_similar_pairs` orders them."""
    if probes is not None and len(probes) <= STORE_PROBES:
        found = _from_store(cx, store, probes)
    else:
        found = _in_memory(cx, store, probes)
    pairs = [SimilarPair(a, b, j) for (a, b), j in found.items()]
    pairs.sort(key=lambda p: (-p.jaccard, p.a, p.b))
    return pairs


# -- in memory ----------------------------------------------------------------------------------
class _Sets:
    """Word sets as token ids (rarest first within each row), in compressed rows."""

    def __init__(self, texts: Sequence[Text]) -> None:
        import numpy as np

        vocab: dict[str, int] = {}
        flat: list[int] = []
        sizes = np.zeros(len(texts), dtype=np.int64)
        for row, t in enumerate(texts):
            ws = set(words(t.content))
            sizes[row] = len(ws)
            flat.extend(vocab.setdefault(w, len(vocab)) for w in ws)
        tokens = np.asarray(flat, dtype=np.int64)
        freq = np.bincount(tokens, minlength=len(vocab))
        rank = np.empty(len(vocab), dtype=np.int64)
        rank[np.argsort(freq, kind="stable")] = np.arange(len(vocab))
        rows = np.repeat(np.arange(len(texts)), sizes)
        tokens = rank[tokens]
        order = np.lexsort((tokens, rows))
        self.tokens = tokens[order]
        self.sizes = sizes
        self.indptr = np.concatenate(([0], np.cumsum(sizes)))
        self.vocab = len(vocab)
        polar_ids = np.asarray(sorted(rank[vocab[w]] for w in POLARITY_WORDS if w in vocab), dtype=np.int64)
        self._polar_token = np.isin(self.tokens, polar_ids)
        hits = np.concatenate(([0], np.cumsum(self._polar_token)))
        self.polar = hits[self.indptr[1:]] > hits[self.indptr[:-1]]

    def without_polarity(self) -> _Sets:
        """The same rows with the polarity words left out."""
        import numpy as np

        other = object.__new__(_Sets)
        keep = ~self._polar_token
        other.tokens = self.tokens[keep]
        kept = np.concatenate(([0], np.cumsum(keep)))
        other.indptr = kept[self.indptr]
        other.sizes = np.diff(other.indptr)
        other.vocab = self.vocab
        other._polar_token = np.zeros(len(other.tokens), dtype=bool)
        other.polar = self.polar
        return other

    def polarity_words(self) -> list[frozenset[int]]:
        """Each row's polarity words (as token ids): a pair flips when they differ."""
        import numpy as np

        rows = np.repeat(np.arange(len(self.sizes)), self.sizes)[self._polar_token].tolist()
        found: dict[int, set[int]] = {}
        for row, token in zip(rows, self.tokens[self._polar_token].tolist(), strict=True):
            found.setdefault(row, set()).add(token)
        none: frozenset[int] = frozenset()
        return [frozenset(found[r]) if r in found else none for r in range(len(self.sizes))]

    def overlap(self, a: int, b: int) -> int:
        """How many words two rows share."""
        import numpy as np

        x = self.tokens[self.indptr[a] : self.indptr[a + 1]]
        y = self.tokens[self.indptr[b] : self.indptr[b + 1]]
        return int(np.intersect1d(x, y, assume_unique=True).size)


def _gather(values: Any, lo: Any, hi: Any) -> Any:
    """values[lo[0]:hi[0]] + values[lo[1]:hi[1]] + ... as one array."""
    import numpy as np

    lens = hi - lo
    ends = np.cumsum(lens)
    return values[np.repeat(lo - ends + lens, lens) + np.arange(ends[-1] if len(ends) else 0)]


def _join(sets: _Sets, groups: Any, threshold: float, probes: Any, is_probe: Any) -> tuple[Any, Any]:
    """Rows (i, j) of the same group with Jaccard >= threshold, i in `probes`; each pair once.

    JOIN_BLOCK probes at a time: their prefix tokens' posting lists give the candidates, and
    each candidate's words are looked up among its probe's (row * vocabulary + token keys).
    """
    import numpy as np

    sizes, tokens, indptr, n = sets.sizes, sets.tokens, sets.indptr, len(sets.sizes)
    need = np.ceil(threshold * sizes - EPS).astype(np.int64)
    plen = np.where(sizes > 0, np.clip(sizes - need + 1, 0, sizes), 0)
    rows = np.repeat(np.arange(n), sizes)
    position = np.arange(len(tokens)) - np.repeat(indptr[:-1], sizes)
    in_prefix = position < np.repeat(plen, sizes)
    keys = groups[rows[in_prefix]] * sets.vocab + tokens[in_prefix]
    order = np.argsort(keys, kind="stable")
    keys, posted = keys[order], rows[in_prefix][order]
    probes = np.sort(probes[sizes[probes] > 0])
    found_i, found_j = [], []
    for start in range(0, len(probes), JOIN_BLOCK):
        block = probes[start : start + JOIN_BLOCK]
        owner = np.repeat(block, plen[block])
        wanted = groups[owner] * sets.vocab + _gather(tokens, indptr[block], indptr[block] + plen[block])
        lo, hi = np.searchsorted(keys, wanted, "left"), np.searchsorted(keys, wanted, "right")
        cand, owner = _gather(posted, lo, hi), np.repeat(owner, hi - lo)
        si, sj = sizes[owner], sizes[cand]
        keep = (cand != owner) & (~is_probe[cand] | (cand < owner))
        keep &= (sj >= threshold * si - EPS) & (sj * threshold <= si + EPS)
        code = np.unique(owner[keep] * n + cand[keep])
        if not len(code):
            continue
        a, b = code // n, code % n
        mine = np.repeat(block, sizes[block]) * sets.vocab + _gather(tokens, indptr[block], indptr[block + 1])
        asked = np.repeat(a, sizes[b]) * sets.vocab + _gather(tokens, indptr[b], indptr[b + 1])
        spot = np.minimum(np.searchsorted(mine, asked), len(mine) - 1)
        inter = np.bincount(
            np.repeat(np.arange(len(a)), sizes[b]), weights=mine[spot] == asked, minlength=len(a)
        )
        close = inter / (sizes[a] + sizes[b] - inter) >= threshold - EPS
        found_i.append(a[close])
        found_j.append(b[close])
    if not found_i:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(found_i), np.concatenate(found_j)


def _cosine_join(
    cx: Cortex, store: StoreAdmin, texts: Sequence[Text], groups: Any, is_probe: Any, probing: bool
) -> list[tuple[int, int]]:
    """Rows (i, j) of the same type whose stored vectors have cosine >= NEAR_DUPLICATE_COSINE."""
    import numpy as np

    index = vector_index(cx, store)
    if index is None:
        return []
    out: list[tuple[int, int]] = []
    limit = NEAR_DUPLICATE_COSINE - COSINE_SLACK
    for g in np.unique(groups):
        members = np.flatnonzero(groups == g).tolist()
        blobs = store.read_vectors(index.name, [texts[r].id for r in members])
        members = [r for r in members if texts[r].id in blobs]
        if len(members) < 2:
            continue
        rows = np.asarray(members, dtype=np.int64)
        unit = unit_rows([blobs[texts[r].id] for r in members])
        del blobs
        mine = np.flatnonzero(is_probe[rows]) if probing else np.arange(len(rows))
        for start in range(0, len(mine), BLOCK):
            block = mine[start : start + BLOCK]
            first = 0 if probing else int(block[0])
            near = np.nonzero(unit[block] @ unit[first:].T >= limit)
            a, b = block[near[0]], near[1] + first
            keep = (a != b) & ((~is_probe[rows[b]] | (b < a)) if probing else (b > a))
            out.extend(zip(rows[a[keep]].tolist(), rows[b[keep]].tolist(), strict=True))
    return out


def _in_memory(cx: Cortex, store: StoreAdmin, probes: Collection[str] | None) -> dict[tuple[str, str], float]:
    import numpy as np

    texts = [t for t in store.active_texts() if t.type not in UNMERGEABLE_TYPES]
    if not texts:
        return {}
    sets = _Sets(texts)
    kinds = sorted({t.type for t in texts})
    groups = np.asarray([kinds.index(t.type) for t in texts], dtype=np.int64)
    if probes is None:
        is_probe = np.ones(len(texts), dtype=bool)
    else:
        wanted = set(probes)
        is_probe = np.asarray([t.id in wanted for t in texts], dtype=bool)
    rows: list[tuple[int, int]] = []
    close = set(_cosine_join(cx, store, texts, groups, is_probe, probing=probes is not None))
    lex_i, lex_j = _join(sets, groups, NEAR_DUPLICATE_JACCARD, np.flatnonzero(is_probe), is_probe)
    rows += zip(lex_i.tolist(), lex_j.tolist(), strict=True)
    # A contradiction needs a polarity word on one side: with every row probing, those rows suffice.
    flipping = np.flatnonzero(sets.polar if probes is None else is_probe)
    flip_probe = sets.polar if probes is None else is_probe
    con_i, con_j = _join(sets.without_polarity(), groups, CONTRADICTION_JACCARD, flipping, flip_probe)
    polar_words = sets.polarity_words()
    flips = zip(con_i.tolist(), con_j.tolist(), strict=True)
    rows += [(i, j) for i, j in flips if polar_words[i] != polar_words[j]]
    rows += sorted(close)
    found: dict[tuple[str, str], float] = {}
    for i, j in rows:
        key = pair_key(texts[i].id, texts[j].id)
        if key in found:
            continue
        inter = sets.overlap(i, j)
        score = inter / (int(sets.sizes[i]) + int(sets.sizes[j]) - inter)
        if score >= UNCERTAIN_JACCARD or (i, j) in close:
            found[key] = score
    return found


# -- from the store's indexes -------------------------------------------------------------------
def _word_groups(store: WordSearch, ws: set[str], threshold: float) -> list[tuple[str, ...]] | None:
    """Word groups such that a memory overlapping `ws` by `threshold` holds every word of one.

    It shares all but `spare = |ws| - ceil(threshold * |ws|)` of the words, so it holds at
    least `size` of any `spare + size` of them (the rarest are taken), and so all of one
    `size`-subset. None when the text index cannot be asked (too few words that fold there as
    they do here: ASCII ones).
    """
    spare = len(ws) - math.ceil(threshold * len(ws) - EPS)
    asked = [w for w in ws if w.isascii()]
    if not ws or spare + 1 > len(asked):
        return None if ws else []
    size = 1
    while spare + size + 1 <= len(asked) and math.comb(spare + size + 1, size + 1) <= MAX_WORD_QUERIES:
        size += 1
    counts = store.word_counts(asked, WORD_COUNT_CAP)
    rarest = sorted(asked, key=lambda w: (counts.get(w, 0), -len(w), w))[: spare + size]
    return list(itertools.combinations(rarest, size))


def _sharing(store: WordSearch, ws: set[str], threshold: float, kind: str, flip: bool) -> list[Text] | None:
    """Memories of type `kind` that may overlap `ws` by `threshold` (a superset; with `flip`,
    only those that may hold a polarity word `ws` lacks, when it has none); None: ask them all."""
    groups = _word_groups(store, ws, threshold)
    if groups is None:
        return None
    required = sorted(POLARITY_WORDS) if flip and not ws & POLARITY_WORDS else []
    return store.texts_matching(groups, required, [kind]) if groups else []


def _nearest(store: StoreAdmin, index: VectorIndex, vector: bytes) -> set[str]:
    """Every memory whose vector is within the duplicate cosine of `vector`."""
    k, limit = FIRST_K, 1.0 - NEAR_DUPLICATE_COSINE + COSINE_SLACK
    while True:
        hits = store.nearest(index.embedder_key, vector, k)
        if len(hits) < k or hits[-1].distance > limit:
            return {h.id for h in hits if h.distance <= limit}
        k *= 4


def _can_matter(a: frozenset[str], b: frozenset[str], close: bool) -> float | None:
    """The pair's word Jaccard when it can change a plan (see the module's docstring)."""
    score = jaccard(a, b)
    if close:
        return score
    if score < UNCERTAIN_JACCARD:
        return None
    if score >= NEAR_DUPLICATE_JACCARD:
        return score
    flipped = (a ^ b) & POLARITY_WORDS
    return (
        score
        if flipped and jaccard(a - POLARITY_WORDS, b - POLARITY_WORDS) >= CONTRADICTION_JACCARD
        else None
    )


def _from_store(cx: Cortex, store: StoreAdmin, probes: Collection[str]) -> dict[tuple[str, str], float]:
    mine = [
        m
        for m in store.get_many(sorted(probes)).values()
        if m.status is Status.ACTIVE and m.type.value not in UNMERGEABLE_TYPES
    ]
    index = vector_index(cx, store)
    vectors = store.read_vectors(index.name, [m.id for m in mine]) if index else {}
    whole: list[Text] | None = None
    found: dict[tuple[str, str], float] = {}
    for m in mine:
        ws = frozenset(words(m.content))
        kind = m.type.value
        near = _nearest(store, index, vectors[m.id]) if index is not None and m.id in vectors else set()
        lexical = flipping = None
        if isinstance(store, WordSearch):
            lexical = _sharing(store, set(ws), NEAR_DUPLICATE_JACCARD, kind, flip=False)
            flipping = _sharing(store, set(ws - POLARITY_WORDS), CONTRADICTION_JACCARD, kind, flip=True)
        if lexical is None or flipping is None:
            whole = store.active_texts() if whole is None else whole
            others = [(t.id, t.type, t.content) for t in whole]
        else:
            others = [(t.id, t.type, t.content) for t in (*lexical, *flipping)]
            seen = {t[0] for t in others}
            got = store.get_many(sorted(near - seen)).values()
            others += [(o.id, o.type.value, o.content) for o in got if o.status is Status.ACTIVE]
        for oid, otype, content in others:
            key = pair_key(m.id, oid)
            if oid == m.id or otype != kind or key in found:
                continue
            score = _can_matter(ws, frozenset(words(content)), oid in near)
            if score is not None:
                found[key] = score
    return found
