"""Briefing entries that repeat another: nearly all of an entry's words already in a fuller
entry shown beside it, and nothing that tells the two facts apart (a number, a negation, an
identifier, a name: the write gate's test of what a merge would lose). Pure."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from cortex.core.model import Memory
from cortex.core.write.distinct import lost_by_merge

ECHO_SHARE = 0.8  # an entry with this share of its words in a fuller shown entry repeats it
_WORD = re.compile(r"\w{3,}")


def entry_words(entry: str) -> frozenset[str]:
    """The words of an entry's text (its attribution line left out), lower-cased."""
    return frozenset(_WORD.findall(entry.partition("\n")[2].lower()))


def is_lead_in(entry: str) -> bool:
    """Whether an entry's text ends by announcing what it does not hold ("The issues are:",
    "Here's what was accomplished:"): the list that followed was not part of the note."""
    return entry.partition("\n")[2].rstrip().endswith(":")


def lead_ins_last(ranked: Sequence[Memory], entries: Mapping[str, str]) -> list[Memory]:
    """`ranked` with the lead-ins after every other entry, each group in rank order: a lead-in
    takes only the room the notes that say something leave, and gives its place to a fuller
    note that holds its words even when that note ranks below it."""
    return sorted(ranked, key=lambda m: is_lead_in(entries[m.id]))


def _repeats(mine: frozenset[str], theirs: frozenset[str]) -> bool:
    """Whether nearly all of `mine` is in `theirs`."""
    return bool(mine) and len(mine & theirs) >= ECHO_SHARE * len(mine)


def _plain(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(" .:;")


def quotes(fuller: str, shorter: str) -> bool:
    """Whether `fuller` holds all of `shorter` word for word (case and spacing aside): then it
    says everything the shorter note says, whatever else it adds ("... cannot access private
    repositories" after the same first sentence is more, not another fact)."""
    part = _plain(shorter)
    return bool(part) and part in _plain(fuller)


def find_echoes(shown: Sequence[Memory], words: Mapping[str, frozenset[str]]) -> set[str]:
    """Ids of shown entries (in rank order) that an entry ranked above them already says: nearly
    all their words are in it and it has at least as many. A note never gives its place to one
    ranked below it (a used gotcha to a stale context note that quotes it), nor to one that
    states another fact in the same words ("retries for 24 hours" / "for 72 hours") unless it
    quotes the shorter note whole."""
    out: set[str] = set()
    for i, a in enumerate(shown):
        mine = words[a.id]
        if not mine:
            continue
        for b in shown[:i]:
            theirs = words[b.id]
            if (
                len(theirs) >= len(mine)
                and _repeats(mine, theirs)
                and (quotes(b.content, a.content) or not lost_by_merge(b.content, a.content))
            ):
                out.add(a.id)
                break
    return out
