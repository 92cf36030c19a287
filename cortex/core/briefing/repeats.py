"""Briefing entries that repeat another: nearly all of an entry's words already in a fuller
entry shown beside it. Pure."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from cortex.core.model import Memory

ECHO_SHARE = 0.8  # an entry with this share of its words in a fuller shown entry repeats it
_WORD = re.compile(r"\w{3,}")


def entry_words(entry: str) -> frozenset[str]:
    """The words of an entry's text (its attribution line left out), lower-cased."""
    return frozenset(_WORD.findall(entry.partition("\n")[2].lower()))


def _repeats(mine: frozenset[str], theirs: frozenset[str]) -> bool:
    """Whether nearly all of `mine` is in `theirs`."""
    return bool(mine) and len(mine & theirs) >= ECHO_SHARE * len(mine)


def find_echoes(shown: Sequence[Memory], words: Mapping[str, frozenset[str]]) -> set[str]:
    """Ids of shown entries that another shown entry already says: nearly all their words are
    in one that has more words (of two the same size, the one ranked higher stays)."""
    out: set[str] = set()
    for i, a in enumerate(shown):
        mine = words[a.id]
        if not mine:
            continue
        for j, b in enumerate(shown):
            theirs = words[b.id]
            fuller = len(theirs) > len(mine) or (len(theirs) == len(mine) and j < i)
            if j != i and fuller and _repeats(mine, theirs):
                out.add(a.id)
                break
    return out
