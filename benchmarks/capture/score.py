"""Scoring a replayed session against its facts, and the totals over sessions. Pure.

- captured: some active memory's content answers the fact (README rule).
- recalled@3: one of the first 3 hits `cortex recall --json QUESTION` returns answers it.
- briefed (decision, convention, gotcha and architecture facts): a single line of the next
  session's context (the rules file's cortex block, then the SessionStart hook's output) answers.
- wrong: active memories that assert a stale claim (>= 80% of its content tokens), plus
  memories whose test/build verdict contradicts the transcript's final state (verdicts.py).
- precision proxy: the share of active memories that answer at least one of the session's facts.
- file-list share: characters of briefing entries of type progress whose text mostly lists
  file paths (matching.is_file_list), over all characters of the next session's context.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from benchmarks.capture.dataset import Fact
from benchmarks.capture.matching import answers, asserts, briefing_answers, is_file_list
from benchmarks.capture.probe import RECALL_TOP, RecallAnswer, StoredMemory
from benchmarks.capture.verdicts import WrongVerdict

TARGETS = {  # the acceptance targets
    "captured": (">=", 0.70),
    "recalled@3": (">=", 0.60),
    "briefed": (">=", 0.60),
    "wrong": ("=", 0),
    "file-list share": ("<=", 0.25),
}
# `- id · type · date ...`, `- id · date ...` (the section's title names the type), or a bare
# `- id` (a pinned one `- id · type · pinned`) whose date and source the part's preamble gives.
_TYPES = "decision|architecture|pattern|preference|gotcha|progress|context|code"
_ENTRY = re.compile(rf"^- (\S+)(?: · (?:({_TYPES})(?= · |$| \()|\S)|$| \()")
_SECTIONS = {  # a briefing section's title -> the type of the entries under it (Pinned mixes types)
    "Decisions:": "decision",
    "Architecture:": "architecture",
    "Conventions and patterns:": "pattern",
    "Preferences:": "preference",
    "Gotchas:": "gotcha",
    "Code notes:": "code_description",
    "Progress:": "progress",
    "Context:": "context",
}


@dataclass
class FactResult:
    session: str
    fact_id: str
    kind: str
    captured: bool
    captured_by: list[str]
    recalled: bool | None  # None: not asked
    recall_rank: int | None  # 1-based rank of the first answering hit among all returned
    abstained: bool
    briefed: bool | None  # None: not a briefed kind
    stale_memories: list[str] = field(default_factory=list)  # ids asserting one of its stale claims


@dataclass
class SessionScore:
    name: str
    facts: list[FactResult]
    memories: int
    answering_memories: int
    stale: list[dict[str, str]]  # memory id, fact id, claim
    verdicts: list[WrongVerdict]
    briefing_chars: int
    file_list_chars: int
    progress_entries: int
    file_list_entries: int
    seconds: float
    hooks: dict[str, int]
    problems: list[str]

    @property
    def wrong_ids(self) -> set[str]:
        return {s["memory_id"] for s in self.stale} | {v.memory_id for v in self.verdicts}

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["wrong"] = len(self.wrong_ids)
        return out


def score_facts(
    session: str,
    facts: Sequence[Fact],
    memories: Sequence[StoredMemory],
    recalls: Mapping[str, RecallAnswer],
    briefing: str,
) -> list[FactResult]:
    """One result per fact."""
    out: list[FactResult] = []
    for fact in facts:
        by = [m.id for m in memories if answers(m.content, fact.answer_terms)]
        answer = recalls.get(fact.id)
        rank = None
        if answer is not None:
            rank = next((i for i, c in enumerate(answer.contents, 1) if answers(c, fact.answer_terms)), None)
        stale = [m.id for m in memories if any(asserts(m.content, c) for c in fact.stale_claims)]
        out.append(
            FactResult(
                session=session,
                fact_id=fact.id,
                kind=fact.kind,
                captured=bool(by),
                captured_by=by,
                recalled=None if answer is None else rank is not None and rank <= RECALL_TOP,
                recall_rank=rank,
                abstained=bool(answer and answer.abstained),
                briefed=briefing_answers(briefing, fact.answer_terms) if fact.briefed_kind else None,
                stale_memories=stale,
            )
        )
    return out


def stale_hits(facts: Iterable[Fact], memories: Sequence[StoredMemory]) -> list[dict[str, str]]:
    """Every (memory, stale claim) pair where the memory asserts the claim."""
    return [
        {"memory_id": m.id, "fact_id": f.id, "claim": claim}
        for f in facts
        for claim in f.stale_claims
        for m in memories
        if asserts(m.content, claim)
    ]


def answering_memories(facts: Sequence[Fact], memories: Sequence[StoredMemory]) -> int:
    return sum(1 for m in memories if any(answers(m.content, f.answer_terms) for f in facts))


@dataclass(frozen=True, slots=True)
class Entry:
    type: str
    text: str  # the entry's lines after the attribution line
    chars: int  # all its lines, newlines included


def briefing_entries(text: str) -> list[Entry]:
    """The briefing's memory entries: `- id · type · date ...` (or `- id · date ...`, or a bare
    `- id`, under a section title naming the type) and the indented lines below it."""
    entries: list[Entry] = []
    current: tuple[str, list[str]] | None = None
    section = ""
    for line in text.splitlines():
        m = _ENTRY.match(line)
        if line.endswith(":") and not line.startswith((" ", "\t", "-")):  # a section's title
            section = _SECTIONS.get(line, "")
        if m:
            if current:
                entries.append(_entry(*current))
            current = (m.group(2) or section, [line])
        elif current and line.startswith((" ", "\t")) and line.strip():
            current[1].append(line)
        elif current:
            entries.append(_entry(*current))
            current = None
    if current:
        entries.append(_entry(*current))
    return entries


def _entry(kind: str, lines: list[str]) -> Entry:
    return Entry(kind, "\n".join(ln.strip() for ln in lines[1:]), sum(len(ln) + 1 for ln in lines))


def file_list_stats(text: str) -> tuple[int, int, int]:
    """(characters of file-list progress entries, progress entries, file-list progress entries)."""
    progress = [e for e in briefing_entries(text) if e.type == "progress"]
    lists = [e for e in progress if is_file_list(e.text)]
    return sum(e.chars for e in lists), len(progress), len(lists)


# -- totals ------------------------------------------------------------------------------------
def _share(hits: Iterable[bool | None]) -> float | None:
    values = [bool(h) for h in hits if h is not None]
    return sum(values) / len(values) if values else None


def rates(facts: Sequence[FactResult]) -> dict[str, Any]:
    return {
        "facts": len(facts),
        "captured": _share(f.captured for f in facts),
        "recalled@3": _share(f.recalled for f in facts),
        "briefed": _share(f.briefed for f in facts),
        "briefed_facts": sum(1 for f in facts if f.briefed is not None),
        "stale_memories": len({m for f in facts for m in f.stale_memories}),
    }


def session_row(s: SessionScore) -> dict[str, Any]:
    return {
        **rates(s.facts),
        "memories": s.memories,
        "precision": s.answering_memories / s.memories if s.memories else None,
        "wrong": len(s.wrong_ids),
        "wrong_stale": len({x["memory_id"] for x in s.stale}),
        "wrong_verdict": len({v.memory_id for v in s.verdicts}),
        "file-list share": s.file_list_chars / s.briefing_chars if s.briefing_chars else 0.0,
        "briefing_chars": s.briefing_chars,
        "progress_entries": s.progress_entries,
        "file_list_entries": s.file_list_entries,
        "seconds": round(s.seconds, 1),
    }


def summarize(sessions: Sequence[SessionScore]) -> dict[str, Any]:
    """Overall (facts pooled over sessions), per fact kind and per session."""
    facts = [f for s in sessions for f in s.facts]
    memories = sum(s.memories for s in sessions)
    chars = sum(s.briefing_chars for s in sessions)
    overall = {
        **rates(facts),
        "sessions": len(sessions),
        "memories": memories,
        "memories_per_session": memories / len(sessions) if sessions else None,
        "precision": sum(s.answering_memories for s in sessions) / memories if memories else None,
        "wrong": sum(len(s.wrong_ids) for s in sessions),
        "wrong_stale": sum(len({x["memory_id"] for x in s.stale}) for s in sessions),
        "wrong_verdict": sum(len({v.memory_id for v in s.verdicts}) for s in sessions),
        "file-list share": sum(s.file_list_chars for s in sessions) / chars if chars else 0.0,
        "briefing_chars": chars,
    }
    kinds = sorted({f.kind for f in facts})
    return {
        "overall": overall,
        "per_kind": {k: rates([f for f in facts if f.kind == k]) for k in kinds},
        "per_session": {s.name: session_row(s) for s in sessions},
    }
