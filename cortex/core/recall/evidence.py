"""How much a memory's own evidence supports a query: keyword coverage and the floors. Pure.

Recall abstains when the best evidence is below both floors, and (for people) leaves out hits
whose own evidence is: a cosine below the floor, or far below the query's best, and too few of
the query's words.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from cortex.core.recall import query
from cortex.core.text import word_set

STEM_CHARS = 5  # "deploys" and "deployment" share "deplo": a cheap stand-in for stemming


def score_coverage(terms: Sequence[str], content: str) -> float:
    """Share of `terms` (lowercased query words) found in `content`, by word or by stem."""
    if not terms:
        return 0.0
    have = word_set(content)
    stems = {w[:STEM_CHARS] for w in have}
    hit = sum(1 for t in terms if t in have or t[:STEM_CHARS] in stems)
    return hit / len(terms)


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
