"""Finding pairs of memories whose words overlap enough to compare them (prefix filtering). Pure."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from cortex.core.model import Memory, MemoryType
from cortex.core.text import jaccard, word_set
from cortex.core.write.gate import UNCERTAIN_JACCARD

# Code and its descriptions are keyed by file and symbol (index-code), never merged by wording.
UNMERGEABLE_TYPES = frozenset({MemoryType.CODE.value, MemoryType.CODE_DESCRIPTION.value})


@dataclass(frozen=True, slots=True)
class SimilarPair:
    """Two memories whose word sets overlap enough to be compared (ids in sorted order)."""

    a: str
    b: str
    jaccard: float


def pair_key(a: str, b: str) -> tuple[str, str]:
    """The two ids in sorted order (how pairs are keyed)."""
    return (a, b) if a < b else (b, a)


def _prefix_len(size: int, threshold: float) -> int:
    return size - math.ceil(threshold * size) + 1


@dataclass(frozen=True, slots=True)
class Text:
    """What pair finding needs of a memory (the shell can read just this, cheaply)."""

    id: str
    type: str
    content: str


def text_of(m: Memory) -> Text:
    """The pair-finding view of a memory."""
    return Text(m.id, m.type.value, m.content)


def find_similar_pairs(
    texts: Sequence[Text],
    threshold: float = UNCERTAIN_JACCARD,
    probes: Collection[str] | None = None,
) -> list[SimilarPair]:
    """Pairs of the same type with word Jaccard >= threshold (with a member in `probes`, if given).

    Prefix filtering: with tokens in rarest-first order, two sets this similar must share a
    token among the first |S| - ceil(t*|S|) + 1 of either, so only those pairs are verified.
    With `probes`, only the probes' prefixes are looked up: an automatic run compares what
    changed since the last one with everything, not everything with everything again.
    """
    groups: dict[str, list[Text]] = {}
    for t in texts:
        if t.type not in UNMERGEABLE_TYPES:
            groups.setdefault(t.type, []).append(t)
    out: list[SimilarPair] = []
    for group in groups.values():
        out.extend(_similar_in_group(group, threshold, probes))
    out.sort(key=lambda p: (-p.jaccard, p.a, p.b))
    return out


def _similar_in_group(
    group: Sequence[Text], threshold: float, probes: Collection[str] | None
) -> list[SimilarPair]:
    sets = {t.id: word_set(t.content) for t in group}
    freq: Counter[str] = Counter(w for s in sets.values() for w in s)
    prefixes = {}
    for mid, s in sets.items():
        if s:
            tokens = sorted(s, key=lambda w: (freq[w], w))
            prefixes[mid] = tokens[: _prefix_len(len(tokens), threshold)]
    seen: set[tuple[str, str]] = set()
    out: list[SimilarPair] = []

    def verify(x: str, y: str) -> None:
        key = pair_key(x, y)
        if x == y or key in seen:
            return
        seen.add(key)
        a, b = sets[x], sets[y]
        if min(len(a), len(b)) < threshold * max(len(a), len(b)):
            return
        score = jaccard(a, b)
        if score >= threshold:
            out.append(SimilarPair(key[0], key[1], score))

    index: dict[str, list[str]] = {}
    if probes is None:  # each pair once: look up only what was indexed before
        for mid in sorted(prefixes, key=lambda i: (len(sets[i]), i)):
            for w in prefixes[mid]:
                for other in index.get(w, []):
                    verify(mid, other)
                index.setdefault(w, []).append(mid)
        return out
    for mid, prefix in prefixes.items():
        for w in prefix:
            index.setdefault(w, []).append(mid)
    for mid in sorted(set(probes) & prefixes.keys()):
        for w in prefixes[mid]:
            for other in index[w]:
                verify(mid, other)
    return out
