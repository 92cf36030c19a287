"""How much a memory's own evidence supports a query: keyword coverage and the floors. Pure.

Recall abstains when the best evidence is below both floors, and (for people) leaves out hits
whose own evidence is: a cosine below the floor, or far below the query's best, and too few of
the query's words.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence

from cortex.core.recall import query
from cortex.core.text import word_set

STEM_CHARS = 5  # "deploys" and "deployment" share "deplo": a cheap stand-in for stemming
MIN_STEM_CHARS = 3  # what an inflection ending may leave: "say" of "saying", not "s" of "sing"
_ENDINGS = ("ing", "ies", "ied", "es", "ed", "s")  # longest first


@functools.lru_cache(maxsize=8192)
def stem(word: str) -> str:
    """A lowercased word's cheap stem: its inflection ending dropped ("saying" -> "say",
    "fixes"/"fixed" -> "fix", "verified" -> "verif"), then cut to `STEM_CHARS`. Without the
    ending a short word's inflections ("work", "working") would never share a prefix cut."""
    for _ in range(2):  # a plural of a gerund: "settings" -> "setting" -> "sett"
        cut = _without_ending(word)
        if cut == word:
            break
        word = cut
    if len(word) > MIN_STEM_CHARS and word[-1] == word[-2] and word[-1] not in "aeiousl":
        word = word[:-1]  # "running" -> "runn" -> "run", "stopped" -> "stop"
    elif len(word) > MIN_STEM_CHARS and word.endswith("y"):
        word = word[:-1] + "i"  # "study" meets "studies" and "studied"
    return word[:STEM_CHARS]


def _without_ending(word: str) -> str:
    for ending in _ENDINGS:
        if not word.endswith(ending) or len(word) - len(ending) < MIN_STEM_CHARS:
            continue
        if ending == "s" and word.endswith(("ss", "us", "is")):
            return word  # "class", "status", "analysis": no plural ending
        if ending == "es" and not word.endswith(("xes", "ches", "shes", "sses", "zes")):
            continue  # "uses" -> "use" (the "s" rule), "fixes" -> "fix"
        # "verified", "verifies", "verify" all become "verifi"
        return word[: -len(ending)] + ("i" if ending in ("ies", "ied") else "")
    return word


def score_coverage(terms: Sequence[str], content: str) -> float:
    """Share of `terms` (lowercased query words) found in `content`, by word or by stem."""
    if not terms:
        return 0.0
    have = word_set(content)
    stems = _stem_set(content)
    hit = sum(1 for t in terms if t in have or stem(t) in stems)
    return hit / len(terms)


@functools.lru_cache(maxsize=2048)
def _stem_set(content: str) -> frozenset[str]:
    """The stems of a memory's words (cached like `word_set`: recall checks the same candidates'
    coverage for the abstention floor and again for each hit it keeps)."""
    return frozenset(stem(w) for w in word_set(content))


def lexical_coverage(text: str, content: str) -> float:
    """Share of the query's content words (stopwords dropped) that appear in the memory."""
    return score_coverage(query.content_words(text), content)


def is_weak(cosine: float | None, coverage: float, vector_floor: float, lexical_floor: float) -> bool:
    """Both kinds of evidence fall below their floors."""
    return (cosine is None or cosine < vector_floor) and coverage < lexical_floor


def rank_with_evidence(
    order: Iterable[str],
    cosine: Mapping[str, float],
    text_of: Callable[[str], str],
    terms: Sequence[str],
    vector_floor: float,
    lexical_floor: float,
    wanted: int,
) -> list[str]:
    """The first `wanted` ids of `order` whose own evidence is not weak (see `is_weak`)."""
    kept: list[str] = []
    for mid in order:
        if len(kept) >= wanted:
            break
        if not is_weak(cosine.get(mid), score_coverage(terms, text_of(mid)), vector_floor, lexical_floor):
            kept.append(mid)
    return kept
