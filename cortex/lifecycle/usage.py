"""Use case: use feedback. After each turn the worker asks which briefed or recalled memories
the session used or contradicted (`cortex.core.lifecycle.usage` decides); at the session's end
it lowers the briefing priority of what the session ignored.

What a session was briefed and recalled comes from its notes under `.memory/usage/` (the hooks
append them; recalls through `cortex recall` or the MCP server are read from the transcript's
tool results). A used memory's access is counted (its salience) and a demoted one gets its
priority back; a contradicted one gets a `suggested contradicts` edge from the note the session
captured about it. A session's verdict is one `usage` journal record of the project store
(`cortex stats --usage` sums them); the demotion ledger is a meta key of each store.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from cortex.app import Cortex
from cortex.core.extract.transcript import Message, Role
from cortex.core.lifecycle.usage import (
    ID_TOKEN,
    RARE_SHARE,
    Demotion,
    SessionVerdict,
    TurnText,
    UsagePlan,
    UsageSummary,
    candidate_terms,
    distinctive_terms,
    judge_contradicted,
    judge_used,
    ledger_from_dict,
    ledger_to_dict,
    plan_ignored,
    plan_used,
    summarise,
    terms_of,
)
from cortex.core.model import Edge, EdgeStatus, EdgeType, Memory, Scope
from cortex.core.text import jaccard
from cortex.shell.usage_log import SessionNotes, append_note, idle_sessions, read_notes, remove_notes
from cortex.store.port import StoreAdmin, WordSearch

log = logging.getLogger("cortex.lifecycle.usage")

META_LEDGER = "usage.demoted"  # id -> [priority before, sessions ignored, priority set]
OP = "usage"  # the journal record of a session's verdict (about no single memory)
OP_PRIORITY = "usage_priority"  # a memory's briefing priority lowered or given back
IDLE_VERDICT_S = 6 * 3600.0  # a session without SessionEnd is judged once idle this long
CONTRADICTION_STRENGTH = 0.5
NEAR_COPY = 0.5  # term Jaccard above which another note says the same as this one
SCOPES = (Scope.PROJECT, Scope.GLOBAL)


@dataclass(slots=True)
class TurnUsage:
    """What one look at a session's new messages found."""

    used: set[str] = field(default_factory=set)
    contradicted: set[str] = field(default_factory=set)
    recalled: set[str] = field(default_factory=set)
    edges: int = 0
    verdict: SessionVerdict | None = None


def turn_text(messages: Sequence[Message]) -> TurnText:
    """The assistant's words and tool-call inputs, and the user's words (never tool results)."""
    said: list[str] = []
    users: list[str] = []
    for m in messages:
        if m.role is Role.ASSISTANT:
            said += m.texts
            said += [json.dumps(dict(u.input), ensure_ascii=False, default=str) for u in m.tool_uses]
        else:
            users.append("\n".join(m.texts))
    return TurnText("\n".join(said), users)


def recalled_in(messages: Sequence[Message]) -> set[str]:
    """Id-shaped tokens in the results of cortex's own calls (`cortex recall`, the MCP tools)."""
    out: set[str] = set()
    for m in messages:
        for use in m.tool_uses:
            called = use.name.lower() + " " + str(use.input.get("command", "")).lower()
            if "cortex" in called and use.result is not None:
                out.update(ID_TOKEN.findall(use.result.content))
    return out


def _stores(cx: Cortex) -> list[StoreAdmin]:
    return [s for s in (cx.store(scope, create=False) for scope in SCOPES) if s is not None]


def _memories(cx: Cortex, ids: Iterable[str]) -> dict[str, tuple[StoreAdmin, Memory]]:
    wanted = sorted(set(ids))
    out: dict[str, tuple[StoreAdmin, Memory]] = {}
    for store in _stores(cx) if wanted else []:
        for mid, m in store.get_many(wanted).items():
            out.setdefault(mid, (store, m))
    return out


def distinct_of(
    found: Mapping[str, tuple[StoreAdmin, Memory]], project: frozenset[str] = frozenset()
) -> dict[str, frozenset[str]]:
    """Each memory's distinctive terms: rarity counted in its own store's keyword index when it
    has one (words; identifiers count as rare there), and among the other memories shown with
    it that are not near-copies of it (a commit footer every note repeats says nothing; a note
    captured again says the same). The project's own name (`project`, its terms) says nothing."""
    cands = {mid: candidate_terms(m.content) for mid, (_, m) in found.items()}
    words: dict[int, set[str]] = {}
    for mid, (store, _) in found.items():
        words.setdefault(id(store), set()).update(t for t in cands[mid] if t.isalpha())
    freq: dict[int, tuple[dict[str, int], int]] = {}
    for store, _ in found.values():
        if id(store) in freq:
            continue
        if isinstance(store, WordSearch):
            total = store.count_active()
            cap = max(4, int(total * RARE_SHARE) + 2)
            freq[id(store)] = (store.word_counts(sorted(words[id(store)]), cap), total)
        else:
            freq[id(store)] = (_peer_counts(cands, None), len(found))
    return {
        mid: distinctive_terms(m.content, *freq[id(store)], _peer_counts(cands, mid), len(found)) - project
        for mid, (store, m) in found.items()
    }


def _peer_counts(cands: Mapping[str, frozenset[str]], mine: str | None) -> dict[str, int]:
    """How many memories hold each term, near-copies of `mine` counted as `mine` itself."""
    own = cands.get(mine, frozenset()) if mine else frozenset()
    counts: dict[str, int] = {t: 1 for t in own}
    for mid, terms in cands.items():
        if mid == mine or (own and jaccard(own, terms) >= NEAR_COPY):
            continue
        for t in terms:
            counts[t] = counts.get(t, 0) + 1
    return counts


def observe(
    cx: Cortex, session_id: str, messages: Sequence[Message], *, closed: bool, captured: Iterable[Memory] = ()
) -> TurnUsage:
    """Judge a session's new messages; on its end (`closed`), its verdict too."""
    store_dir = cx.paths.store_dir
    out = TurnUsage()
    notes = read_notes(store_dir, session_id)
    new_ids = [m.id for m in captured]
    out.recalled = recalled_in(messages) - notes.ids["recalled"]
    turns = sum(1 for m in messages if m.role is Role.ASSISTANT)
    known = notes.ids["briefed"] | notes.ids["recalled"] | out.recalled
    if not known and not notes.turns and not closed:
        return out  # nothing briefed or recalled: nothing to judge, nothing to keep
    open_ids = known - notes.ids["used"] - notes.ids["contradicted"]
    everyone = _memories(cx, known)  # rarity among all it was shown, judged or not yet
    found = {mid: everyone[mid] for mid in open_ids if mid in everyone}
    out.recalled &= set(everyone)
    text = turn_text(messages)
    every = distinct_of(everyone, terms_of(cx.project_name))
    distinct = {mid: every[mid] for mid in found}
    out.contradicted = judge_contradicted(distinct, text)
    used, hits = judge_used(distinct, text, notes.hits)
    out.used = used - out.contradicted
    new_hits = {m: sorted(h) for m, h in hits.items() if m not in used and h - notes.hits.get(m, set())}
    _apply_used(cx, [found[i] for i in sorted(out.used)])
    captured_ids = notes.ids["captured"] | set(new_ids)
    out.edges = _contradicts(cx, [found[i] for i in sorted(out.contradicted)], captured_ids, distinct)
    for kind, ids in (("recalled", out.recalled), ("captured", new_ids), ("used", out.used)):
        if ids:
            append_note(store_dir, session_id, kind, ids)
    if out.contradicted or turns or new_hits:
        kind = "contradicted" if out.contradicted else "turns"
        append_note(store_dir, session_id, kind, out.contradicted, turns=turns, hits=new_hits)
    if closed:
        out.verdict = finish(cx, read_notes(store_dir, session_id))
    return out


def finish_idle(cx: Cortex, idle_s: float = IDLE_VERDICT_S) -> int:
    """Give the verdict of sessions that ended without SessionEnd; how many."""
    done = 0
    for notes in idle_sessions(cx.paths.store_dir, idle_s):
        finish(cx, notes)
        done += 1
    return done


def finish(cx: Cortex, notes: SessionNotes) -> SessionVerdict:
    """A session's verdict: demote what it ignored, journal the verdict, drop its notes."""
    verdict = SessionVerdict(
        briefed=frozenset(notes.ids["briefed"]),
        recalled=frozenset(notes.ids["recalled"]),
        used=frozenset(notes.ids["used"]),
        contradicted=frozenset(notes.ids["contradicted"]),
        turns=notes.turns,
    )
    ignored = _memories(cx, verdict.unused)
    for store in _stores(cx):
        mine = [m for s, m in ignored.values() if s is store]
        if mine:
            _apply(cx, store, plan_ignored(mine, _ledger(store)), mine)
    if verdict.briefed or verdict.recalled:
        project = cx.write_store(Scope.PROJECT)
        with project.transaction():
            project.journal(cx.actor, OP, None, verdict_payload(notes.session_id, verdict), cx.now())
    remove_notes(cx.paths.store_dir, notes.session_id)
    return verdict


def verdict_payload(session_id: str, v: SessionVerdict) -> dict[str, object]:
    """The journal record of a verdict (`cortex stats --usage` reads these)."""
    return {
        "session": session_id,
        "turns": v.turns,
        "judged": v.judged,
        "briefed": sorted(v.briefed),
        "recalled": sorted(v.recalled),
        "used": sorted(v.used),
        "unused": sorted(v.unused),
        "contradicted": sorted(v.contradicted),
    }


def _ledger(store: StoreAdmin) -> dict[str, Demotion]:
    raw = store.get_meta(META_LEDGER)
    try:
        return ledger_from_dict(json.loads(raw)) if raw else {}
    except ValueError:
        return {}


def _apply(cx: Cortex, store: StoreAdmin, plan: UsagePlan, memories: Sequence[Memory]) -> None:
    now = cx.now()
    with store.transaction():
        for m in memories:
            new = plan.priorities.get(m.id)
            if new is not None and new != m.priority:
                store.update_memory(m, replace(m, priority=new), cx.actor, now, OP_PRIORITY)
        store.set_meta(META_LEDGER, json.dumps(ledger_to_dict(plan.ledger), separators=(",", ":")))


def _apply_used(cx: Cortex, used: Sequence[tuple[StoreAdmin, Memory]]) -> None:
    """Salience for what was used: its access counted, its priority back if it was demoted."""
    for store in _stores(cx):
        mine = [m for s, m in used if s is store]
        if not mine or store.readonly:
            continue
        with store.transaction():
            store.record_access([m.id for m in mine], cx.now(), cx.actor)
        ledger = _ledger(store)
        if any(m.id in ledger for m in mine):
            fresh = list(store.get_many([m.id for m in mine]).values())  # with the access counted
            _apply(cx, store, plan_used(fresh, ledger), fresh)


def _contradicts(
    cx: Cortex,
    contradicted: Sequence[tuple[StoreAdmin, Memory]],
    captured: set[str],
    distinct: Mapping[str, frozenset[str]],
) -> int:
    """`suggested contradicts` edges from the note this session captured about each contradicted
    memory (the one sharing most of its distinctive terms) to it; a person decides."""
    if not contradicted or not captured:
        return 0
    newer = _memories(cx, captured)
    made = 0
    now = cx.now()
    for store, old in contradicted:
        terms = distinct.get(old.id, frozenset())
        best = max(
            (m for s, m in newer.values() if s is store and m.id != old.id),
            key=lambda m: (len(terms & terms_of(m.content)), m.id),
            default=None,
        )
        if best is None or not terms & terms_of(best.content):
            continue
        edge = Edge(best.id, old.id, EdgeType.CONTRADICTS, CONTRADICTION_STRENGTH, EdgeStatus.SUGGESTED, now)
        with store.transaction():
            store.upsert_edge(edge, cx.actor, now)
        made += 1
    return made


def usage_summary(cx: Cortex) -> tuple[UsageSummary, dict[str, Memory], int, int]:
    """Verdicts of the project store's journal, the demotion ledgers, the memories they name,
    and the never-used count over active memories (the signal `cortex audit` reads)."""
    from cortex.core.lifecycle.health import never_used

    verdicts: list[Mapping[str, object]] = []
    demoted: dict[str, Demotion] = {}
    never = active = 0
    for store in _stores(cx):
        if store.scope is Scope.PROJECT:
            verdicts = [r["payload"] for r in store.journal_rows() if r["op"] == OP and r["payload"]]
        demoted.update(_ledger(store))
        live = store.list_memories(statuses=("active",))
        never += sum(1 for m in live if never_used(m))
        active += len(live)
    summary = summarise(verdicts, demoted)
    named = {mid: m for mid, (_, m) in _memories(cx, [*summary.by_memory, *demoted]).items()}
    return summary, named, never, active
