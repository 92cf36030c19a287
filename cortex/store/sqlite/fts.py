"""FTS5 over the memories table: the index's schema, keyword queries as MATCH text, BM25 ranking.

The one module that speaks FTS5, so a change of tokenizer, weights or quoting happens here
once. Stdlib only and cheap to import: the UserPromptSubmit hook searches through it too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cortex.core.recall.query import TextQuery

TABLE = "memories_fts"
TOKENIZER = "porter unicode61 remove_diacritics 2"
BM25_WEIGHTS = (1.0, 0.6, 0.4)  # content, summary, tags: a hit in the text counts most
BM25 = f"bm25({TABLE}, {', '.join(map(str, BM25_WEIGHTS))})"  # lower is better

# The FTS5 part of schema 1 (`migrations.m001_initial`): an external-content index over the
# memories table, kept in step by triggers. A later schema adds statements; these never change.
SCHEMA_1 = (
    f"""
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            content, summary, tags,
            content='memories', content_rowid='n',
            tokenize='{TOKENIZER}'
        )
        """,
    """
        CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, content, summary, tags)
            VALUES (new.n, new.content, new.summary, new.tags);
        END
        """,
    """
        CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, content, summary, tags)
            VALUES ('delete', old.n, old.content, old.summary, old.tags);
        END
        """,
    """
        CREATE TRIGGER memories_fts_au AFTER UPDATE OF content, summary, tags ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, content, summary, tags)
            VALUES ('delete', old.n, old.content, old.summary, old.tags);
            INSERT INTO memories_fts(rowid, content, summary, tags)
            VALUES (new.n, new.content, new.summary, new.tags);
        END
        """,
)
REBUILD_SQL = f"INSERT INTO {TABLE}({TABLE}) VALUES ('rebuild')"
# Fails (raises) when the index disagrees with the memories table.
INTEGRITY_CHECK_SQL = f"INSERT INTO {TABLE}({TABLE}, rank) VALUES ('integrity-check', 1)"


def quote(term: str) -> str:
    """A term as an FTS5 phrase: its words in order, whatever query syntax it contains."""
    return '"' + term.replace('"', '""') + '"'


def match_text(query: TextQuery) -> str | None:
    """The MATCH text of a keyword query (quoted phrases joined by OR or AND); None if no term."""
    star = " *" if query.prefix else ""
    joiner = " AND " if query.match_all else " OR "
    return joiner.join(quote(term) + star for term in query.terms) or None


def match_tag(tag: str) -> str:
    """MATCH text for the rows whose tags hold `tag`'s words in order: a superset of the rows
    carrying the tag, for the caller to check exactly."""
    return f"tags : {quote(tag)}"


def tag_rows_sql() -> str:
    """Row numbers matching a `match_tag` text (its one parameter)."""
    return f"SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH ?"


def search_sql(columns: str, where: str) -> str:
    """A keyword search over memories (alias `m`) selecting `columns` and then the BM25 score,
    best first. Parameters: the MATCH text, those of `where`, then the row limit."""
    return (
        f"SELECT {columns}, {BM25} FROM {TABLE} JOIN memories m ON m.n = {TABLE}.rowid "
        f"WHERE {TABLE} MATCH ? AND {where} ORDER BY {BM25}, {TABLE}.rowid LIMIT ?"
    )


def top_sql() -> str:
    """The best-scoring rows of the index alone among its newest matches: rowid and BM25, best
    first. Parameters: the MATCH text, how many of the newest matching rows are scored (-1: all),
    then the row limit. Cheaper than `search_sql` when many rows match: no lookup of each matching row's
    memory, and no more rows scored than asked (BM25 costs ~2.5 us a row on 2 cores; matches
    are found in rowid order for ~0.05 us a row). With no more matches than that, it ranks
    every match, as `search_sql` does."""
    return (
        f"SELECT n, score FROM (SELECT rowid AS n, {BM25} AS score FROM {TABLE} WHERE {TABLE} MATCH ? "
        "ORDER BY rowid DESC LIMIT ?) ORDER BY score, n LIMIT ?"
    )


def newest_search_sql(columns: str, where: str) -> str:
    """Like `search_sql` over the newest matches only: parameters the MATCH text, how many of
    the newest matching rows are scored, those of `where`, then the row limit."""
    newest = (
        f"SELECT rowid AS n, {BM25} AS score FROM {TABLE} WHERE {TABLE} MATCH ? ORDER BY rowid DESC LIMIT ?"
    )
    return (
        f"SELECT {columns}, t.score FROM ({newest}) t JOIN memories m ON m.n = t.n "
        f"WHERE {where} ORDER BY t.score, t.n LIMIT ?"
    )


def holders_sql() -> str:
    """The row numbers matching a MATCH text (the one parameter), joined by commas: one value,
    so a long posting list crosses into Python as one string (~0.4 us a row; ~0.9 as
    rows)."""
    return f"SELECT group_concat(rowid) FROM {TABLE} WHERE {TABLE} MATCH ?"


def count_sql() -> str:
    """How many rows match a MATCH text (the first parameter), counted up to the second."""
    return f"SELECT count(*) FROM (SELECT 1 FROM {TABLE} WHERE {TABLE} MATCH ? LIMIT ?)"
