"""Text helpers: the fast paths give exactly what the plain definitions give."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from cortex.core.text import normalize_text, word_set, words


def reference_normalize(text: str) -> str:
    """The definition: NFC, no NULs, no category-C characters but newline and tab, lines rstripped."""
    text = unicodedata.normalize("NFC", text.replace("\x00", ""))
    text = "".join(ch for ch in text if ch in "\n\t" or not unicodedata.category(ch).startswith("C"))
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


AWKWARD = st.sampled_from(
    ["\x00", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029", "\u200b", "\ufeff",
     "\u00a0", "\ue000", "\udc80", "\x7f", "\t", "\n", " ", "e\u0301", "ß", "İ"]
)  # fmt: skip
TEXTS = st.lists(st.one_of(st.text(max_size=20), AWKWARD), max_size=12).map("".join)


@given(TEXTS)
def test_normalize_text_matches_its_definition(text: str) -> None:
    assert normalize_text(text) == reference_normalize(text)


def test_normalize_text_drops_controls_and_keeps_layout() -> None:
    assert normalize_text("a\x00b\x1bc \r\n\td\u200be  \n\n") == "abc\n\tde"


@given(st.text(max_size=60))
def test_the_cached_word_set_is_the_set_of_words(text: str) -> None:
    assert word_set(text) == frozenset(words(text))
    assert word_set(text) == frozenset(words(text))  # second call comes from the cache
