"""Small text helpers shared by the core: hashing, normalising, word sets, embedding text. Pure."""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata

_WS = re.compile(r"\s+")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # category Cc except \t and \n


def _drop_other_chars(text: str) -> str:
    """Remove every category-C character except newline and tab.

    Every category-C character is non-printable, so printable text (most of it) skips the
    per-character walk; the walk is kept for what is left after the ASCII controls go.
    """
    if text.replace("\n", "").replace("\t", "").isprintable():
        return text
    text = _ASCII_CONTROL.sub("", text)
    if text.replace("\n", "").replace("\t", "").isprintable():
        return text
    return "".join(ch for ch in text if ch in "\n\t" or not unicodedata.category(ch).startswith("C"))


def as_text(value: object) -> str:
    """`value` when it is a string, else "" (a field of parsed JSON that may be anything)."""
    return value if isinstance(value, str) else ""


def normalize_text(text: str) -> str:
    """NFC-normalise, drop NULs and control characters (keep newlines/tabs), trim trailing space."""
    text = _drop_other_chars(unicodedata.normalize("NFC", text.replace("\x00", "")))
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def content_hash(text: str) -> str:
    """Hash that ignores case and whitespace differences, so trivially re-typed text dedupes."""
    canon = _WS.sub(" ", unicodedata.normalize("NFKC", text)).strip().casefold()
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


def words(text: str) -> list[str]:
    """Lowercased alphanumeric word tokens."""
    return [w.casefold() for w in _WORD.findall(text)]


@functools.lru_cache(maxsize=2048)
def word_set(text: str) -> frozenset[str]:
    """Distinct lowercased words, for cheap Jaccard similarity (cached: the write gate asks
    for the same neighbours' sets over and over)."""
    return frozenset(words(text))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two word sets (0 when both are empty)."""
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


def embedding_text(text: str, mem_type: str | None, project: str | None) -> str:
    """The text actually embedded: `[type] [project:name] text` for memories and queries alike."""
    prefix = []
    if mem_type:
        prefix.append(f"[{mem_type}]")
    if project:
        prefix.append(f"[project:{project}]")
    return " ".join([*prefix, text]) if prefix else text


def first_line_summary(text: str, max_chars: int = 120) -> str:
    """A one-line summary: the first sentence or line, cut at a word boundary."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    sentence = re.split(r"(?<=[.!?])\s", line, maxsplit=1)[0]
    if len(sentence) <= max_chars:
        return sentence
    cut = sentence[: max_chars - 1].rsplit(" ", 1)[0]
    return (cut or sentence[: max_chars - 1]) + "…"
