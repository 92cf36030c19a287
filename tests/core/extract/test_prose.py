"""Markdown prose extraction: what counts as a statement, where sentences end, which paths."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cortex.core.extract.prose import (
    code_spans,
    parse_mentioned_paths,
    parse_prose_blocks,
    parse_sentences,
    quoted_spans,
)
from cortex.core.extract.transcript_blocks import CLIP_MARK


def test_blocks_leave_out_code_quotes_tables_and_headings() -> None:
    text = (
        "# Heading\n"
        "First paragraph\ncontinues here.\n\n"
        "```python\nx = 1\n```\n"
        "~~~\nalso code\n~~~\n"
        "> quoted\n"
        "| a | b |\n"
        "    indented code\n"
        "- item one\n"
        "- item two\n"
        "Last one."
    )
    assert parse_prose_blocks(text) == [
        "First paragraph\ncontinues here.",
        "item one",
        "item two\nLast one.",
    ]


def test_a_pasted_log_is_not_prose() -> None:
    # A deploy log pasted into a prompt: its lines open with a time of day (Vercel), a date and
    # time (most servers) or a bracketed time; the words around it are the user's.
    text = (
        "the deploy fails, here is the log:\n"
        "15:12:06.526 Error: No address provided to ConvexReactClient.\n"
        "15:12:06.527 If running locally, make sure to run `convex dev` first.\n"
        "2025-10-20T15:12:07.001Z WARN always use the production URL here\n"
        "[15:12:08] Build failed because of the error above.\n"
        "2025-10-20 15:12:09,114 INFO never retry a failed deploy\n"
        "Can you fix it? At 15:30 I will try again."
    )
    assert parse_prose_blocks(text) == [
        "the deploy fails, here is the log:",
        "Can you fix it? At 15:30 I will try again.",
    ]


def test_a_clipped_texts_head_and_tail_are_not_one_paragraph() -> None:
    # What stood between them is gone: joined, they would read as one sentence.
    clipped = f"The deploy failed because the build step\n{CLIP_MARK}\nruns on every push to main now."
    assert parse_prose_blocks(clipped) == [
        "The deploy failed because the build step",
        "runs on every push to main now.",
    ]


def test_unclosed_fence_swallows_the_rest() -> None:
    assert parse_prose_blocks("Intro.\n```\ncode\nmore code") == ["Intro."]


def test_sentences_split_on_terminators_but_not_inside_code_or_abbreviations() -> None:
    block = "Use `a.b()` here. It works, e.g. for lists. Does it? Yes! **Done**"
    assert parse_sentences(block) == [
        "Use `a.b()` here.",
        "It works, e.g. for lists.",
        "Does it?",
        "Yes!",
        "Done",
    ]


def test_mentioned_paths() -> None:
    text = (
        "Edit cortex/core/gate.py and ./tests/test_gate.py, see db.py or README.md. "
        "Not https://example.com/a/b.html nor v1.2.3 nor e.g. this."
    )
    assert parse_mentioned_paths(text) == [
        "cortex/core/gate.py",
        "tests/test_gate.py",
        "db.py",
        "README.md",
    ]


def test_code_and_quote_spans() -> None:
    text = "a `x` b\n```\ny\n```\n> q\n"
    spans = code_spans(text)
    assert [text[a:b] for a, b in spans] == ["`x`", "```\ny\n```\n"]
    assert [text[a:b] for a, b in quoted_spans(text)] == ["> q\n"]


@given(st.text(max_size=300))
def test_prose_helpers_accept_any_text(text: str) -> None:
    for block in parse_prose_blocks(text):
        for sentence in parse_sentences(block):
            assert sentence.strip() == sentence and sentence
    parse_mentioned_paths(text)
    for start, end in code_spans(text) + quoted_spans(text):
        assert 0 <= start <= end <= len(text)
