"""User text -> keyword queries (`TextQuery`), query intent and its fusion weights. Pure."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection
from dataclasses import asdict, dataclass
from enum import StrEnum

# Small on purpose: BM25 already discounts common words; this only stops "what did we do
# about it" from matching every memory through "what" and "we". Includes the fragments that
# ASCII apostrophes split contractions into ("don't" -> "don", "t").
_STOPWORD_TEXT = """
    a about above after again all am an and any are as at be been being but by can could d did
    do does doing don done during each few for from had has have having he her here hers him his
    how i if in into is it its itself just ll m me more most my no nor not of off on once only or
    other our ours out over own re s same she should so some such t than that the their theirs
    them then there these they this those through to too under until up very ve was we were what
    which while who whom why will with would you your yours
    can't didn't doesn't don't i'm i've isn't it's let's that's there's wasn't what's won't
"""
ENGLISH_STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())

MAX_MATCH_TERMS = 64  # a pasted paragraph must not become a 500-way OR

# Letters that SQLite's unicode61 tables (older than Python's) still classify as marks, so
# they separate tokens there; a term made only of them would be an empty phrase.
_SQLITE_NON_LETTERS = frozenset([*range(0x19B0, 0x19C1), 0x19C8, 0x19C9, 0x1CF2, 0x1CF3])


def _is_separator(ch: str) -> bool:
    # Split only where unicode61 surely splits too (ASCII punctuation, spaces, controls), so a
    # quoted term is always a run of whole unicode61 tokens and matches the text it came from.
    if ch.isascii():
        return not ch.isalnum()
    cat = unicodedata.category(ch)
    return cat[0] == "Z" or cat in ("Cc", "Cs")


def _is_anchor(ch: str) -> bool:
    # A character unicode61 always keeps as (part of) a token, so the phrase is never empty.
    cat = unicodedata.category(ch)
    return (cat[0] in "LN" or cat == "Co") and ord(ch) not in _SQLITE_NON_LETTERS


# Exactly the characters `_is_separator` accepts (a test checks every code point): ASCII
# non-alphanumerics, C1 controls, the Z categories of Unicode 14 and surrogates. One regex split
# instead of a Python test per character: the write gate parses whole sessions (~10 kB).
_SEPARATOR_RUN = re.compile(
    "[\x00-\x2f\x3a-\x40\x5b-\x60\x7b-\x9f\xa0\u1680\u2000-\u200a\u2028\u2029"
    "\u202f\u205f\u3000\ud800-\udfff]+"
)


def parse_terms(text: str) -> list[str]:
    """Split text into distinct searchable terms (first spelling kept, case-insensitive)."""
    terms: list[str] = []
    seen: set[str] = set()
    for term in _SEPARATOR_RUN.split(text):
        key = term.casefold()
        if term and key not in seen and any(_is_anchor(c) for c in term):
            seen.add(key)
            terms.append(term)
    return terms


def _stop_key(term: str) -> str:
    return term.casefold().replace("\u2019", "'")


def _searchable_terms(text: str, stopwords: Collection[str], max_terms: int) -> list[str]:
    terms = parse_terms(text)
    content = [t for t in terms if _stop_key(t) not in stopwords]
    return (content or terms)[: max(max_terms, 0)]


@dataclass(frozen=True, slots=True)
class TextQuery:
    """A keyword search as data; each store renders it in its own query syntax.

    Every term is matched as a phrase: the run of words it names, in order, as the store's
    index tokenises them (stemmed, without diacritics). With `match_all` every term must match
    (AND); otherwise any may, and memories sharing more terms rank higher (OR). With `prefix`
    each term's last word also matches the longer words it starts ("migrat" finds "migration").
    """

    terms: tuple[str, ...]
    match_all: bool = False
    prefix: bool = False


def text_query(
    text: str,
    stopwords: Collection[str] = ENGLISH_STOPWORDS,
    max_terms: int = MAX_MATCH_TERMS,
    *,
    match_all: bool = False,
) -> TextQuery | None:
    """Any text -> a query for its distinct searchable terms; None if nothing to search.

    Stopwords are dropped unless only stopwords remain; at most `max_terms` terms are kept.
    """
    terms = _searchable_terms(text, stopwords, max_terms)
    return TextQuery(tuple(terms), match_all=match_all) if terms else None


class QueryIntent(StrEnum):
    TEMPORAL = "temporal"
    CAUSAL = "causal"
    ENTITY = "entity"
    KNOWLEDGE_UPDATE = "knowledge_update"
    MULTI_HOP = "multi_hop"
    PLAIN = "plain"


def _words_re(*patterns: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(patterns) + r")\b")


_UNIT = r"(?:seconds?|minutes?|hours?|days?|nights?|weeks?|months?|years?|time)"
_MONTH = (
    r"(?:january|february|april|june|july|august|september|october|november|december"
    r"|(?:in|during|since|until|by|early|late|mid|last|this|next) (?:may|march)"
    r"|(?:may|march) \d{1,4})"
)
_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)days?"

# The question word decides first: "why ... still ..." asks for a reason, "when ... switched"
# for a date. Cue words anywhere in the query come next, in the order of `classify_intent`.
_CAUSAL_HEAD = _words_re(
    r"why|how come|for what reason|what (?:made|caused|led|prompted|motivated|drove)"
    r"|what (?:was|is|were|are) the (?:reasons?|rationale|motivation|cause|point)"
)
_AUX = r"(?:did|does|do|was|were|is|are|will|would|has|have|had|can|could|should|am)"
# "when did ..." asks for a time; "when Dave was a child, what ..." does not (a cue at most).
_TEMPORAL_HEAD = _words_re(
    rf"when(?:'s| {_AUX})|when$|since when|how long|how (?:many|much) {_UNIT}"
    rf"|how (?:old|recently|often)|(?:what|which) date"
    rf"|(?:what|which) (?:day|time|year|month|week|weekend)(?: of the (?:week|month|year))? {_AUX}"
)
_UPDATE_CUE = _words_re(
    r"current(?:ly)?|latest|most recent(?:ly)?|still|any ?more|no longer|nowadays|these days"
    r"|now|changed|switch(?:ed|ing)?|updated|replaced|migrated|moved (?:to|from|away)|instead"
)
_CAUSAL_CUE = _words_re(
    r"because|reasons?|reasoning|rationale|caus(?:e[sd]?|ing)|due to|le(?:d|ads?) to"
    r"|motivat\w*|justif\w*|purpose|so that"
)
_TEMPORAL_CUE = _words_re(
    r"when|before|after|ago|yesterday|today|tonight|tomorrow|earlier|later|recently|lately|first"
    r"|until|during|in (?:what|which) order|chronolog\w*|timeline|(?:19|20)\d\d"
    rf"|(?:last|this|next|past|previous) (?:{_UNIT}|morning|weekend|session|sprint)",
    _MONTH,
    _WEEKDAY,
)
_MULTI_CUE = _words_re(
    r"both|compar(?:e[sd]?|ing|ison)|(?:differences?|relationship|connection) between"
    r"|in common|in total|altogether|combined|each of|how many|which (?:one|of)|as well as"
    r"|and (?:also|then)"
    # "what events has Caroline attended": things accumulated across conversations
    r"|(?:what|which) (?:[\w+'-]+ ){0,3}?[\w-]+s (?:has|have)"
)
_WH = re.compile(r"\b(?:what|where|who|which|how|when|why)\b")
_CAPITALISED = re.compile(r"\b[A-Z][a-z]+\b")
_ENTITY_PATTERNS = (
    re.compile(r"\b[A-Z][A-Z0-9]+\b"),  # acronyms: API, WAL, FTS5
    re.compile(r"\b\w+_\w+\b|\b[a-z]+[A-Z]\w*"),  # snake_case, camelCase
    re.compile(r"\w[/\\]\w|(?:^|\s)(?:\.{1,2}|~)/|\b\w{2,}\.[a-z]{1,5}\b"),  # paths, file.ext
    re.compile(r"`[^`]+`|\"[^\"]+\"|(?<!\w)'[^']+'(?!\w)|--\w|#\d+"),  # quoted, flags, #123
    re.compile(r"\bwho(?:'s| is| was| are)?\b", re.IGNORECASE),
)
_PRONOUN_I = re.compile(r"\bI(?:'\w+)?\b")


def _entity_count(query: str) -> int:
    text = _PRONOUN_I.sub(" ", query)
    # A capital opening a sentence says nothing; one mid-sentence usually names something.
    proper = sum(
        1 for m in _CAPITALISED.finditer(text) if text[: m.start()].rstrip()[-1:] not in ("", ".", "!", "?")
    )
    return proper + sum(len(p.findall(text)) for p in _ENTITY_PATTERNS)


def classify_intent(query: str) -> QueryIntent:
    """Guess what kind of question this is from cheap lexical cues (SPEC §5)."""
    low = " ".join(query.casefold().replace("\u2019", "'").split())
    if _CAUSAL_HEAD.search(low):
        return QueryIntent.CAUSAL
    if _TEMPORAL_HEAD.search(low):
        return QueryIntent.TEMPORAL
    if _UPDATE_CUE.search(low):
        return QueryIntent.KNOWLEDGE_UPDATE
    if _CAUSAL_CUE.search(low):
        return QueryIntent.CAUSAL
    if _TEMPORAL_CUE.search(low):
        return QueryIntent.TEMPORAL
    entities = _entity_count(query)
    multi_clause = len(_WH.findall(low)) >= 2 or query.count("?") >= 2
    multi_entity = entities >= 2 and " and " in f" {low} "
    if _MULTI_CUE.search(low) or multi_clause or multi_entity:
        return QueryIntent.MULTI_HOP
    if entities:
        return QueryIntent.ENTITY
    return QueryIntent.PLAIN


@dataclass(frozen=True, slots=True)
class FusionWeights:
    """How much each retrieval list and signal counts in rank fusion (all >= 0)."""

    bm25: float
    vector: float
    recency: float
    priority: float
    centrality: float

    def __post_init__(self) -> None:
        if any(w < 0 for w in asdict(self).values()):
            raise ValueError(f"fusion weights must be >= 0: {self}")

    def list_weights(self) -> dict[str, float]:
        """Weights of the ranked candidate lists, keyed as `fuse_rrf` expects."""
        return {"bm25": self.bm25, "vector": self.vector}

    def signal_weights(self) -> dict[str, float]:
        """Weights of the per-id [0,1] signals, keyed as `fuse_rrf` expects."""
        return {"recency": self.recency, "priority": self.priority, "centrality": self.centrality}


# One table, to be tuned by the retrieval benchmark. A signal weight of 1 counts as much as a
# first place in one list (see `fuse_rrf`), so signal weights are fractions of a top vote.
# "recency" is closeness in time: `score_recency` to now, or `score_time_window` when the
# query names a period (`parse_time_window`), as dated questions ("on 16 June") need.
_WEIGHT_TABLE: dict[QueryIntent, tuple[float, float, float, float, float]] = {
    #                             bm25 vector recency priority centrality
    QueryIntent.PLAIN: (1.0, 1.0, 0.10, 0.10, 0.05),
    QueryIntent.ENTITY: (1.5, 0.7, 0.05, 0.10, 0.10),
    QueryIntent.TEMPORAL: (1.0, 1.0, 0.40, 0.05, 0.00),
    QueryIntent.KNOWLEDGE_UPDATE: (1.0, 1.0, 0.60, 0.10, 0.00),
    QueryIntent.CAUSAL: (0.8, 1.2, 0.05, 0.20, 0.15),
    QueryIntent.MULTI_HOP: (1.0, 1.0, 0.00, 0.05, 0.30),
}
INTENT_WEIGHTS: dict[QueryIntent, FusionWeights] = {
    intent: FusionWeights(*row) for intent, row in _WEIGHT_TABLE.items()
}


def intent_weights(intent: QueryIntent) -> FusionWeights:
    """The fusion weights for a query intent."""
    return INTENT_WEIGHTS[intent]


def content_words(text: str, stopwords: Collection[str] = ENGLISH_STOPWORDS) -> list[str]:
    """The query's lowercased searchable words without stopwords (all words if only stopwords)."""
    return [t.casefold() for t in _searchable_terms(text, stopwords, MAX_MATCH_TERMS)]
