"""The dataset's matching rules, exactly as its README fixes them, plus two benchmark heuristics. Pure.

- `normalize`: lower-case, backticks removed, runs of whitespace collapsed to one space.
- `answers(text, groups)`: the text holds at least one alternative of every group, each as a
  whole word: no letter or digit may touch an alternative on a side where it begins or ends
  with a letter or digit (`pr` is not in `prefer`; `bun` is in `bun.lock`; `#387` is in
  `PR #387,`).
- `briefing_answers(text, groups)`: a single line of the text answers.
- `asserts(text, claim)`: the text holds at least 80% of the claim's content tokens (lower-cased
  words with stop words removed).

The heuristics (documented in the report): `path_like` and `is_file_list`, which decide whether
a progress note mostly lists file paths.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

ASSERT_SHARE = 0.8
FILE_LIST_SHARE = 0.5  # a note is a file list when at least this share of its words are paths

_WS = re.compile(r"\s+")
# A word: letters, digits and underscores, joined by inner apostrophes, dots or hyphens
# (`doesn't`, `bun.lock`, `1.70`, `pre-commit`); trailing punctuation is not part of it.
_WORD = re.compile(r"\w+(?:['’.\-]\w+)*")
# Function words only: negations (not, no, never) stay content, they change what a claim says.
_STOP_TEXT = """
    a an the of to is are was were be been being am in on at for with by from into onto
    and or but if then than so as that this these those it its it's there here
    i you he she we they me him her us them my your his our their
    do does did done has have had having will would shall should can could may might must
    which who whom whose what when where why how all any each some such
    about over under up down out off again also just only very too more most
    s t ll ve re d m
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())


def normalize(text: str) -> str:
    """Lower-cased, backticks removed, whitespace runs collapsed to one space, trimmed."""
    return _WS.sub(" ", text.lower().replace("`", "")).strip()


def contains_term(text: str, term: str) -> bool:
    """True when normalized `term` occurs in normalized `text` as a whole word (README rule)."""
    if not term:
        return False
    start = text.find(term)
    while start != -1:
        end = start + len(term)
        left_ok = not term[0].isalnum() or start == 0 or not text[start - 1].isalnum()
        right_ok = not term[-1].isalnum() or end == len(text) or not text[end].isalnum()
        if left_ok and right_ok:
            return True
        start = text.find(term, start + 1)
    return False


def answers(text: str, groups: Sequence[Sequence[str]]) -> bool:
    """True when the text holds one alternative of every group (an empty group is never met)."""
    if not groups:
        return False
    norm = normalize(text)
    return all(any(contains_term(norm, normalize(alt)) for alt in group) for group in groups)


def answering_line(text: str, groups: Sequence[Sequence[str]]) -> str | None:
    """The first line of `text` that answers on its own, else None."""
    return next((line for line in text.splitlines() if answers(line, groups)), None)


def briefing_answers(text: str, groups: Sequence[Sequence[str]]) -> bool:
    """True when a single line of the briefing answers."""
    return answering_line(text, groups) is not None


def content_tokens(text: str) -> frozenset[str]:
    """The distinct lower-cased words of `text` that are not stop words."""
    return frozenset(w for w in _WORD.findall(normalize(text)) if w not in STOP_WORDS)


def assert_share(text: str, claim: str) -> float:
    """The share of the claim's content tokens that the text holds (0 for a claim without any)."""
    wanted = content_tokens(claim)
    if not wanted:
        return 0.0
    return len(wanted & content_tokens(text)) / len(wanted)


def asserts(text: str, claim: str) -> bool:
    """True when the text holds at least 80% of the claim's content tokens."""
    return assert_share(text, claim) >= ASSERT_SHARE


def asserted_claims(text: str, claims: Iterable[str]) -> list[str]:
    """The claims the text asserts, in order."""
    return [c for c in claims if asserts(text, c)]


# -- file-list progress notes (a benchmark heuristic, not a dataset rule) ----------------------
_TOKEN = re.compile(r"\S+")
_EXT = re.compile(r"^[\w.\-]*\w\.[a-z][a-z0-9]{0,6}$")
# From the first quote to the last (quotes may nest), or to the end when it is never closed.
_QUOTED = re.compile(r'["“].*["”]|["“][^"”]*$', re.S)
_EDGE = "\"'`()[]{}<>,;:!?*"


def path_like(token: str) -> bool:
    """A word that names a file or folder: `src/main.rs`, `./scripts/`, `Cargo.toml`, `main.rs`.

    Not a URL, not a version (`1.70`, `v0.9.3`); a bare name needs a stem of two characters or
    more before its extension (so `e.g.` is not one).
    """
    word = token.strip(_EDGE).rstrip(".")
    if not word or "://" in word or not any(c.isalnum() for c in word):
        return False
    if "/" in word:
        return any(c.isalpha() for c in word)
    if not _EXT.match(word.lower()):
        return False
    stem = word.rsplit(".", 1)[0]
    return len(stem.lstrip(".")) >= 2 and any(c.isalpha() for c in stem)


def path_share(text: str) -> float:
    """The share of the text's whitespace-separated words that are path-like."""
    words = [w for w in _TOKEN.findall(text) if any(c.isalnum() for c in w)]
    if not words:
        return 0.0
    return sum(1 for w in words if path_like(w)) / len(words)


def is_file_list(text: str) -> bool:
    """True when at least half of the note's words are file paths; quoted text (a request the
    note echoes) is left out first."""
    return path_share(_QUOTED.sub(" ", text)) >= FILE_LIST_SHARE
