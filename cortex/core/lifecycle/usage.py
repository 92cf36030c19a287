"""Use feedback: which briefed or recalled memories a session used, ignored or contradicted. Pure.

A memory counts as used when the model quoted its id, or when the assistant's own text and
tool calls after it was briefed or recalled share enough of its distinctive terms (the rare
words and identifiers of its text, never common words). A user sentence that carries a
correction cue ("no", "wrong", "no longer", "instead" ...) over the same terms contradicts it.

Effects, bounded and recoverable: a used memory gains salience (its access count); a briefed
memory a whole session ignored loses briefing priority one step per ignored session after a
grace session, at most `MAX_DROP` steps below the priority it had, never below 0, and gets it
back the first time it is used again. Nothing is archived or deleted for being ignored.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from cortex.core.model import Memory

ID_TOKEN = re.compile(r"(?<![0-9a-f])[0-9a-f]{10}(?![0-9a-f])")  # a memory id as cortex shows it
_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/]*[A-Za-z0-9_]|[A-Za-z0-9_]")
_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"[a-z][A-Z]")
_SENTENCE = re.compile(r"(?<=[.!?\n])\s+")
CORRECTION = re.compile(
    r"\b(no|nope|wrong|incorrect|not (?:true|right|correct|anymore|any more)|no longer|outdated|"
    r"out of date|obsolete|instead|don'?t|do not|doesn'?t|isn'?t|aren'?t|never|stop using|we dropped|"
    r"we removed|switched (?:to|from)|replaced)\b",
    re.IGNORECASE,
)
MIN_TERM_CHARS = 4  # shorter plain words say too little; identifiers count from 3
MIN_HITS = 3.0  # weighted hits a use needs (an identifier weighs 2, a word 1)
MIN_SHARE = 0.3  # and this share of the memory's distinctive terms
MAX_TERMS = 24  # distinctive terms kept per memory (the rarest)
RARE_SHARE = 0.02  # a word in more than this share of a store's memories is common there
PEER_SHARE = 0.2  # ... or in more than this share of the memories briefed beside it
MIN_TERMS = 3
GRACE_SESSIONS = 1  # ignored sessions that cost nothing (a session may simply be about else)
MAX_DROP = 4  # priority steps an ignored memory can lose in all (priority runs 0..10)
MIN_TURNS = 3  # assistant messages a session needs before its silence says anything
# Words too common in development talk to show that a note was used.
COMMON_WORDS = frozenset(
    (
        "able", "about", "above", "across", "actually", "added", "adding", "after", "again", "against",
        "allow", "already", "also", "alternatively", "always", "and", "another", "anything", "anyway",
        "approach", "are", "area", "around", "available", "back", "based", "basic", "because", "been",
        "before", "behavior", "behaviour", "being", "below", "better", "between", "both", "bottom",
        "break", "bring", "build", "built", "but", "call", "called", "calls", "case", "cause", "caused",
        "change", "changed", "changes", "check", "checked", "clean", "clear", "close", "code", "come",
        "comes", "command", "commands", "complete", "completed", "content", "correct", "correctly",
        "could", "create", "created", "current", "currently", "default", "details", "different",
        "directly", "display", "does", "doesn", "doing", "done", "down", "each", "easy", "either", "else",
        "enough", "ensure", "entire", "error", "errors", "even", "every", "exactly", "example", "exist",
        "exists", "expected", "explain", "fail", "failed", "fails", "file", "files", "fine", "first",
        "fixed", "fixes", "for", "found", "from", "full", "fully", "function", "functions", "general",
        "getting", "give", "given", "going", "good", "great", "handle", "happen", "happens", "have",
        "help", "helps", "here", "however", "idea", "important", "include", "included", "including",
        "information", "initial", "instead", "into", "issue", "issues", "item", "items", "just", "keep",
        "keeps", "kind", "know", "large", "last", "later", "least", "less", "level", "light", "like",
        "likely", "line", "lines", "list", "little", "load", "loaded", "long", "look", "looking", "looks",
        "made", "main", "make", "makes", "many", "mean", "means", "method", "might", "mode", "more",
        "most", "move", "much", "must", "name", "names", "need", "needed", "needs", "never", "next", "not",
        "note", "notes", "nothing", "now", "number", "okay", "once", "only", "open", "option", "options",
        "order", "other", "output", "over", "page", "part", "pass", "passed", "perfect", "place", "please",
        "point", "possible", "problem", "problems", "project", "proper", "properly", "quick", "quickly",
        "ready", "real", "really", "reason", "remove", "removed", "request", "required", "result",
        "results", "return", "returns", "right", "rule", "running", "same", "says", "second", "see",
        "seem", "seems", "seen", "sense", "server", "service", "set", "setup", "several", "short",
        "should", "show", "shows", "side", "simple", "since", "single", "size", "small", "solution",
        "some", "someone", "something", "sort", "start", "started", "state", "step", "steps", "still",
        "stop", "such", "support", "sure", "take", "test", "tested", "tests", "text", "than", "that",
        "the", "their", "them", "then", "there", "these", "they", "thing", "things", "think", "this",
        "those", "though", "three", "through", "time", "today", "together", "tried", "trying", "turn",
        "type", "types", "under", "understand", "unless", "until", "update", "updated", "use", "used",
        "uses", "using", "usually", "value", "values", "version", "very", "view", "want", "was", "ways",
        "well", "were", "what", "when", "where", "whether", "which", "while", "will", "with", "without",
        "work", "working", "works", "would", "write", "written", "yeah", "your", "yours", "yourself",
    )
)  # fmt: skip


def _is_identifier(token: str) -> bool:
    return bool(re.search(r"[_./\-]|\d", token)) or bool(_CAMEL.search(token))


def terms_of(text: str) -> frozenset[str]:
    """Lower-cased words and whole identifiers of a text (`app/config.py` gives the path and
    its parts `app`, `config`, `py`)."""
    out: set[str] = set()
    for token in _TOKEN.findall(text):
        low = token.lower().strip(".-/")
        if _is_identifier(token) and len(low) >= 3:
            out.add(low)
        out.update(_WORD.findall(low))
    return frozenset(out)


def candidate_terms(content: str) -> frozenset[str]:
    """The terms of a memory that could be distinctive: identifiers, and words that are neither
    short nor common."""
    out = set()
    for term in terms_of(content):
        ident = _is_identifier(term) and len(term) >= 3 and not term.isdigit()
        if ident or (len(term) >= MIN_TERM_CHARS and term.isalpha() and term not in COMMON_WORDS):
            out.add(term)
    return frozenset(out)


def distinctive_terms(
    content: str,
    doc_freq: Mapping[str, int],
    total: int,
    peers: Mapping[str, int] | None = None,
    peer_total: int = 0,
) -> frozenset[str]:
    """A memory's rare terms, the rarest `MAX_TERMS` of its candidate terms: held by at most
    `RARE_SHARE` of the `total` memories of its store (`doc_freq`; 3 may always share one) and
    by at most `PEER_SHARE` of the `peer_total` memories briefed or recalled beside it (`peers`,
    so that a commit footer every progress note repeats says nothing). A memory with fewer
    than `MIN_TERMS` such terms keeps its rarest candidates that pass the peer test."""
    peers = peers or {}
    peer_limit = max(2, int(peer_total * PEER_SHARE))
    limit = max(3, int(total * RARE_SHARE))
    mine = [t for t in candidate_terms(content) if peers.get(t, 1) <= peer_limit]
    mine.sort(key=lambda t: (doc_freq.get(t, 1), t))
    rare = [t for t in mine if doc_freq.get(t, 1) <= limit]
    return frozenset((rare if len(rare) >= MIN_TERMS else mine[:MIN_TERMS])[:MAX_TERMS])


def _weight(term: str) -> float:
    return 2.0 if _is_identifier(term) else 1.0


def overlap(distinct: Collection[str], said: Collection[str]) -> tuple[float, float]:
    """(weighted hits, share of the distinctive terms hit) of `distinct` in `said`."""
    hit = [t for t in distinct if t in said]
    if not distinct:
        return 0.0, 0.0
    return sum(_weight(t) for t in hit), len(hit) / len(distinct)


def mentions(distinct: Collection[str], said: Collection[str]) -> bool:
    """True when `said` holds enough of a memory's distinctive terms to count as using it."""
    hits, share = overlap(distinct, said)
    return hits >= MIN_HITS and share >= MIN_SHARE


@dataclass(frozen=True, slots=True)
class TurnText:
    """What one stretch of a session said: the model's words and calls, and the user's."""

    assistant: str  # the assistant's text and its tool calls' inputs (never tool results)
    user: Sequence[str]  # what the user wrote, one entry per message


def judge_used(
    distinct: Mapping[str, frozenset[str]],
    text: TurnText,
    earlier: Mapping[str, Collection[str]] | None = None,
) -> tuple[set[str], dict[str, set[str]]]:
    """(ids among `distinct`'s keys that the session used so far, each memory's distinctive
    terms said so far): its id quoted, or enough of its terms said in this text and `earlier`
    turns together."""
    quoted = set(ID_TOKEN.findall(text.assistant.lower()))
    said = terms_of(text.assistant)
    earlier = earlier or {}
    hits = {mid: set(terms & said) | set(earlier.get(mid, ())) for mid, terms in distinct.items()}
    used = {mid for mid, terms in distinct.items() if mid in quoted or mentions(terms, hits[mid])}
    return used, {mid: h for mid, h in hits.items() if h}


def judge_contradicted(distinct: Mapping[str, frozenset[str]], text: TurnText) -> set[str]:
    """Ids the user contradicted: a sentence with a correction cue that names the memory's id
    or enough of its distinctive terms."""
    out: set[str] = set()
    for message in text.user:
        for sentence in _SENTENCE.split(message):
            if not CORRECTION.search(sentence):
                continue
            said, quoted = terms_of(sentence), set(ID_TOKEN.findall(sentence.lower()))
            out.update(m for m, terms in distinct.items() if m in quoted or mentions(terms, said))
    return out


# -- the effects over sessions ------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Demotion:
    """An ignored memory's standing: the priority it had, sessions ignored in a row, and the
    priority cortex set (a different one means a person changed it since)."""

    base: int
    ignored: int
    current: int


@dataclass(frozen=True, slots=True)
class SessionVerdict:
    """A finished session's judgement of what it was briefed and recalled."""

    briefed: frozenset[str]
    recalled: frozenset[str]
    used: frozenset[str]
    contradicted: frozenset[str]
    turns: int  # assistant messages seen

    @property
    def judged(self) -> bool:
        """Whether the session was long enough for silence to mean something."""
        return self.turns >= MIN_TURNS

    @property
    def unused(self) -> frozenset[str]:
        """Briefed memories it neither used nor contradicted (none when it was too short)."""
        return self.briefed - self.used - self.contradicted if self.judged else frozenset()


@dataclass(slots=True)
class UsagePlan:
    """Priority changes to apply and the demotion ledger to keep."""

    priorities: dict[str, int] = field(default_factory=dict)  # id -> new priority
    ledger: dict[str, Demotion] = field(default_factory=dict)


def demoted_priority(base: int, ignored: int) -> int:
    """The priority after `ignored` sessions in a row: a step per session after the grace,
    at most `MAX_DROP` in all, never below 0."""
    drop = min(MAX_DROP, max(0, ignored - GRACE_SESSIONS))
    return max(0, base - drop)


def plan_used(used: Iterable[Memory], ledger: Mapping[str, Demotion]) -> UsagePlan:
    """A used memory gets back the priority it had before it was ignored."""
    plan = UsagePlan(ledger=dict(ledger))
    for m in used:
        held = plan.ledger.pop(m.id, None)
        if held is not None and m.priority == held.current and m.priority != held.base:
            plan.priorities[m.id] = held.base
    return plan


def plan_ignored(ignored: Iterable[Memory], ledger: Mapping[str, Demotion]) -> UsagePlan:
    """Each ignored briefed memory (pinned ones are the user's call, never demoted) counts one
    more ignored session and, past the grace, loses a step of priority."""
    plan = UsagePlan(ledger=dict(ledger))
    for m in ignored:
        if m.pinned:
            continue
        held = plan.ledger.get(m.id)
        if held is None or held.current != m.priority:  # new, or a person set the priority since
            held = Demotion(m.priority, 0, m.priority)
        count = held.ignored + 1
        new = demoted_priority(held.base, count)
        plan.ledger[m.id] = replace(held, ignored=count, current=new)
        if new != m.priority:
            plan.priorities[m.id] = new
    return plan


def ledger_to_dict(ledger: Mapping[str, Demotion]) -> dict[str, list[int]]:
    """The ledger as a compact JSON-able mapping (id -> [base, ignored, current])."""
    return {mid: [d.base, d.ignored, d.current] for mid, d in sorted(ledger.items())}


def ledger_from_dict(data: object) -> dict[str, Demotion]:
    """The ledger back from `ledger_to_dict`'s form; anything malformed is left out."""
    out: dict[str, Demotion] = {}
    if not isinstance(data, dict):
        return out
    for mid, row in data.items():
        if isinstance(row, list) and len(row) == 3 and all(isinstance(x, int) for x in row):
            out[str(mid)] = Demotion(*row)
    return out


# -- the summary `cortex stats --usage` shows -----------------------------------------------------
@dataclass(slots=True)
class UsageSummary:
    """Verdicts summed over sessions, and per memory how often it was used or ignored."""

    sessions: int = 0
    judged: int = 0  # long enough for silence to count
    briefed: int = 0  # briefed memories, summed over sessions
    recalled: int = 0
    used: int = 0  # briefed or recalled memories used, summed over sessions
    briefed_used: int = 0
    unused: int = 0
    contradicted: int = 0
    by_memory: dict[str, list[int]] = field(default_factory=dict)  # id -> [used, unused, contradicted]
    demoted: dict[str, Demotion] = field(default_factory=dict)

    @property
    def use_rate(self) -> float:
        """Share of briefed memories the sessions used."""
        return round(self.briefed_used / self.briefed, 4) if self.briefed else 0.0


def summarise(verdicts: Iterable[Mapping[str, object]], demoted: Mapping[str, Demotion]) -> UsageSummary:
    """Sum verdict records (`usage` journal payloads)."""
    out = UsageSummary(demoted=dict(demoted))
    for v in verdicts:
        ids = {k: _ids(v.get(k)) for k in _VERDICT_LISTS}
        out.sessions += 1
        out.judged += bool(v.get("judged"))
        out.briefed += len(ids["briefed"])
        out.recalled += len(ids["recalled"])
        out.used += len(ids["used"])
        out.briefed_used += len(set(ids["used"]) & set(ids["briefed"]))
        out.unused += len(ids["unused"])
        out.contradicted += len(ids["contradicted"])
        for col, kind in enumerate(("used", "unused", "contradicted")):
            for mid in ids[kind]:
                out.by_memory.setdefault(mid, [0, 0, 0])[col] += 1
    return out


_VERDICT_LISTS = ("briefed", "recalled", "used", "unused", "contradicted")


def _ids(value: object) -> list[str]:
    return [i for i in value if isinstance(i, str)] if isinstance(value, list) else []
