"""Measure one replayed session: read the store, take the next session's briefing, ask every
fact's question, and score it all (score.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from benchmarks.capture.dataset import Session
from benchmarks.capture.matching import answers, is_file_list
from benchmarks.capture.probe import (
    StoredMemory,
    log_problems,
    read_memories,
    recall,
    rules_block,
)
from benchmarks.capture.replay import Plugin, Replay, next_session_context
from benchmarks.capture.score import (
    SessionScore,
    answering_memories,
    file_list_stats,
    score_facts,
    stale_hits,
)
from benchmarks.capture.verdicts import check_runs, final_states, wrong_verdicts


@dataclass
class Measured:
    score: SessionScore
    memories: list[StoredMemory]
    briefing: str
    recalls: dict[str, Any]


def next_context(plugin: Plugin, replay: Replay) -> str:
    """The next session's context: the rules file's cortex block, then SessionStart's output."""
    parts = [rules_block(replay.root), next_session_context(plugin, replay)]
    return "\n".join(p for p in parts if p.strip())


def measure(session: Session, plugin: Plugin, replay: Replay, progress: Callable[[str], None]) -> Measured:
    memories = read_memories(replay.root, replay.home)
    briefing = next_context(plugin, replay)  # before any recall touches the store
    recalls = {}
    for n, fact in enumerate(session.facts, 1):
        progress(f"  {session.name}: recall {n}/{len(session.facts)}")
        recalls[fact.id] = recall(plugin, replay, fact.question)
    finals = final_states(check_runs(replay.records))
    verdicts = [v for m in memories for v in wrong_verdicts(m.id, m.content, finals)]
    file_chars, progress_entries, file_entries = file_list_stats(briefing)
    problems = [f"{session.name}: {p}" for p in replay.problems]
    problems += [f"{session.name}: recall failed: {a.error}" for a in recalls.values() if a.error][:3]
    problems += [f"{session.name}: log: {line}" for line in log_problems(replay)][:5]
    score = SessionScore(
        name=session.name,
        facts=score_facts(session.name, session.facts, memories, recalls, briefing),
        memories=len(memories),
        answering_memories=answering_memories(session.facts, memories),
        stale=stale_hits(session.facts, memories),
        verdicts=verdicts,
        briefing_chars=len(briefing),
        file_list_chars=file_chars,
        progress_entries=progress_entries,
        file_list_entries=file_entries,
        seconds=replay.seconds,
        hooks=dict(replay.hooks),
        problems=problems,
    )
    return Measured(score, memories, briefing, recalls)


def raw_lines(session: Session, measured: Measured) -> list[dict[str, Any]]:
    """JSON lines for one session: every fact's result, every memory, the wrong ones."""
    out: list[dict[str, Any]] = []
    for result in measured.score.facts:
        answer = measured.recalls.get(result.fact_id)
        out.append({"record": "fact", **asdict(result), "recall_top": list(answer.ids[:3]) if answer else []})
    wrong = measured.score.wrong_ids
    for m in measured.memories:
        out.append(
            {
                "record": "memory",
                "session": session.name,
                "id": m.id,
                "type": m.type,
                "store": m.store,
                "answers": [f.id for f in session.facts if answers(m.content, f.answer_terms)],
                "wrong": m.id in wrong,
                "file_list": m.type == "progress" and is_file_list(m.content),
                "content": m.content,
            }
        )
    for hit in measured.score.stale:
        out.append({"record": "stale", "session": session.name, **hit})
    for v in measured.score.verdicts:
        out.append({"record": "verdict", "session": session.name, **asdict(v)})
    out.append({"record": "briefing", "session": session.name, "text": measured.briefing})
    return out
