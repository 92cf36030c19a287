"""Tests for cortex.core.recall.query: FTS5 MATCH building, intent classification, time windows."""

from __future__ import annotations

import sqlite3
import sys
import unicodedata
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cortex.core.recall import query
from cortex.core.recall.query import (
    INTENT_WEIGHTS,
    FusionWeights,
    QueryIntent,
    classify_intent,
    fts_match_all_sql,
    fts_match_sql,
    intent_weights,
    parse_terms,
)
from cortex.core.recall.timeref import TimeWindow, parse_time_window
from tests.support.strategies import fts_text

TOKENIZE = "porter unicode61 remove_diacritics 2"  # what the store's FTS table uses


def _fts(*docs: str) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(content, summary, tokenize='{TOKENIZE}')")
    db.executemany("INSERT INTO t(rowid, content, summary) VALUES (?, ?, '')", enumerate(docs, 1))
    return db


def _match(db: sqlite3.Connection, expr: str) -> list[int]:
    return [r for (r,) in db.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY rowid", [expr])]


# --- FTS5 expressions ------------------------------------------------------------------------


@given(fts_text)
def test_any_text_gives_a_valid_match_expression(text: str) -> None:
    db = _fts("alpha beta", "near gamma content")
    for expr in (fts_match_sql(text), fts_match_all_sql(text)):
        assert expr is None or isinstance(_match(db, expr), list)  # raises if invalid


@given(fts_text)
def test_text_always_finds_itself(text: str) -> None:
    # Every quoted term is a run of whole unicode61 tokens: no empty phrase, no term the
    # tokenizer would cut differently, so even the AND query matches the source text.
    doc = text.replace("\x00", "")  # the store normalises NULs away before indexing
    db = _fts("unrelated filler", doc)
    for expr in (fts_match_sql(doc), fts_match_all_sql(doc)):
        if expr is not None:
            assert 2 in _match(db, expr)


@pytest.mark.parametrize(
    "text",
    [
        "hmm\U0001f914ok",  # SQLite's older tables keep this emoji inside the token
        "foo\u2014bar \u201cquoted\u201d",  # and split at these, inside one quoted phrase
        "nai\u0308ve cafe\u0301",
        "x\u19b0y \u1cf2",  # letters to Python, separators to SQLite
        "C++ & .NET: 100% (v2.0) [wip] {x} <tag>",
    ],
)
def test_tricky_text_finds_itself(text: str) -> None:
    db = _fts("unrelated filler", text)
    for expr in (fts_match_sql(text), fts_match_all_sql(text)):
        assert expr is not None
        assert _match(db, expr) == [2]


@given(fts_text)
def test_text_the_tokenizer_finds_nothing_in_gives_none(text: str) -> None:
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE d USING fts5(c, tokenize='{TOKENIZE}')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(d, 'row')")
    db.execute("INSERT INTO d VALUES (?)", [text.replace("\x00", "")])
    if db.execute("SELECT count(*) FROM v").fetchone()[0] == 0:
        assert fts_match_sql(text) is None
        assert fts_match_all_sql(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sqlite-vec extension", '"sqlite" OR "vec" OR "extension"'),
        ('NEAR(wal mode) "locked', '"NEAR" OR "wal" OR "mode" OR "locked"'),
        ("content:secret ^start tail*", '"content" OR "secret" OR "start" OR "tail"'),
        ("what is it?", '"what" OR "is" OR "it"'),  # only stopwords: keep them
        ("What did we decide about the Cache?", '"decide" OR "Cache"'),
        ("Cache cache CACHE", '"Cache"'),
        ("fts_match_sql(text)", '"fts" OR "match" OR "sql" OR "text"'),
        ("café — naïve", '"café" OR "naïve"'),
        ("foo—bar", '"foo—bar"'),  # non-ASCII punctuation stays inside the phrase
        ("don’t panic", '"panic"'),
        ("", None),
        ("  ?!* -- () \"\" '' ", None),
        ("\U0001f600 \u2014", None),
        ("\x00\x01\x02", None),
    ],
)
def test_fts_match_sql_examples(text: str, expected: str | None) -> None:
    assert fts_match_sql(text) == expected


def test_and_joins_terms() -> None:
    assert fts_match_all_sql("wal busy-timeout") == '"wal" AND "busy" AND "timeout"'


def test_or_ranks_docs_with_more_terms_first() -> None:
    db = _fts("wal mode only", "busy timeout only", "wal mode with busy timeout")
    expr = fts_match_sql("wal busy timeout")
    assert expr is not None
    ranked = [r for (r,) in db.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY rank", [expr])]
    assert ranked[0] == 3 and set(ranked) == {1, 2, 3}


def test_syntax_in_input_is_plain_text() -> None:
    db = _fts("alpha secret", "beta")
    # Raw, "content:beta" would be a column filter and "-" a NOT: both must be plain words.
    assert _match(db, fts_match_sql("content:beta") or "") == [2]
    assert _match(db, fts_match_all_sql("alpha -secret") or "") == [1]


def test_stemming_and_diacritics_apply_to_quoted_terms() -> None:
    db = _fts("Running the migrations", "cafe naive")
    assert _match(db, fts_match_sql("runs migration") or "") == [1]
    assert _match(db, fts_match_all_sql("CAFÉ nai\u0308ve") or "") == [2]


def test_stopwords_and_term_cap_are_parameters() -> None:
    assert fts_match_sql("the cache", stopwords=()) == '"the" OR "cache"'
    assert fts_match_sql("a b c d", stopwords=(), max_terms=2) == '"a" OR "b"'
    long_text = " ".join(f"word{i}" for i in range(500))
    assert (fts_match_sql(long_text) or "").count(" OR ") == 63


def test_the_separator_regex_is_exactly_the_separator_rule() -> None:
    # parse_terms splits with a regex for speed; it must split exactly where the rule says.
    for cp in range(sys.maxunicode + 1):
        ch = chr(cp)
        assert bool(query._SEPARATOR_RUN.fullmatch(ch)) == query._is_separator(ch), hex(cp)


def test_term_splitting_agrees_with_unicode61() -> None:
    # Exhaustive over Unicode: where cortex splits, SQLite splits; letters/digits cortex keeps
    # are letters/digits for SQLite too (its tables are older than Python's).
    chars = [chr(cp) for cp in range(1, sys.maxunicode + 1) if not 0xD800 <= cp <= 0xDFFF]
    category = {c: unicodedata.category(c) for c in chars}
    splitters = [c for c in chars if (c.isascii() and not c.isalnum()) or category[c][0] == "Z"]
    splitters += [c for c in chars if category[c] == "Cc" and not c.isascii()]
    db = _fts(*(f"q{c}z" for c in splitters))
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    counts = dict(db.execute("SELECT doc, count(*) FROM v GROUP BY doc").fetchall())
    assert all(counts[i] == 2 for i in range(1, len(splitters) + 1))
    assert all(len(parse_terms(f"q{c}z")) == 2 for c in splitters)

    anchors = [c for c in chars if category[c][0] in "LN" or category[c] == "Co"]
    db = _fts(*anchors)
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    indexed = {doc for (doc,) in db.execute("SELECT DISTINCT doc FROM v")}
    not_letters = [c for i, c in enumerate(anchors, 1) if i not in indexed]
    assert len(not_letters) < 100  # a handful of scripts whose class changed since
    assert all(parse_terms(c) == [] for c in not_letters)
    assert all(parse_terms(f"{c}{c}") == [f"{c}{c}"] for c in anchors[::97] if c not in not_letters)


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
