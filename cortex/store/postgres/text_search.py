"""PostgreSQL text search over memories: the weighted document, keyword queries, ranking.

Mirrors the SQLite adapter's FTS5 setup: content, summary and tags are weighted 1.0, 0.6 and
0.4 (labels A, B, C of one `tsvector`), the English stemmer stands in for porter, and text is
split on every non-alphanumeric character first, as FTS5's unicode61 tokenizer does (so
`content:x` or `src/a.py` are words, not URLs or paths). The rank is `ts_rank`, not BM25:
larger is better, and it orders candidates the same way for the few terms recall asks about.
Tags also carry a trigram index (pg_trgm), which serves the substring filter of tag lookups
over code identifiers.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cortex.core.recall.query import TextQuery

CONFIG = "english"
WEIGHTS = (1.0, 0.6, 0.4)  # content, summary, tags (labels A, B, C)
# ts_rank takes the weights of labels D, C, B, A in that order.
RANK = f"'{{0.0, {WEIGHTS[2]}, {WEIGHTS[1]}, {WEIGHTS[0]}}}'"


# ASCII punctuation and white space separate words; other characters are left to the parser,
# whatever the database's locale says about them.
SEPARATORS = "[!-/:-@[-`{-~[:space:]]+"


def _words(column: str) -> str:
    return f"regexp_replace({column}, '{SEPARATORS}', ' ', 'g')"


DOCUMENT = (
    f"setweight(to_tsvector('{CONFIG}', {_words('content')}), 'A') || "
    f"setweight(to_tsvector('{CONFIG}', {_words('summary')}), 'B') || "
    f"setweight(to_tsvector('{CONFIG}', {_words('tags')}), 'C')"
)
DOCUMENT_COLUMN = f"document tsvector GENERATED ALWAYS AS ({DOCUMENT}) STORED"
INDEXES = (
    "CREATE INDEX memories_document ON memories USING gin (document)",
    "CREATE INDEX memories_tags_trgm ON memories USING gin (tags gin_trgm_ops)",
)
_WORD = re.compile(r"[^\x00-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f\s]+")


def _literal(word: str) -> str:
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


def query_text(query: TextQuery) -> str | None:
    """The `to_tsquery` text of a keyword query: each term a phrase of its words (the last one a
    prefix when asked), joined by | or &; None when no term has a word."""
    parts = []
    for term in query.terms:
        words = [_literal(w.lower()) for w in _WORD.findall(term)]
        if not words:
            continue
        if query.prefix:
            words[-1] += ":*"
        parts.append("(" + " <-> ".join(words) + ")")
    return (" & " if query.match_all else " | ").join(parts) or None


def search_sql(where: str) -> str:
    """Memory ids and their rank, best first. Parameters: the query text, those of `where`,
    then the row limit."""
    return (
        f"SELECT m.id, ts_rank({RANK}, m.document, q) AS rank "
        f"FROM memories m, to_tsquery('{CONFIG}', %s) q "
        f"WHERE m.document @@ q AND {where} ORDER BY rank DESC, m.n LIMIT %s"
    )


def like_pattern(fragment: str) -> str:
    """A LIKE pattern finding `fragment` anywhere (its wildcards escaped)."""
    escaped = fragment.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
