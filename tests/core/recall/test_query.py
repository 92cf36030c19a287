"""Tests for cortex.core.recall.query: keyword queries, intent classification, time windows."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cortex.core.recall import query
from cortex.core.recall.query import (
    INTENT_WEIGHTS,
    FusionWeights,
    QueryIntent,
    TextQuery,
    classify_intent,
    intent_weights,
    text_query,
)
from cortex.core.recall.timeref import TimeWindow, parse_time_window

# --- keyword queries -----------------------------------------------------------------------------


def test_a_text_query_keeps_the_content_terms_first_spelling_first() -> None:
    assert text_query("What did we decide about the Cache? cache") == TextQuery(("decide", "Cache"))
    assert text_query("what is it?") == TextQuery(("what", "is", "it"))  # only stopwords: keep them
    assert text_query("wal busy-timeout", match_all=True) == TextQuery(
        ("wal", "busy", "timeout"), match_all=True
    )
    assert text_query("  ?!* -- () ") is None


def test_a_text_query_caps_its_terms() -> None:
    found = text_query(" ".join(f"word{i}" for i in range(500)))
    assert found is not None and len(found.terms) == 64
    assert text_query("a b c d", stopwords=(), max_terms=2) == TextQuery(("a", "b"))


def test_the_separator_regex_is_exactly_the_separator_rule() -> None:
    # parse_terms splits with a regex for speed; it must split exactly where the rule says.
    for cp in range(sys.maxunicode + 1):
        ch = chr(cp)
        assert bool(query._SEPARATOR_RUN.fullmatch(ch)) == query._is_separator(ch), hex(cp)


# --- intent ----------------------------------------------------------------------------------

T, C, E, K, M, P = (
    QueryIntent.TEMPORAL,
    QueryIntent.CAUSAL,
    QueryIntent.ENTITY,
    QueryIntent.KNOWLEDGE_UPDATE,
    QueryIntent.MULTI_HOP,
    QueryIntent.PLAIN,
)

INTENT_TABLE = [
    ("When did Caroline go to the LGBTQ support group?", T),
    ("when was the schema migration added", T),
    ("How long have I been at my current job?", T),  # "how long" beats "current"
    ("How many days passed between the launch and the bug report?", T),
    ("What did we do last week?", T),
    ("What did Melanie paint after the race?", T),
    ("what happened 3 days ago", T),
    ("In what order did we try the embedders?", T),
    ("the first time the hook timed out", T),
    ("which date is the release planned for", T),
    ("deploys in March 2024", T),
    ("When did we switch to sqlite-vec?", T),  # asks for a date, not the new value
    ("What day of the week do I take a cocktail class?", T),
    ("What exciting news did Maria share on 16 June, 2023?", T),
    ("Why did we choose SQLite over Postgres?", C),
    ("why is the Stop hook still slow", C),  # a reason, although "still"
    ("how come the tests fail on macOS", C),
    ("What was the reason for dropping FAISS?", C),
    ("what caused the database is locked error", C),
    ("Explain the rationale behind WAL mode", C),
    ("the bug was due to a race in the worker", C),
    ("What is my current address?", K),
    ("Which embedder do we use now?", K),
    ("Do we still use FAISS?", K),
    ("Is the cache enabled anymore?", K),
    ("what is the latest version of the schema", K),
    ("we switched the reranker, which one is it", K),
    ("what replaced the old config loader", K),
    ("what does cortex use instead of pickle", K),
    ("What did Caroline and Melanie both paint?", M),
    ("compare the ONNX and torch query paths", M),
    ("What is the difference between relates_to and refines?", M),
    ("How many books have I read in total?", M),
    ("Where does Caroline live and what does John do?", M),
    ("what do Alice and Bob have in common", M),
    ("What LGBTQ+ events has Caroline participated in?", M),  # accumulated over time
    ("What books has Melanie read?", M),
    ("What does Caroline have in her garden?", E),
    ("What does Caroline do for work?", E),
    ("what does fts_match_sql return", E),
    ("settings in cortex/core/query.py", E),
    ("where is the `busy_timeout` pragma set", E),
    ("Who is the maintainer of the vec extension?", E),
    ("what port does the API use", E),
    ('the "Nightly Build" job', E),
    ("getUserName throws", E),
    ("What time management techniques does Deborah use?", E),  # "what time" + noun
    ("What kind of books does Caroline have in her library?", E),
    ("How do I run the tests?", P),
    ("tests fail with a timeout error", P),
    ("May I ask how to configure hooks?", P),  # "May" is not the month
    ("whenever the hook fires, what happens?", P),  # "whenever" is not "when"
    ("what is a good default briefing budget", P),
    ("I'd like to know how the store handles duplicates", P),
    ("", P),
]


@pytest.mark.parametrize(("query", "expected"), INTENT_TABLE)
def test_classify_intent(query: str, expected: QueryIntent) -> None:
    assert classify_intent(query) is expected


def test_intent_table_covers_every_intent_and_is_large() -> None:
    assert len(INTENT_TABLE) >= 40
    assert {intent for _, intent in INTENT_TABLE} == set(QueryIntent)


@given(st.text())
def test_classify_intent_accepts_any_text(text: str) -> None:
    assert classify_intent(text) in set(QueryIntent)


def test_intent_weights_table() -> None:
    assert set(INTENT_WEIGHTS) == set(QueryIntent)
    plain = intent_weights(QueryIntent.PLAIN)
    entity = intent_weights(QueryIntent.ENTITY)
    assert entity.bm25 > entity.vector
    assert plain.bm25 == plain.vector
    for leaning in (QueryIntent.TEMPORAL, QueryIntent.KNOWLEDGE_UPDATE):
        assert intent_weights(leaning).recency > plain.recency
    assert plain.list_weights() == {"bm25": plain.bm25, "vector": plain.vector}
    assert set(plain.signal_weights()) == {"recency", "priority", "centrality"}


def test_fusion_weights_reject_negative_values() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        FusionWeights(bm25=1, vector=1, recency=-0.1, priority=0, centrality=0)


# --- time windows ----------------------------------------------------------------------------

NOW = datetime(2025, 3, 12, 15, 30, tzinfo=UTC)  # a Wednesday


def _d(month: int, day: int, year: int = 2025, hour: int = 0) -> datetime:
    return datetime(year, month, day, hour, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("what did I do yesterday", _d(3, 11), _d(3, 12)),
        ("today's failures", _d(3, 12), _d(3, 13)),
        ("the day before yesterday", _d(3, 10), _d(3, 11)),
        ("what happened 3 days ago", _d(3, 9), _d(3, 10)),
        ("a week ago", NOW - timedelta(days=10.5), NOW - timedelta(days=3.5)),
        ("last week", _d(3, 3), _d(3, 10)),
        ("this week", _d(3, 10), _d(3, 17)),
        ("last month", _d(2, 1), _d(3, 1)),
        ("this year", _d(1, 1), _d(1, 1, 2026)),
        ("last year", _d(1, 1, 2024), _d(1, 1)),
        ("in the past 3 days", NOW - timedelta(days=3), NOW),
        ("the past week", NOW - timedelta(days=7), NOW),
        ("on 2024-12-24", _d(12, 24, 2024), _d(12, 25, 2024)),
        ("on March 5th", _d(3, 5), _d(3, 6)),
        ("on June 5", _d(6, 5, 2024), _d(6, 6, 2024)),  # latest June 5 that has passed
        ("december 3, 2023", _d(12, 3, 2023), _d(12, 4, 2023)),
        ("in May 2024", _d(5, 1, 2024), _d(6, 1, 2024)),
        ("during december", _d(12, 1, 2024), _d(1, 1, 2025)),
        ("what did Maria share on 16 June, 2023", _d(6, 16, 2023), _d(6, 17, 2023)),
        ("the 3rd of March", _d(3, 3), _d(3, 4)),
        ("last Friday", _d(3, 7), _d(3, 8)),
        ("last wednesday", _d(3, 5), _d(3, 6)),  # today is Wednesday: a week back
        ("in the last few months", NOW - timedelta(days=90), NOW),
        ("in 2023", _d(1, 1, 2023), _d(1, 1, 2024)),
        ("what changed recently", NOW - timedelta(days=14), NOW),
    ],
)
def test_parse_time_window(query: str, start: datetime, end: datetime) -> None:
    assert parse_time_window(query, NOW) == TimeWindow(start, end)


@pytest.mark.parametrize(
    "query", ["how do I run the tests", "on 2024-02-31", "banana days ago", "May I ask?", ""]
)
def test_parse_time_window_none(query: str) -> None:
    assert parse_time_window(query, NOW) is None


def test_parse_time_window_keeps_the_timezone_of_now() -> None:
    tz = timezone(timedelta(hours=-5))
    window = parse_time_window("yesterday", datetime(2025, 3, 12, 1, 0, tzinfo=tz))
    assert window == TimeWindow(datetime(2025, 3, 11, tzinfo=tz), datetime(2025, 3, 12, tzinfo=tz))


@given(st.text(), st.datetimes(timezones=st.just(UTC)))
def test_parse_time_window_never_raises_and_is_ordered(text: str, now: datetime) -> None:
    window = parse_time_window(text, now)
    assert window is None or window.start < window.end
