"""FTS5 rendering of keyword queries: every text gives a valid, safe MATCH expression that finds itself."""

from __future__ import annotations

import sqlite3
import sys
import unicodedata
from collections.abc import Collection

import pytest
from hypothesis import given

from cortex.core.recall.query import ENGLISH_STOPWORDS, MAX_MATCH_TERMS, TextQuery, parse_terms, text_query
from cortex.store.sqlite import fts
from tests.support.strategies import fts_text

TOKENIZE = fts.TOKENIZER  # what the store's FTS table uses


def fts_match_sql(
    text: str, stopwords: Collection[str] = ENGLISH_STOPWORDS, max_terms: int = MAX_MATCH_TERMS
) -> str | None:
    """The MATCH text of the any-term keyword query for `text` (None: nothing to search)."""
    found = text_query(text, stopwords, max_terms)
    return None if found is None else fts.match_text(found)


def fts_match_all_sql(
    text: str, stopwords: Collection[str] = ENGLISH_STOPWORDS, max_terms: int = MAX_MATCH_TERMS
) -> str | None:
    """The MATCH text of the every-term keyword query for `text`."""
    found = text_query(text, stopwords, max_terms, match_all=True)
    return None if found is None else fts.match_text(found)


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


# --- the rest of FTS5 --------------------------------------------------------------------------


def test_quoting_doubles_quotes_and_prefix_adds_a_star() -> None:
    assert fts.quote('say "hi"') == '"say ""hi"""'
    assert fts.match_text(TextQuery(("migrat", "lock"), prefix=True)) == '"migrat" * OR "lock" *'
    assert fts.match_text(TextQuery(())) is None


def test_prefix_terms_find_the_words_they_start() -> None:
    db = _fts("Running the migrations", "lockfile")
    assert _match(db, fts.match_text(TextQuery(("migra", "lock"), prefix=True)) or "") == [1, 2]
    assert _match(db, fts.match_text(TextQuery(("migra", "lock"))) or "") == []


def test_search_sql_ranks_by_the_weighted_bm25() -> None:
    sql = fts.search_sql("m.id", "m.status = 'active'")
    assert sql.count("bm25(memories_fts, 1.0, 0.6, 0.4)") == 2
    assert "MATCH ?" in sql and sql.endswith("LIMIT ?")
