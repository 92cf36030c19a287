"""What a session's later notes undo, applied as they are written. History keeps what they undo.

- A revert commit withdraws the note of the commit it undoes (`Revert "X"` -> "Committed ...: X")
  and the turn states that reported that work.
- A change of course ("switched the cache from SQLite to Redis") withdraws the earlier decision
  it overturns (`core/write/overturn.py` decides which); a rule of the user's that changes course
  ("from now on use pnpm instead of npm") withdraws their earlier rule too.
- A prompt answers what the previous turn left to the user (`supersession.close_open_states`);
  one that only picks an option it laid out ("B") stores that option as the user's decision;
  one that redirects it ("let's use Postgres for sessions instead") overturns what it decided;
  one that says that answer was wrong withdraws it (`supersession.withdraw_answer`); one that
  says the user merged the pull request closes the notes that said it was open.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from cortex.app import Cortex
from cortex.capture import write as writer
from cortex.capture.supersession import (
    close_open_states,
    previous_answer,
    retire,
    settle_tools,
    withdraw_answer,
)
from cortex.core.extract.commit_subjects import undone_subject
from cortex.core.extract.pipeline import Reply
from cortex.core.extract.signals import PLAN_TAG, RULE_TAG
from cortex.core.extract.speech import options_in
from cortex.core.extract.summary import FINDING_TAG, OPEN_TAG, REPORT_TAG
from cortex.core.model import Candidate, Layer, Memory, MemoryType, Source, Status
from cortex.core.recall.query import text_query
from cortex.core.write.apply import WriteOutcome
from cortex.core.write.overturn import (
    MIN_SHARED_RULE_WORDS,
    MIN_SHARED_WORDS,
    Change,
    changes_of_course,
    overturns,
    returns_to,
    reverses,
    topic_words,
)
from cortex.core.write.state import STATE_TAG
from cortex.store.port import MemoryStore

# What a change of course can overturn: a decision or a design the session's reports, plans or
# commits stated. What the user said or asked to keep is theirs to change.
_COURSE_TYPES = [MemoryType.DECISION.value, MemoryType.ARCHITECTURE.value]
_COURSE_TAGS = frozenset((REPORT_TAG, FINDING_TAG, PLAN_TAG))
_OVERTURN_LOOKUP = 50  # notes searched for the name a change of course left
# What an answer lays out for the user to choose from.
_OPTION_TYPES = [t.value for t in (MemoryType.PROGRESS, MemoryType.CONTEXT, MemoryType.DECISION)]


def supersede_undone(cx: Cortex, store: MemoryStore, written: Sequence[Memory]) -> None:
    """What the notes just written undo: the commit a revert reverts, the decisions a change of
    course overturns."""
    supersede_reverted(cx, store, written)
    supersede_overturned(cx, store, written)


def supersede_overturned(cx: Cortex, store: MemoryStore, written: Sequence[Memory]) -> None:
    """A decision just stored that changes course ("Switched the pricing cache from SQLite to
    Redis") withdraws the earlier decisions and designs it overturns; a rule of the user's that
    does withdraws their earlier rules it overturns as well (history keeps them all)."""
    for new in written:
        by_user = _users(new)
        if new.status is not Status.ACTIVE or not (by_user or new.type is MemoryType.DECISION):
            continue
        for change in changes_of_course(new.content):
            for old, shared in _course_notes(store, new, change.old, by_user):
                if overturns(change, old.content, shared):
                    retire(cx, store, old, new.id, cx.now())
        for back_to in returns_to(new.content):  # "go back to npm" undoes "from npm to Bun"
            for old, _ in _course_notes(store, new, back_to, by_user):
                if reverses(back_to, old.content):
                    retire(cx, store, old, new.id, cx.now())


def _course_notes(store: MemoryStore, new: Memory, name: str, by_user: bool) -> list[tuple[Memory, int]]:
    """The active notes naming `name`, said before `new`, that `new` may overturn, with the
    words of what it is about each must share."""
    query = text_query(name)
    hits = store.search_text(query, _OVERTURN_LOOKUP, ("active",)) if query else []
    out = []
    for old in store.get_many(i for i, _ in hits).values():
        shared = _shared_needed(old, by_user)
        if old.id == new.id or old.pinned or shared is None:
            continue
        said, when = new.source.said_at, old.source.said_at
        if said is None or when is None or when <= said:
            out.append((old, shared))
    return out


def _users(memory: Memory) -> bool:
    """A rule or taste the user stated (not a decision a report or a commit made)."""
    return RULE_TAG in memory.tags or memory.type is MemoryType.PREFERENCE


def _shared_needed(old: Memory, by_user: bool) -> int | None:
    """How many words of what a change is about `old` must share to be overturned by it; None
    when it cannot be: what the user said only the user overturns."""
    if _users(old):
        return MIN_SHARED_RULE_WORDS if by_user else None
    if old.type.value not in _COURSE_TYPES:
        return None
    stated = not _COURSE_TAGS.isdisjoint(old.tags) or _COMMITTED.match(old.content) is not None
    return MIN_SHARED_WORDS if stated else None


# A commit's note: "Committed <sha>: <subject>" and, after it, " (<body>)".
_COMMITTED = re.compile(r"^Committed(?: [0-9a-f]{7,40})?: ")
_REVERT_LOOKUP = 20  # notes searched for the subject a revert names
REVERTED_WORK_SHARE = 0.6  # of the reverted subject's words a turn state must say


def supersede_reverted(cx: Cortex, store: MemoryStore, written: Sequence[Memory]) -> None:
    """A revert commit just stored withdraws the latest active note of the commit it undoes,
    said before it, and the states that reported that work: what the commit added is gone from
    the code (history keeps the notes)."""
    for revert in written:
        head = _COMMITTED.match(revert.content)
        undone = undone_subject(revert.content[head.end() :]) if head else None
        query = text_query(undone, match_all=True) if undone else None
        if undone is None or query is None or revert.status is not Status.ACTIVE:
            continue
        found = store.get_many(i for i, _ in store.search_text(query, _REVERT_LOOKUP, ("active",)))
        said = revert.source.said_at
        olds = [
            m
            for m in found.values()
            if m.id != revert.id
            and _commit_subject(m.content) == undone
            and (said is None or m.source.said_at is None or m.source.said_at <= said)
        ]
        if olds:
            latest = max(olds, key=lambda m: (m.source.said_at or m.created, m.created))
            retire(cx, store, latest, revert.id, cx.now())
        _retire_reverted_work(cx, store, revert, undone)


def _retire_reverted_work(cx: Cortex, store: MemoryStore, revert: Memory, undone: str) -> None:
    """The turn states that report the work a revert undoes ("Done: Added exponential backoff
    retries to upstream_client.py" for `Revert "Retry upstream calls with exponential
    backoff"`): those that say at least 60% of what the reverted subject is about."""
    wanted = topic_words(undone)
    query = text_query(undone)
    if len(wanted) < 2 or query is None:
        return
    need = max(2, math.ceil(REVERTED_WORK_SHARE * len(wanted)))
    said = revert.source.said_at
    for m in store.get_many(i for i, _ in store.search_text(query, _REVERT_LOOKUP, ("active",))).values():
        when = m.source.said_at
        if STATE_TAG not in m.tags or m.id == revert.id or (said and when and when > said):
            continue
        if len(topic_words(m.content) & wanted) >= need:
            retire(cx, store, m, revert.id, cx.now())


def _commit_subject(content: str) -> str | None:
    """The subject of a commit's note, without the body in parentheses after it."""
    head = _COMMITTED.match(content)
    if head is None:
        return None
    rest = content[head.end() :]
    return rest.split(" (", 1)[0] if rest.endswith(")") and " (" in rest else rest


def apply_reply(cx: Cortex, store: MemoryStore, reply: Reply) -> list[WriteOutcome]:
    """What the user's prompt settles of the session's previous turn: an option they picked is
    their decision, what it left to the user is answered, an answer they call wrong is
    withdrawn, a pull request they merged is closed. Returns what it stored."""
    chosen = choose_option(cx, store, reply) if reply.picked is not None else []
    if reply.redirect is not None:
        redirect_answer(cx, store, reply, reply.redirect)
    close_open_states(cx, store, reply.session_id, reply.offset)
    if reply.rejects:
        withdraw_answer(cx, store, reply)
    if reply.merged is not None:
        close_merged(cx, store, reply)
    if reply.settled:
        settle_tools(cx, store, reply)
    return chosen


def redirect_answer(cx: Cortex, store: MemoryStore, reply: Reply, change: Change) -> None:
    """The user redirects the previous answer ("actually, let's use Postgres for sessions
    instead"): its decisions and designs about what the prompt is about (a shared word) that
    do not name the new choice are overturned ("We'll keep user sessions in Redis")."""
    now = cx.now()
    for old in previous_answer(store, reply):
        if old.pinned or old.type.value not in _COURSE_TYPES:
            continue
        if overturns(change, old.content, MIN_SHARED_RULE_WORDS):
            retire(cx, store, old, None, now)


def choose_option(cx: Cortex, store: MemoryStore, reply: Reply) -> list[WriteOutcome]:
    """The user picked one of the options the previous turn laid out ("Option A: S3 with
    presigned URLs ... Option B: local disk ... Which do you prefer?" -> "A"): that option, with
    the pros and cons it listed, is what they decided. Only when the turn's open sections hold
    one option of that place among two or more, and only from the latest turn that left notes;
    the options themselves close as any open state does (a report that lists them stays)."""
    said = {
        m.id: m
        for tag in (OPEN_TAG, REPORT_TAG, FINDING_TAG, STATE_TAG)
        for m in store.tagged(tag, _OPTION_TYPES)
        if m.status is Status.ACTIVE
        and m.source.session_id == reply.session_id
        and (m.source.transcript_offset or 0) < reply.offset
    }
    last = max((m.source.transcript_offset or 0 for m in said.values()), default=None)
    options = [
        (m, place, text)
        for m in said.values()
        if m.source.transcript_offset == last and not {OPEN_TAG, REPORT_TAG}.isdisjoint(m.tags)
        for place, text in options_in(m.content).items()
    ]
    picked = [(m, text) for m, place, text in options if place == reply.picked]
    if len(picked) != 1 or len({place for _, place, _ in options}) != len(options) or len(options) < 2:
        return []
    option, text = picked[0]
    branch = tuple(t for t in option.tags if t.startswith("branch:"))
    decision = Candidate(
        content=f"The user chose: {text}",
        type=MemoryType.DECISION,
        layer=Layer.STRUCTURAL,
        confidence=0.6,
        priority=6,
        tags=(RULE_TAG, *branch),
        files=option.source.files,
    )
    source = Source(
        session_id=reply.session_id,
        transcript_offset=reply.offset,
        branch=option.source.branch,
        commit=option.source.commit,
        files=option.source.files,
        said_at=reply.said_at,
        record=reply.record,
    )
    written = writer.write_batch(cx, store, [(decision, source)])
    if written and OPEN_TAG in option.tags:
        retire(cx, store, option, written[0].memory.id, cx.now())
    return written


# A state saying a pull request waits: "PR #2 is open: https://...", "PR #387 awaiting review".
_PR_OPEN = re.compile(
    r"\b(?:PR|pull request)\s*#?(\d+)\b[^\n]{0,80}?\b(?:is\s+)?(?:still\s+)?"
    r"(?:open\b(?!ed)|awaiting|waiting|ready for review|pending review|needs? review)",
    re.IGNORECASE,
)


def close_merged(cx: Cortex, store: MemoryStore, report: Reply) -> None:
    """The user says they merged the pull request ("i merged it just now"): the session's
    states and reports said before that list it as open are over. The prompt's number names
    it; "it" is the one the latest of those notes names, when it names one only."""
    types = [MemoryType.PROGRESS.value, MemoryType.CONTEXT.value]
    held = {m.id: m for tag in (STATE_TAG, REPORT_TAG, FINDING_TAG) for m in store.tagged(tag, types)}
    notes = [
        (m, _PR_OPEN.findall(m.content))
        for m in held.values()
        if m.status is Status.ACTIVE
        and m.source.session_id == report.session_id
        and (m.source.transcript_offset or 0) < report.offset
    ]
    opened = [(m, numbers) for m, numbers in notes if numbers]
    if not opened:
        return
    last = max(m.source.transcript_offset or 0 for m, _ in opened)
    named = {n for m, numbers in opened if (m.source.transcript_offset or 0) == last for n in numbers}
    if not report.merged and len(named) != 1:
        return  # "it" after a report of several open pull requests: which one is not said
    merged = report.merged or named.pop()
    for memory, numbers in opened:
        if merged in numbers:
            retire(cx, store, memory, None, cx.now())
