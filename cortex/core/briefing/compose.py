"""Ranked memories -> the token-budgeted briefing (stable, moment or full part). Pure.

The briefing reaches the model two ways (SPEC §4): the rules file Claude Code loads at startup
carries the branch-independent `stable` part; SessionStart adds the `moment` part (this
branch's progress and context, stale warnings, the last session). `full` is both in one, for
when the file cannot carry its part. Stable and moment share one token budget: stable gets at
most its types' share, moment what stable leaves, so together they never exceed it.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from cortex.core.briefing.quarantine import is_withheld
from cortex.core.briefing.repeats import entry_words, find_echoes, lead_ins_last
from cortex.core.briefing.text import (
    MAX_ENTRY_CHARS,
    MAX_STALE_LISTED,
    SECTION_TITLES,
    common_source,
    find_last_session,
    last_said,
    render_changed_line,
    render_entry,
    render_header,
    render_last_session_line,
    render_source_line,
    render_stale_line,
    render_text,
)
from cortex.core.budget import estimate_tokens, pack, pack_by_type
from cortex.core.extract.structural import EDITS_TAG
from cortex.core.extract.summary import SUBAGENT_TAG
from cortex.core.model import Memory, MemoryType, Status
from cortex.core.recall.ranking import BriefingWeights, rank_for_briefing
from cortex.core.write.state import branch_key

MAX_BRIEFING_CHARS = 9_500  # Claude Code inlines hook output only below 10,000 characters
DEFAULT_BUDGET_TOKENS = 1_500
MIN_ENTRY_TOKENS = 8  # `- <id> · <type> · <date>` plus one word already costs more
MAX_STALE_IDS = 100  # stale ids a part lists (a store can hold thousands); it counts them all
MAX_EDIT_NOTES = 3  # "Edited a.py, b.py" notes: where the work was lately, not a history
PINNED_MAX_SHARE = 0.5  # pinned notes lead, but cannot crowd out every type
DEFAULT_WEIGHTS = BriefingWeights()
_NO_NOTES: Mapping[str, str] = {}


class BriefingPart(StrEnum):
    STABLE = "stable"  # branch-independent: the rules file carries it
    MOMENT = "moment"  # this branch, this HEAD: SessionStart carries it
    FULL = "full"  # both, when the file cannot carry its part


# Soft share of the budget per bucket (SPEC §4); preferences get a share of their own.
TYPE_SHARES: dict[str, float] = {
    "decision": 0.22,
    "architecture": 0.16,
    "pattern": 0.14,
    "gotcha": 0.14,
    "preference": 0.06,
    "code": 0.06,
    "progress": 0.14,
    "context": 0.08,
}
BUCKET_OF: dict[MemoryType, str] = {
    MemoryType.DECISION: "decision",
    MemoryType.ARCHITECTURE: "architecture",
    MemoryType.PATTERN: "pattern",
    MemoryType.GOTCHA: "gotcha",
    MemoryType.PREFERENCE: "preference",
    MemoryType.CODE_DESCRIPTION: "code",  # raw code is never briefed: recall pulls it
    MemoryType.PROGRESS: "progress",
    MemoryType.CONTEXT: "context",
}
STABLE_BUCKETS = ("decision", "architecture", "pattern", "preference", "gotcha", "code")
MOMENT_BUCKETS = ("progress", "context")
PART_BUCKETS = {
    BriefingPart.STABLE: STABLE_BUCKETS,
    BriefingPart.MOMENT: MOMENT_BUCKETS,
    BriefingPart.FULL: STABLE_BUCKETS + MOMENT_BUCKETS,
}
STABLE_SHARE = sum(TYPE_SHARES[b] for b in STABLE_BUCKETS) / sum(TYPE_SHARES.values())


@dataclass(frozen=True, slots=True)
class StoreFacts:
    """What a render needs to know of memories it is not given, when it is given only those it
    could show (read by index): per part, how many are eligible and the largest log(access+1)
    among them, and the last session with notes (`find_last_session` over them all)."""

    eligible: Mapping[BriefingPart, int]
    max_log_access: Mapping[BriefingPart, float]
    last_session: tuple[Memory, int] | None
    stale_count: int  # active stale memories in all
    stale_first: tuple[str, ...]  # the first `MAX_STALE_IDS` of their ids, in store order


@dataclass(frozen=True, slots=True)
class Briefing:
    """One rendered briefing part and what went into it."""

    part: BriefingPart
    text: str  # "" when there is nothing to say (or nothing fits)
    shown: tuple[str, ...]  # memory ids, in the order shown
    dropped: int  # eligible memories the budget cut (the truncation line counts them)
    withheld: tuple[str, ...]  # instruction-like memories kept out (of those in reach; recallable)
    stale: tuple[str, ...]  # ids this part flags as referring to files gone at HEAD (the first few)
    stale_count: int  # how many it flags in all
    tokens: int
    budget_tokens: int

    @property
    def chars(self) -> int:
        return len(self.text)


def is_other_feature_branch(memory: Memory, branch: str | None) -> bool:
    """True for notes recorded on a feature branch that is not the current one (a detached
    `HEAD` counts as the default branch, on either side)."""
    recorded = branch_key(memory.source.branch)
    return bool(recorded) and recorded != branch_key(branch)


def plan_eligible(memories: Sequence[Memory], part: BriefingPart, branch: str | None) -> list[Memory]:
    """Memories this part may show, in input order: active, its types, not another branch's
    work, and of the per-turn lists of edited files only the latest few."""
    buckets = PART_BUCKETS[part]
    eligible: list[Memory] = []
    for m in memories:
        bucket = BUCKET_OF.get(m.type)
        if m.status is not Status.ACTIVE or bucket not in buckets:
            continue
        if bucket in MOMENT_BUCKETS and not m.pinned and is_other_feature_branch(m, branch):
            continue
        eligible.append(m)
    edits = [m for m in eligible if EDITS_TAG in m.tags and not m.pinned]
    latest = {m.id for m in sorted(edits, key=lambda m: (m.created, m.id), reverse=True)[:MAX_EDIT_NOTES]}
    return [m for m in eligible if EDITS_TAG not in m.tags or m.pinned or m.id in latest]


def is_second_hand(m: Memory) -> bool:
    """A subagent's report: recall finds it, the briefing leaves it out unless it is pinned (the
    turn's own report relays what matters; on 8 real sessions 1 of the 7 such notes briefed
    answered a reader's key fact, one the turn's own plan answered too). It still counts among
    the notes not shown."""
    return SUBAGENT_TAG in m.tags and not m.pinned


def plan_candidates(ranked: Sequence[Memory], budget_tokens: int) -> tuple[list[Memory], list[str]]:
    """(the leading promotable memories of each bucket that could fit, ids withheld on the way).

    A bucket stops taking candidates once a cheap lower bound of their cost passes twice the
    budget (or the count could never fit), so a store of 100,000 memories costs little more
    than one of 100. Only candidates are checked for instruction-like text, for the same reason.
    """
    max_count = budget_tokens // MIN_ENTRY_TOKENS + 1
    spent: dict[str, int] = {}
    count: dict[str, int] = {}
    candidates: list[Memory] = []
    withheld: list[str] = []
    for m in ranked:
        bucket = "pinned" if m.pinned else BUCKET_OF[m.type]
        if count.get(bucket, 0) >= max_count or spent.get(bucket, 0) > 2 * budget_tokens:
            continue
        if is_second_hand(m):
            continue
        if is_withheld(m):  # content, summary, tags and source metadata
            withheld.append(m.id)
            continue
        count[bucket] = count.get(bucket, 0) + 1
        # An entry costs at least its (shortened) text at 4 characters a token, plus the frame.
        spent[bucket] = spent.get(bucket, 0) + min(len(m.content), MAX_ENTRY_CHARS) // 4 + MIN_ENTRY_TOKENS
        candidates.append(m)
    return candidates, withheld


def _pack(candidates: Sequence[Memory], entries: dict[str, str], tokens: int, chars: int) -> set[str]:
    """Ids that fit: pinned first (up to their cap), then per-type soft budgets."""

    def cost(m: Memory) -> int:
        # One scale for both caps: a sum of costs within `tokens` keeps the chars within `chars`.
        line = entries[m.id] + "\n"
        return max(estimate_tokens(line) + 1, math.ceil(len(line) * tokens / chars))

    pinned = pack([m for m in candidates if m.pinned], cost, math.floor(tokens * PINNED_MAX_SHARE))
    taken = {m.id for m in pinned.kept}
    by_type: dict[str, list[Memory]] = {}
    for m in candidates:
        if m.id not in taken:
            by_type.setdefault(BUCKET_OF[m.type], []).append(m)
    packed = pack_by_type(by_type, TYPE_SHARES, tokens - pinned.used, cost)
    return taken | {m.id for p in packed.values() for m in p.kept}


def _pack_distinct(
    candidates: Sequence[Memory], entries: dict[str, str], tokens: int, chars: int
) -> list[Memory]:
    """The candidates that fit (`_pack`), in rank order (lead-ins last), none repeating another
    shown entry: an echo gives its place to the next candidate, so the budget goes to what is
    not said yet."""
    words = {m.id: entry_words(entries[m.id]) for m in candidates}
    pool = lead_ins_last(candidates, entries)
    while True:
        fitted = _pack(pool, entries, tokens, chars)
        shown = [m for m in pool if m.id in fitted]
        echoes = find_echoes(shown, words)
        if not echoes:
            return shown
        pool = [m for m in pool if m.id not in echoes]


def _render_part(
    memories: Sequence[Memory],
    part: BriefingPart,
    *,
    now: datetime | None,
    branch: str | None,
    budget_tokens: int,
    max_chars: int,
    weights: BriefingWeights,
    stale: Collection[str],
    facts: StoreFacts | None,
    notes: Mapping[str, str] = _NO_NOTES,
) -> Briefing:
    clock = now if weights.recency else None  # without a recency weight `now` only costs time
    max_log = facts.max_log_access[part] if facts else None
    ranked = rank_for_briefing(plan_eligible(memories, part, branch), weights, clock, branch, max_log)
    candidates, withheld = plan_candidates(ranked, budget_tokens)
    eligible = (facts.eligible[part] if facts else len(ranked)) - len(withheld)
    marks = part is not BriefingPart.STABLE  # the stable part must read the same at any HEAD
    last = facts.last_session if facts else find_last_session(memories)
    if facts:
        flagged = [i for i in facts.stale_first if i in stale]
        flagged_count = facts.stale_count if flagged else 0
    else:
        flagged = [m.id for m in memories if m.id in stale and m.status is Status.ACTIVE]
        flagged_count = len(flagged)
    first = set(flagged[:MAX_STALE_LISTED])
    listed = [m for m in memories if m.id in first]
    changed = [m for m in memories if m.id in notes and m.id not in stale]  # code changed under them
    changed_count = sum(1 for i in notes if i not in stale)
    # The session the preamble names: the moment part's last session, else the one most notes
    # come from; its notes leave unsaid what the preamble says of it.
    said = last_said(last) if marks else common_source(candidates)
    preamble = (
        [
            render_last_session_line(last),
            render_stale_line(listed, flagged_count),
            render_changed_line(changed, changed_count, notes),
        ]
        if marks
        else [render_source_line(said)]
    )
    header = render_header(part.value, None if part is BriefingPart.STABLE else branch)
    entries = {  # the stable part is given no notes
        m.id: render_entry(m, stale=marks and m.id in stale, note=notes.get(m.id, ""), here=branch, said=said)
        for m in candidates
    }
    present = {BUCKET_OF[m.type] for m in candidates}
    buckets = ["pinned", *(b for b in PART_BUCKETS[part] if b in present)]

    def build(chosen: Sequence[Memory]) -> str:
        sections = [(SECTION_TITLES[b], [entries[m.id] for m in chosen if _bucket(m) == b]) for b in buckets]
        return render_text(header, preamble, sections, eligible - len(chosen))

    # The frame (header, fence, titles, a worst-case truncation line) is paid before any entry.
    frame = render_text(header, preamble, [(SECTION_TITLES[b], ["x"]) for b in buckets], eligible or 1)
    item_tokens, item_chars = budget_tokens - estimate_tokens(frame), max_chars - len(frame)
    shown: list[Memory] = []
    if candidates and item_tokens > 0 and item_chars > 0:
        shown = _pack_distinct(candidates, entries, item_tokens, item_chars)
    text = build(shown)
    # Token estimates do not add up exactly; drop the lowest-ranked until both caps hold.
    while text and (estimate_tokens(text) > budget_tokens or len(text) > max_chars):
        if not shown:
            text = ""
            break
        shown.pop()
        text = build(shown)
    shown_ids = {m.id for m in shown}
    if part is BriefingPart.MOMENT:
        flagged_ids = tuple(flagged[:MAX_STALE_IDS])
    else:  # stale notes shown in `full` (none in `stable`: it is given no stale ids)
        flagged_ids = tuple(m.id for m in memories if marks and m.id in shown_ids and m.id in stale)
    return Briefing(
        part=part,
        text=text,
        shown=tuple(m.id for b in buckets for m in shown if _bucket(m) == b),
        dropped=eligible - len(shown),
        withheld=tuple(withheld),
        stale=flagged_ids,
        stale_count=flagged_count if part is BriefingPart.MOMENT else len(flagged_ids),
        tokens=estimate_tokens(text),
        budget_tokens=budget_tokens,
    )


def _bucket(m: Memory) -> str:
    return "pinned" if m.pinned else BUCKET_OF[m.type]


def render_briefings(
    memories: Sequence[Memory],
    *,
    now: datetime | None,
    branch: str | None,
    budget_tokens: int = DEFAULT_BUDGET_TOKENS,
    max_chars: int = MAX_BRIEFING_CHARS,
    weights: BriefingWeights = DEFAULT_WEIGHTS,
    stale: Collection[str] = frozenset(),
    parts: Collection[BriefingPart | str] = tuple(BriefingPart),
    facts: StoreFacts | None = None,
    notes: Mapping[str, str] = _NO_NOTES,
) -> dict[BriefingPart, Briefing]:
    """Render the requested parts at once (moment needs stable's size, so it is shared).

    Without `facts`, `memories` are all the active memories there are. With them, `memories`
    may be only those the render could reach (per part and bucket, every memory ranked up to
    where `plan_candidates` stops taking more, the latest edit notes, the first stale memories,
    in store order), and the text is the same as from all of them. `notes`: memory id -> what its
    code anchors say ("may be stale: ..."), for every active memory marked (`moment` and `full`
    show it on the entry and list the first few, like stale ones).
    """
    wanted = {BriefingPart(p) for p in parts}
    max_chars = min(max(max_chars, 0), MAX_BRIEFING_CHARS)
    budget_tokens = max(budget_tokens, 0)

    def render(which: BriefingPart, budget: int) -> Briefing:
        return _render_part(
            memories,
            which,
            now=now,
            branch=branch,
            budget_tokens=budget,
            max_chars=max_chars,
            weights=weights,
            stale=stale,
            facts=facts,
            notes=notes,
        )

    out: dict[BriefingPart, Briefing] = {}
    if wanted & {BriefingPart.STABLE, BriefingPart.MOMENT}:
        stable = _render_part(
            memories,
            BriefingPart.STABLE,
            now=now,
            branch=None,  # the same text on every branch, so the rules file can carry it
            budget_tokens=math.floor(budget_tokens * STABLE_SHARE),
            max_chars=max_chars,
            weights=weights,
            stale=(),
            facts=facts,
        )
        if BriefingPart.STABLE in wanted:
            out[BriefingPart.STABLE] = stable
        if BriefingPart.MOMENT in wanted:
            out[BriefingPart.MOMENT] = render(BriefingPart.MOMENT, budget_tokens - stable.tokens)
    if BriefingPart.FULL in wanted:
        out[BriefingPart.FULL] = render(BriefingPart.FULL, budget_tokens)
    return out


def render_briefing(
    memories: Sequence[Memory],
    *,
    now: datetime | None,
    branch: str | None,
    budget_tokens: int = DEFAULT_BUDGET_TOKENS,
    max_chars: int = MAX_BRIEFING_CHARS,
    weights: BriefingWeights = DEFAULT_WEIGHTS,
    stale: Collection[str] = frozenset(),
    part: BriefingPart | str = BriefingPart.FULL,
) -> Briefing:
    """Render one part of the briefing within `budget_tokens` and `max_chars` (capped at 9,500).

    `budget_tokens` is the whole briefing's budget: `full` may use all of it, `stable` at most
    its types' share, `moment` what `stable` leaves. `stale` holds ids of memories whose files
    are gone at HEAD: marked in `moment`/`full`, listed in `moment` and `full`, ignored by
    `stable` (which must read the same on every branch and HEAD).
    """
    which = BriefingPart(part)
    return render_briefings(
        memories,
        now=now,
        branch=branch,
        budget_tokens=budget_tokens,
        max_chars=max_chars,
        weights=weights,
        stale=stale,
        parts=(which,),
    )[which]
