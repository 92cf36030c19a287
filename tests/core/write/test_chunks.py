"""Word windows of long memories: which parts of a text get their own vector."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cortex.core.write.chunks import CHUNK_SLOTS, plan_chunks


def _text(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


def test_short_text_needs_no_extra_window() -> None:
    assert plan_chunks(_text(8), window=8, stride=6) == []
    assert plan_chunks("", window=8, stride=6) == []


def test_windows_start_after_the_first_and_overlap() -> None:
    chunks = plan_chunks(_text(20), window=8, stride=6, max_chunks=10)
    # The memory's own vector covers w0..w7; windows start every 6 words, 2 words of overlap.
    assert chunks == [
        "w6 w7 w8 w9 w10 w11 w12 w13",
        "w12 w13 w14 w15 w16 w17 w18 w19",
    ]


def test_a_window_only_when_words_remain_uncovered() -> None:
    assert plan_chunks(_text(14), window=8, stride=6, max_chunks=10) == ["w6 w7 w8 w9 w10 w11 w12 w13"]
    assert len(plan_chunks(_text(15), window=8, stride=6, max_chunks=10)) == 2


def test_windows_are_verbatim_slices_keeping_line_breaks() -> None:
    text = "alpha beta\ngamma   delta\n\nepsilon zeta eta theta"
    chunks = plan_chunks(text, window=4, stride=2, max_chunks=10)
    assert chunks[0] == "gamma   delta\n\nepsilon zeta"
    assert all(c in text for c in chunks)


def test_the_cap_bounds_the_number_of_windows() -> None:
    assert len(plan_chunks(_text(1000), window=8, stride=6, max_chunks=3)) == 3
    assert len(plan_chunks(_text(10_000), window=8, stride=8, max_chunks=10**6)) == CHUNK_SLOTS


@pytest.mark.parametrize(("window", "stride"), [(0, 0), (8, 0), (8, 9), (-1, 1)])
def test_bad_window_settings_are_refused(window: int, stride: int) -> None:
    with pytest.raises(ValueError, match="stride"):
        plan_chunks("a b c", window=window, stride=stride)


@given(
    n=st.integers(0, 400),
    window=st.integers(1, 40),
    data=st.data(),
)
def test_windows_cover_every_word_when_uncapped(n: int, window: int, data: st.DataObject) -> None:
    stride = data.draw(st.integers(1, window))
    words = _text(n).split()
    chunks = plan_chunks(" ".join(words), window=window, stride=stride, max_chunks=10**6)
    if len(chunks) == CHUNK_SLOTS:
        return  # capped by the slots: coverage stops there by design
    covered = set(words[:window])
    for c in chunks:
        assert len(c.split()) <= window
        covered.update(c.split())
    assert covered == set(words)
