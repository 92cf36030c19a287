"""A change of course that overturns an earlier decision. Pure.

"Switched the pricing cache from SQLite to Redis" says the earlier "We'll cache pricing responses
in SQLite" no longer holds: it names what was left (SQLite), what replaced it (Redis), and what
it is about (the pricing cache). An earlier decision is overturned when it names what was left,
does not name what replaced it, and shares what the change is about: at least two of its words
beyond the two names. "Use SQLite for the job queue" shares none of "pricing cache" and stays.

The phrasings read: "from X to Y" after a verb of change (switch, migrate, move, change, port,
convert), "replace X with Y", "Y instead of X" / "Y rather than X", "use Y, not X", "drop X in
favour of Y".

A user who redirects the answer they were given ("actually, let's use Postgres for sessions
instead") names only what replaces it: the previous answer's decisions that share a word of what
the prompt is about and do not name the new choice are what it overturns (`redirection`).

Going back ("let's go back to npm", "Reverted to npm") undoes an earlier change of course that
left what it returns to ("Migrated from npm to Bun"), whatever else it is about.

The user's own rules change the same way ("From now on use pnpm instead of npm for installs"
overturns "Always use npm for installing packages"): a user says little, so for their rules one
shared word is enough. Words are compared by their stem (`installs` and `installing` are one,
`indent` and `indentation` too).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MIN_SHARED_WORDS = 2
MIN_SHARED_RULE_WORDS = 1  # between two of the user's own rules
_SUFFIXES = ("ing", "ed", "es", "s")
MIN_PREFIX_CHARS = 5
MIN_WORD_CHARS = 4

_NAME = r"[`'\"]?(?P<{}>[A-Za-z][\w.+#-]*[\w+#])[`'\"]?"
_OLD, _NEW = _NAME.format("old"), _NAME.format("new")
_CHANGES = (
    re.compile(
        r"\b(?:switch|migrat|mov|chang|port|convert)\w*\b[^.;:\n]{0,60}?\bfrom\s+"
        + _OLD
        + r"\s+to\s+"
        + _NEW,
        re.IGNORECASE,
    ),
    re.compile(r"\breplac(?:e|ed|es|ing)\s+" + _OLD + r"\s+(?:with|by)\s+" + _NEW, re.IGNORECASE),
    re.compile(_NEW + r"\s+(?:instead of|rather than)\s+" + _OLD, re.IGNORECASE),
    re.compile(r"\buse\s+" + _NEW + r",?\s+not\s+" + _OLD, re.IGNORECASE),
    re.compile(r"\bdrop(?:s|ped|ping)?\s+" + _OLD + r"\s+in favou?r of\s+" + _NEW, re.IGNORECASE),
)
# "use Postgres for sessions instead": "instead" with no "of" after it, what it replaces unsaid.
_REDIRECT = re.compile(
    r"\b(?:use|go with|try|switch to|pick|choose|keep|stick with)\s+(?:the\s+)?"
    + _NEW
    + r"(?=[\s,])[^.;!?\n]{0,60}?\binstead\b(?!\s+of\b)",
    re.IGNORECASE,
)
# "let's go back to npm", "switched back to Next.js 15", "Reverted to npm": a return to what an
# earlier change of course left.
_BACK = re.compile(
    r"\b(?:(?:go|goes|going|went|switch\w*|mov\w*|chang\w*|roll\w*)\s+back\s+to|revert(?:s|ed|ing)?\s+"
    r"(?:back\s+)?to)\s+(?:using\s+|the\s+)?" + _NEW,
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z][a-z0-9_-]+")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,2}[.)])\s+(.+)$", re.MULTILINE)
# Words every decision may use: they say nothing of what it is about.
_COMMON = frozenset(
    (
        "decided", "decision", "decide", "chose", "choose", "chosen", "going", "switch", "switched",
        "switching", "migrate", "migrated", "move", "moved", "change", "changed", "replace", "replaced",
        "instead", "rather", "than", "from", "with", "that", "this", "these", "those", "will", "would",
        "should", "could", "have", "been", "being", "were", "they", "them", "their", "there", "which",
        "when", "where", "what", "because", "since", "also", "only", "just", "more", "most", "very",
        "into", "onto", "over", "under", "then", "your", "ours", "uses", "used", "using", "make", "made",
        "does", "done", "need", "needs", "the", "and", "for", "not", "now", "our", "all", "any", "use",
        "drop", "dropped", "favour", "favor", "feat", "fix", "chore", "refactor",
        "always", "never", "please", "repo", "repository", "project", "future", "user", "rule",
        "actually", "already", "let's", "lets", "maybe", "rather", "keep", "stick", "pick", "choose",
        "it", "this", "that", "them", "these", "those", "one", "ones", "something",
    )
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Change:
    """What a change of course left (`old`), what replaced it (`new`), the words it is about."""

    old: str
    new: str
    about: frozenset[str]


def changes_of_course(text: str) -> list[Change]:
    """The changes of course `text` states, in order (none when it names the same thing twice)."""
    words = topic_words(text)
    out: list[Change] = []
    for pattern in _CHANGES:
        for m in pattern.finditer(text):
            old, new = m.group("old").lower(), m.group("new").lower()
            if old != new and _COMMON.isdisjoint((old, new)):
                out.append(Change(old, new, words - {old, new}))
    return out


def returns_to(text: str) -> list[str]:
    """What `text` goes back to ("let's go back to npm" -> "npm"), in order."""
    names = (m.group("new").lower() for m in _BACK.finditer(text))
    return [n for n in dict.fromkeys(names) if n not in _COMMON]


def reverses(back_to: str, earlier: str) -> bool:
    """True when `earlier` states a change of course that left `back_to` ("Migrated from npm to
    Bun" for a return to npm): going back undoes it."""
    return any(c.old == back_to for c in changes_of_course(earlier))


def redirection(text: str) -> Change | None:
    """The new choice a redirect names ("let's use Postgres for sessions instead"), with what it
    is about; what it left is unsaid (`old` is ""). None when `text` redirects nothing."""
    m = _REDIRECT.search(text)
    new = m.group("new").lower() if m else ""
    if not new or new in _COMMON:
        return None
    return Change("", new, topic_words(text) - {new})


def overturns(change: Change, earlier: str, min_shared: int = MIN_SHARED_WORDS) -> bool:
    """True when `earlier` states what `change` left: it names the old choice (when the change
    names one) and not the new one, and shares at least `min_shared` words (by stem) of what
    the change is about. A note that lists several items is overturned only when each of them
    is: one about something else still holds, and the note with it."""
    items = [m.group(1) for m in _LIST_ITEM.finditer(earlier)]
    if len(items) >= 2:
        return all(_overturns(change, item, min_shared) for item in items)
    return _overturns(change, earlier, min_shared)


def _overturns(change: Change, earlier: str, min_shared: int) -> bool:
    if (change.old and not _named(change.old, earlier)) or _named(change.new, earlier):
        return False
    theirs = _stems(topic_words(earlier) - {change.old, change.new})
    shared = [w for w in _stems(change.about) if any(_same_stem(w, t) for t in theirs)]
    return len(shared) >= min_shared


def _same_stem(a: str, b: str) -> bool:
    """One word, inflected or derived: equal stems, or one the start of the other where the
    shorter has five letters or more (`indent` and `indentation`, `config` and `configuration`)."""
    short, long = sorted((a, b), key=len)
    return short == long or (len(short) >= MIN_PREFIX_CHARS and long.startswith(short))


def _stems(words: frozenset[str]) -> set[str]:
    """Each word without one inflection ending, where four letters stay."""
    return {_stem(w) for w in words}


def _stem(word: str) -> str:
    return next((word[: -len(s)] for s in _SUFFIXES if word.endswith(s) and len(word) > len(s) + 3), word)


def _named(name: str, text: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text.lower().replace("`", "")) is not None


def topic_words(text: str) -> frozenset[str]:
    """The words that say what a text is about: four letters or more, not the common ones."""
    found = _WORD.findall(text.lower().replace("`", ""))
    return frozenset(w for w in found if len(w) >= MIN_WORD_CHARS and w not in _COMMON)
