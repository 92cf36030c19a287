"""When two differently worded notes state the same fact: the semantic merge decision. Pure.

An embedding says two notes mean nearly the same thing, and nothing finer: with
all-MiniLM-L6-v2, "retries webhooks for 72 hours" and "... for 24 hours" are at cosine 0.996,
"we never retry" and "we always retry" at 0.97. So a pair above `PARAPHRASE_COSINE` merges only
when the distinguishing details agree, compared the way a paraphrase may reword them:

- quantities: the same numbers (digits or number words), a duration compared in seconds, so
  "72 hours" and "three days" are the same duration and "48 hours" is not; more than one
  quantity must come in the same order; weekdays, months and ordinals must be the same words;
- negation: the same words negated ("do not hard-code" and "don't hard-code" agree, "logs are
  shipped" and "logs are not shipped" do not; "instead of" and "rather than" negate too), and
  no polarity word ("always", "disabled", "fails", "stops") on one side only;
- identifiers, named technologies and proper nouns: every one on either side is on the other;
- opposites: no pair of opposite words split between the sides ("reads" / "writes",
  "before" / "after"), and no qualifier ("staging", "async", "maximum") on one side only;
- the same words in another order ("FastAPI over Flask", "finished X; next: Y") are another fact;
- a replaced word or two in otherwise equal texts, in the same order ("importer" / "exporter")
  is a different thing, as the lexical rule says: a sentence embedding cannot tell it from a
  synonym.

Thresholds are calibrated in `benchmarks/dedup.py` on `tests/support/paraphrase_pairs.py`.
"""

from __future__ import annotations

import functools
import re

from cortex.core.text import jaccard, word_set, words
from cortex.core.write.distinct import (
    FILLER_WORDS,
    NUMBER_WORDS,
    OPPOSITE_WORDS,
    TECHNOLOGIES,
    lost_by_merge,
    same_order,
)

PARAPHRASE_COSINE = 0.90  # at or above, with no distinguishing difference: the same fact
SAME_WORDS = 0.8  # word Jaccard at which word order is all that can tell two texts apart

NEGATORS = frozenset(
    {
        "not", "no", "never", "don", "doesn", "didn", "won", "isn", "aren", "wasn", "shouldn",
        "cannot", "without", "nor", "neither", "none", "nothing", "nobody", "nowhere", "mustn",
        "couldn", "wouldn", "hasn", "haven", "hadn", "weren",
    }
)  # fmt: skip
# Skipped when looking for the word a negator negates ("does not ever retry" -> "retry").
_NEGATION_SKIP = FILLER_WORDS | frozenset(
    {"t", "ever", "through", "using", "even", "being", "any", "longer", "more", "yet", "only", "get"}
)
# On one side only, these reverse or restrict what the other side says.
POLAR_WORDS = (
    "always", "avoid", "stop", "disable", "enable", "fail", "pass", "broken", "works", "reject",
    "remove", "deprecated", "forbidden", "except", "unless", "optional", "required",
)  # fmt: skip
OPPOSITE_PAIRS = (
    ("before", "after"), ("read", "write"), ("increase", "decrease"), ("min", "max"),
    ("minimum", "maximum"), ("first", "last"), ("upper", "lower"), ("open", "close"),
    ("allow", "deny"), ("add", "remove"), ("start", "stop"), ("sync", "async"),
    ("public", "private"), ("internal", "external"), ("input", "output"), ("client", "server"),
    ("true", "false"), ("on", "off"), ("more", "less"), ("more", "fewer"), ("higher", "lower"),
    ("above", "below"), ("earlier", "later"), ("faster", "slower"), ("local", "remote"),
    ("staging", "production"), ("staging", "prod"), ("primary", "replica"),
    ("inbound", "outbound"), ("ascending", "descending"), ("lazy", "eager"),
    ("mutable", "immutable"), ("encrypted", "plaintext"), ("success", "error"),
    ("accept", "reject"), ("include", "exclude"), ("left", "right"), ("top", "bottom"),
    ("import", "export"), ("importer", "exporter"), ("upload", "download"), ("push", "pull"),
    ("sign", "verify"), ("encode", "decode"), ("valid", "invalid"),
    # Where work stands: a task list whose items moved from open to done is another state.
    ("open", "done"), ("open", "completed"), ("open", "merged"), ("pending", "done"),
    ("pending", "completed"), ("todo", "done"), ("incomplete", "complete"),
    ("unfinished", "finished"),
)  # fmt: skip
# Qualifiers that name one of several settings: on one side only, the other side is broader.
QUALIFIER_WORDS = (
    "staging", "production", "prod", "dev", "local", "remote", "sync", "async", "primary",
    "replica", "minimum", "maximum", "min", "max", "public", "private", "internal", "external",
)  # fmt: skip
# Technology names that are also everyday English words ("requests go through the gateway").
_AMBIGUOUS_TECH = frozenset({"go", "make", "rest", "express", "spring", "fish", "black", "bun", "fly", "c"})
# Two paraphrases name the same of these (on one side only: "technology").
NAMED_TECHNOLOGIES = TECHNOLOGIES - _AMBIGUOUS_TECH

_CARDINALS = {
    "zero": 0, "one": 1, "single": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "thousand": 1000,
    "dozen": 12, "million": 1_000_000,
}  # fmt: skip
_UNIT_SECONDS = {
    "ms": 0.001, "millisecond": 0.001, "milliseconds": 0.001, "s": 1, "sec": 1, "secs": 1,
    "second": 1, "seconds": 1, "min": 60, "mins": 60, "minute": 60, "minutes": 60, "h": 3600,
    "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600, "day": 86400, "days": 86400,
    "week": 604800, "weeks": 604800,
}  # fmt: skip
_QUANTITY = re.compile(
    r"(?<![\w.])(\d+(?:[.,]\d+)*|" + "|".join(sorted(_CARDINALS, key=len, reverse=True)) + r")"
    r"(?:[\s-]*(" + "|".join(sorted(_UNIT_SECONDS, key=len, reverse=True)) + r")\b)?",
    re.IGNORECASE,
)
# Number-like words compared as words: weekdays, months, ordinals, relative days.
_LOOSE_NUMBER_WORDS = {"once", "half", "twice", "double", "triple"}
_CALENDAR = NUMBER_WORDS - set(_CARDINALS) - set(_UNIT_SECONDS) - _LOOSE_NUMBER_WORDS


@functools.lru_cache(maxsize=32768)
def stem(word: str) -> str:
    """A crude suffix strip, enough to match "retries" / "retry", "committed" / "commit"."""
    w = word.casefold()
    for suffix in ("ing", "ies", "ied", "ed", "es", "s", "e", "y"):
        if len(w) > len(suffix) + 2 and w.endswith(suffix) and not w.endswith(("ss", "us")):
            w = w[: -len(suffix)]
            break
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiou":
        w = w[:-1]
    return w


POLAR_STEMS = frozenset(stem(w) for w in POLAR_WORDS)
QUALIFIER_STEMS = frozenset(stem(w) for w in QUALIFIER_WORDS)
OPPOSITE_STEMS = tuple((stem(x), stem(y)) for x, y in OPPOSITE_PAIRS)


@functools.lru_cache(maxsize=4096)
def _quantities(text: str) -> tuple[float, ...]:
    """Every quantity in `text`, in order, a duration in seconds."""
    out = []
    for m in _QUANTITY.finditer(text):
        raw, unit = m.group(1).casefold(), (m.group(2) or "").casefold()
        value = float(_CARDINALS[raw]) if raw in _CARDINALS else _number(raw)
        if value is None:
            continue
        if unit and not (unit in ("s", "h") and raw in _CARDINALS):
            value *= _UNIT_SECONDS[unit]
        out.append(round(value, 6))
    return tuple(out)


def _number(raw: str) -> float | None:
    try:
        return float(raw.replace(",", ""))
    except ValueError:
        return None  # a dotted version such as 1.2.3: compared as an identifier


@functools.lru_cache(maxsize=4096)
def _negated(text: str) -> frozenset[str]:
    """The stems of the words the negators in `text` negate."""
    ws = words(text)
    out = set()
    for i, w in enumerate(ws):
        after = ws[i + 1] if i + 1 < len(ws) else ""
        if w in NEGATORS or (w, after) in (("can", "t"), ("instead", "of"), ("rather", "than")):
            head = next((x for x in ws[i + 1 :] if x not in _NEGATION_SKIP and x not in NEGATORS), "")
            out.add(stem(head))
    return frozenset(out)


@functools.lru_cache(maxsize=4096)
def _stems(text: str) -> frozenset[str]:
    return frozenset(stem(w) for w in words(text))


def paraphrase_difference(a: str, b: str) -> str | None:
    """Why two notes an embedding finds alike still state different facts (None: nothing
    distinguishing differs, either may be merged into the other)."""
    qa, qb = _quantities(a), _quantities(b)
    if qa != qb and (sorted(qa) != sorted(qb) or len(set(qa)) > 1):
        return "number"
    wa, wb = word_set(a), word_set(b)
    if (wa ^ wb) & _CALENDAR:
        return "date"
    if _negated(a) != _negated(b):
        return "negation"
    sa, sb = _stems(a), _stems(b)
    if (sa ^ sb) & POLAR_STEMS:
        return "negation"
    if (wa ^ wb) & NAMED_TECHNOLOGIES:
        return "technology"
    only_a, only_b = sa - sb, sb - sa
    for x, y in OPPOSITE_STEMS:
        if (x in only_a and y in only_b) or (y in only_a and x in only_b):
            return "opposite"
    if (sa ^ sb) & QUALIFIER_STEMS:
        return "opposite"
    for kept, dropped in ((a, b), (b, a)):
        why = lost_by_merge(kept, dropped, lexical=False)
        if why in ("identifier", "name"):
            return why
    if jaccard(wa, wb) >= SAME_WORDS and not same_order(a, b):
        return "order"  # the same words, moved: "FastAPI over Flask" / "Flask over FastAPI"
    if _single_swap(a, b):
        return "wording"
    return None


def _single_swap(a: str, b: str) -> bool:
    """A content word or two replaced in otherwise equal texts, in the same order: the
    shape of "importer" / "exporter", never of a reworded sentence (other words, other order)."""
    ca, cb = _content_stems(a), _content_stems(b)
    only_a, only_b = set(ca) - set(cb), set(cb) - set(ca)
    for x in sorted(only_a):  # another form of the same word ("rebuilt" / "rebuild")
        y = next((y for y in sorted(only_b) if x[:4] == y[:4] and min(len(x), len(y)) >= 4), None)
        if y is not None:
            only_a.discard(x)
            only_b.discard(y)
    if not (only_a and only_b and len(only_a) + len(only_b) <= 3):
        return False
    shared = set(ca) & set(cb)
    in_a = [w for w in dict.fromkeys(ca) if w in shared]
    in_b = [w for w in dict.fromkeys(cb) if w in shared]
    return len(shared) >= 2 and in_a == in_b


@functools.lru_cache(maxsize=4096)
def _content_stems(text: str) -> tuple[str, ...]:
    """The stems of the words that carry content, in order (quantities, units, filler and
    opposite words are compared elsewhere)."""
    return tuple(
        stem(w)
        for w in words(text)
        if len(w) > 2
        and not w.isdigit()
        and w not in FILLER_WORDS
        and w not in NEGATORS
        and w not in OPPOSITE_WORDS
        and w not in _CARDINALS
        and w not in _UNIT_SECONDS
    )


def negates_differently(a: str, b: str) -> bool:
    """The two texts negate different words ("the user's locale, not the server's" and "the
    server's locale, not the user's"): a word-order difference no word set shows."""
    return _negated(a) != _negated(b)


def same_fact(a: str, b: str, cosine: float | None) -> bool:
    """An embedding's cosine says `a` and `b` mean the same, and no detail tells them apart."""
    return cosine is not None and cosine >= PARAPHRASE_COSINE and paraphrase_difference(a, b) is None
