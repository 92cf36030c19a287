"""Briefing entries that repeat another: nearly all of an entry's words already in a fuller
entry shown beside it, and nothing that tells the two facts apart (a number, a negation, an
identifier, a name: the write gate's test of what a merge would lose). Pure."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from cortex.core.extract.structural import EDITS_TAG
from cortex.core.model import Memory
from cortex.core.write.distinct import lost_by_merge

ECHO_SHARE = 0.8  # an entry with this share of its words in a fuller shown entry repeats it
_WORD = re.compile(r"\w{3,}")
MIN_QUOTED_WORDS = 4  # what is left of a note past its label, to count as quoted elsewhere
_LABEL = re.compile(r"^(?:\S+ ){0,4}\S+: ")  # "what we accomplished: ", up to five words
_SENTENCE_END = re.compile(r"[.!?。！？][)\"'”’]*\s")


def entry_words(entry: str) -> frozenset[str]:
    """The words of an entry's text (its attribution line left out), lower-cased."""
    return frozenset(_WORD.findall(entry.partition("\n")[2].lower()))


def is_lead_in(entry: str) -> bool:
    """Whether an entry's text is one sentence announcing what it does not hold ("Issue 2:
    502 Gateway Timeout: downloads take minutes:"): the list that followed was not part of the
    note. A note that says something before its closing "... Commit + push:" is not one."""
    text = entry.partition("\n")[2].strip()
    return text.endswith(":") and not _SENTENCE_END.search(text)


def lead_ins_last(ranked: Sequence[Memory], entries: Mapping[str, str]) -> list[Memory]:
    """`ranked` with the lead-ins and the lists of edited files after every other entry, each
    group in rank order: they take only the room the notes that say something leave, and a
    lead-in gives its place to a fuller note that holds its words even when that note ranks
    below it. A pinned list of edited files keeps its place."""
    return sorted(ranked, key=lambda m: is_lead_in(entries[m.id]) or (EDITS_TAG in m.tags and not m.pinned))


def _repeats(mine: frozenset[str], theirs: frozenset[str]) -> bool:
    """Whether nearly all of `mine` is in `theirs`."""
    return bool(mine) and len(mine & theirs) >= ECHO_SHARE * len(mine)


def _plain(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(" .:;")


def quotes(fuller: str, shorter: str) -> bool:
    """Whether `fuller` holds all of `shorter` word for word (case and spacing aside), or all of
    it past a short leading label ("What we accomplished: PR #2 is open" in "Current status:
    PR #2 is open, ..."): then it says everything the shorter note says, whatever else it adds
    ("... cannot access private repositories" after the same first sentence is more, not another
    fact)."""
    part, whole = _plain(shorter), _plain(fuller)
    if not part or len(part) >= len(whole):
        return False
    body = _LABEL.sub("", part, count=1)
    return part in whole or (body != part and len(body.split()) >= MIN_QUOTED_WORDS and body in whole)


def find_echoes(shown: Sequence[Memory], words: Mapping[str, frozenset[str]]) -> set[str]:
    """Ids of shown entries (in rank order) that another shown entry already says. Above them:
    an entry with at least as many words holding nearly all of theirs, unless it states another
    fact in the same words ("retries for 24 hours" / "for 72 hours") and does not quote the
    shorter note whole. Below them: only a fuller note of the same section that quotes them
    word for word; a note never gives its place to a lower-ranked note that merely shares its
    words, nor to one of another section (a used gotcha to a context note that quotes it)."""
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
        else:
            if any(
                (b.type, b.pinned) == (a.type, a.pinned) and quotes(b.content, a.content)
                for b in shown[i + 1 :]
            ):
                out.add(a.id)
    return out
