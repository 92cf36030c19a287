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

- words and vectors, in memory (a full run, or many changed memories): per type, blocks of
  matrix products that keep every pair above a bound, then verify it exactly
  (`cortex.lifecycle.pair_joins`; bounded memory: one type's rows and one block at a time);
- words, from the store (a few changed memories): a memory close enough misses at most
  `spare` of a probe's words, so it holds at least `|pool| - spare` of any pool of them; the
  keyword index's posting lists (`WordSearch`) of the rarest `spare + 1` words, then of the
  further words worth reading, are counted per memory, each list read once a run; stemming
  only adds candidates, and all are verified on the words themselves;
- vectors, from the store: `nearest()`, asking for more neighbours until the farthest is below
  the threshold; exact as long as the vector search returns every vector that close (a search
  by binary codes re-ranks its best candidates by their floats: a near-duplicate at cosine
  0.90 ranks among them unless hundreds of others are closer still).

Only pairs that have a member among `probes` (the memories changed since the last run) are
found when probes are given.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Any

from cortex.app import Cortex
from cortex.core.lifecycle.consolidate import CONTRADICTION_JACCARD
from cortex.core.model import Status
from cortex.core.text import jaccard, words
from cortex.core.write.distinct import TECHNOLOGIES
from cortex.core.write.gate import (
    NEAR_DUPLICATE_COSINE,
    NEAR_DUPLICATE_JACCARD,
    POLARITY_WORDS,
    UNCERTAIN_JACCARD,
)
from cortex.core.write.paraphrase import NAMED_TECHNOLOGIES
from cortex.core.write.similar import UNMERGEABLE_TYPES, SimilarPair, Text, pair_key
from cortex.lifecycle import pair_joins as joins
from cortex.store.packing import unit_rows
from cortex.store.port import StoreAdmin, VectorIndex, WordSearch

EPS = 1e-9  # bounds are loosened by this much, so float rounding never drops a pair
COSINE_SLACK = 1e-4  # float32 products may differ from the float64 cosine that decides
STORE_PROBES = 64  # up to this many changed memories, ask the store's indexes, not memory
FIRST_K = 16  # neighbours asked of nearest() first; four times more while all are close enough
READ_PER_CANDIDATE = 25  # posting-list entries read (~0.4 us each) cost about one candidate verified
WORD_COUNT_CAP = 20_000  # rarity is counted up to this; longer words first among the commoner ones


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


def similar_pairs(texts: Sequence[Text], threshold: float) -> list[SimilarPair]:
    """`find_similar_pairs(texts, threshold)`, the same pairs in the same order, from the word
    joins (`pair_joins`) in bounded memory: prefix filtering in Python verifies millions of
    pairs at 100,000 generated memories (their templates share most words)."""
    import numpy as np

    texts = [t for t in texts if t.type not in UNMERGEABLE_TYPES]
    sets = joins.Sets([t.content for t in texts], POLARITY_WORDS)
    out: list[SimilarPair] = []
    for rows in _rows_by_type(texts):
        a, b = joins.word_pairs(sets, rows, np.ones(len(rows), dtype=bool), threshold)
        scores = joins.jaccards(sets, a, b)
        for x, y, score in zip(a.tolist(), b.tolist(), scores.tolist(), strict=True):
            if score >= threshold:
                out.append(SimilarPair(*pair_key(texts[x].id, texts[y].id), score))
    out.sort(key=lambda p: (-p.jaccard, p.a, p.b))
    return out


def _rows_by_type(texts: Sequence[Text]) -> list[Any]:
    """The rows of `texts` of each type (integer arrays), types in sorted order: pairs are only
    ever of one type."""
    import numpy as np

    kinds = {k: g for g, k in enumerate(sorted({t.type for t in texts}))}
    groups = np.asarray([kinds[t.type] for t in texts], dtype=np.int64)
    return [np.flatnonzero(groups == g) for g in range(len(kinds))]


# -- in memory ----------------------------------------------------------------------------------
def _unit_vectors(cx: Cortex, store: StoreAdmin, texts: Sequence[Text]) -> dict[str, bytes]:
    """Stored vectors of `texts` (id -> packed floats), read in one pass."""
    index = vector_index(cx, store)
    return store.read_vectors(index.name, [t.id for t in texts]) if index is not None else {}


def _in_memory(cx: Cortex, store: StoreAdmin, probes: Collection[str] | None) -> dict[tuple[str, str], float]:
    import numpy as np

    texts = [t for t in store.active_texts() if t.type not in UNMERGEABLE_TYPES]
    if not texts:
        return {}
    sets = joins.Sets([t.content for t in texts], POLARITY_WORDS)
    plain, polarity = sets.without_polarity(), sets.polarity_sets()
    if probes is None:
        is_probe = np.ones(len(texts), dtype=bool)
    else:
        wanted = set(probes)
        is_probe = np.asarray([t.id in wanted for t in texts], dtype=bool)
    blobs = _unit_vectors(cx, store, texts)
    word_a, word_b, close_a, close_b = [], [], [], []
    for rows in _rows_by_type(texts):
        held = np.asarray([r for r in rows.tolist() if texts[r].id in blobs], dtype=np.int64)
        if len(held) > 1:
            unit = unit_rows([blobs.pop(texts[r].id) for r in held.tolist()])
            i, j = joins.cosine_pairs(unit, is_probe[held], NEAR_DUPLICATE_COSINE - COSINE_SLACK)
            del unit
            close_a.append(held[i])
            close_b.append(held[j])
        i, j = joins.word_pairs(sets, rows, is_probe[rows], NEAR_DUPLICATE_JACCARD)
        word_a.append(i)
        word_b.append(j)
        # A contradiction needs a polarity word on one side: with every row probing, those rows suffice.
        flipping = sets.polar[rows] if probes is None else is_probe[rows]
        i, j = joins.word_pairs(plain, rows, flipping, CONTRADICTION_JACCARD)
        keep = polarity[i] != polarity[j]
        word_a.append(i[keep])
        word_b.append(j[keep])
    del blobs
    n = len(texts)
    close = np.unique(_codes(close_a, close_b, n))
    codes = np.unique(np.concatenate((_codes(word_a, word_b, n), close)))
    a, b = codes // n, codes % n
    scores = joins.jaccards(sets, a, b)
    near = np.isin(codes, close)
    keep = ((scores >= UNCERTAIN_JACCARD) | near) & _may_matter(sets, plain, polarity, a, b, scores, near)
    return {
        pair_key(texts[x].id, texts[y].id): float(score)
        for x, y, score in zip(a[keep].tolist(), b[keep].tolist(), scores[keep].tolist(), strict=True)
    }


def _may_matter(
    sets: joins.Sets, plain: joins.Sets, polarity: Any, a: Any, b: Any, scores: Any, near: Any
) -> Any:
    """Which row pairs the plan may use, from conditions the write gate's rules need (the plan
    drops every other pair unread): a contradiction needs a flip and the other words to
    overlap; a re-typing needs the Jaccard, no flip, and one side naming every technology of
    the other; a paraphrase needs close vectors and the same named technologies."""
    flips = polarity[a] != polarity[b]
    contradicts = flips & (joins.jaccards(plain, a, b) >= CONTRADICTION_JACCARD - EPS)
    every = sets.only(TECHNOLOGIES)
    shared = joins.overlaps(every, a, b)
    retyped = (scores >= NEAR_DUPLICATE_JACCARD - EPS) & ~flips
    retyped &= (shared == every.sizes[a]) | (shared == every.sizes[b])
    named = sets.only(NAMED_TECHNOLOGIES)
    same = joins.overlaps(named, a, b)
    reworded = near & (same == named.sizes[a]) & (same == named.sizes[b])
    return contradicts | retyped | reworded


def _codes(left: list[Any], right: list[Any], n: int) -> Any:
    """Row pairs as one number each, the lower row first."""
    import numpy as np

    if not left:
        return np.zeros(0, dtype=np.int64)
    a, b = np.concatenate(left), np.concatenate(right)
    return np.minimum(a, b) * n + np.maximum(a, b)


# -- from the store's indexes -------------------------------------------------------------------
class _Postings:
    """The text index's rows holding each word (sorted), each read once in a run; and how many."""

    def __init__(self, store: WordSearch) -> None:
        self.store = store
        self.counts: dict[str, int] = {}
        self.rows: dict[str, Any] = {}
        self._polar: Any = None

    def count(self, words: Collection[str]) -> None:
        unknown = [w for w in words if w not in self.counts]  # probes of one run share many words
        self.counts.update(self.store.word_counts(unknown, WORD_COUNT_CAP) if unknown else {})

    def get(self, word: str) -> Any:
        if word not in self.rows:
            import numpy as np

            got = np.asarray(self.store.word_rows([word])[word], dtype=np.int64)
            self.rows[word] = np.sort(got, kind="stable")  # the index's order already: linear
        return self.rows[word]

    def polar(self) -> Any:
        """Rows holding a polarity word, sorted."""
        import numpy as np

        if self._polar is None:
            self._polar = np.unique(np.concatenate([self.get(w) for w in sorted(POLARITY_WORDS)]))
        return self._polar


def _among(rows: Any, sorted_rows: Any) -> Any:
    """Which of `rows` are in `sorted_rows`."""
    import numpy as np

    if not len(sorted_rows):
        return np.zeros(len(rows), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_rows, rows), len(sorted_rows) - 1)
    return sorted_rows[at] == rows


def _holders(post: _Postings, ws: set[str], threshold: float, polar: bool) -> Any | None:
    """Rows that may overlap `ws` by `threshold` (with `polar`, only rows holding a polarity
    word); None when the text index cannot be asked (too few words that fold there as they do
    here: ASCII ones).

    A memory that close shares all but `spare = |ws| - ceil(threshold * |ws|)` of the words,
    so it holds at least `|pool| - spare` of any pool of them: the `spare + 1` rarest first,
    then each further word whose rows are read already or cost less to read than the
    candidates they may drop (in posting-list entries, READ_PER_CANDIDATE a candidate).
    """
    import numpy as np

    spare = len(ws) - math.ceil(threshold * len(ws) - EPS)
    asked = [w for w in ws if w.isascii()]
    if not ws or spare + 1 > len(asked):
        return None if ws else np.zeros(0, dtype=np.int64)
    post.count(asked)
    order = sorted(asked, key=lambda w: (post.counts.get(w, 0), -len(w), w))
    pool = spare + 1
    held = np.bincount(np.concatenate([post.get(w) for w in order[:pool]]))
    rows = np.flatnonzero(held)  # each holds one of the pool at least
    held = held[rows]
    if polar:
        keep = _among(rows, post.polar())
        rows, held = rows[keep], held[keep]
    for w in order[pool:]:
        if not len(rows):
            break
        if w not in post.rows and len(rows) * READ_PER_CANDIDATE <= post.counts.get(w, 0):
            continue
        pool += 1
        held += _among(rows, post.get(w))
        keep = held >= pool - spare
        rows, held = rows[keep], held[keep]
    return rows


def _sharing(post: _Postings, ws: set[str], kind: str) -> list[Text] | None:
    """Memories of type `kind` that may be a duplicate of `ws` on words or contradict it (a
    superset: the overlap of the words other than polarity words, and, when `ws` has none,
    only memories that hold one); None: ask them all."""
    import numpy as np

    lexical = _holders(post, ws, NEAR_DUPLICATE_JACCARD, False)
    flipping = _holders(post, ws - POLARITY_WORDS, CONTRADICTION_JACCARD, not ws & POLARITY_WORDS)
    if lexical is None or flipping is None:
        return None
    rows = np.union1d(lexical, flipping)
    return post.store.texts_at(rows.tolist(), [kind]) if len(rows) else []


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
    if not close and not UNCERTAIN_JACCARD * len(a) <= len(b) <= len(a) / UNCERTAIN_JACCARD:
        return None  # the smaller set over the larger bounds the Jaccard from above
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
    post = _Postings(store) if isinstance(store, WordSearch) else None
    sets: dict[str, frozenset[str]] = {}  # candidates' words, read once for every probe
    for m in mine:
        ws = frozenset(words(m.content))
        kind = m.type.value
        near = _nearest(store, index, vectors[m.id]) if index is not None and m.id in vectors else set()
        sharing = _sharing(post, set(ws), kind) if post is not None else None
        if sharing is None:
            whole = store.active_texts() if whole is None else whole
            others = [(t.id, t.type, t.content) for t in whole]
        else:
            others = [(t.id, t.type, t.content) for t in sharing]
            seen = {t[0] for t in others}
            got = store.get_many(sorted(near - seen)).values()
            others += [(o.id, o.type.value, o.content) for o in got if o.status is Status.ACTIVE]
        asked = {m.id}  # both searches find many of the same memories
        for oid, otype, content in others:
            if oid in asked or otype != kind:
                continue
            asked.add(oid)
            key = pair_key(m.id, oid)
            if key in found:
                continue
            theirs = sets.get(oid)
            if theirs is None:
                theirs = sets[oid] = frozenset(words(content))
            score = _can_matter(ws, theirs, oid in near)
            if score is not None:
                found[key] = score
    return found
