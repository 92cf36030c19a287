"""LongMemEval adapter: questions -> episodes for LME-OFFICIAL and LME-SESSION-FULL. Pure.

One episode per question (its own haystack, a fresh store); "now" is the question date. Sessions
are ingested in date order: the S file lists some of them out of order within a day.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from benchmarks.retrieval.datasets import Episode, Question, plan_docs

DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"  # "2023/04/10 (Mon) 23:07"
OVERALL = "overall"
ABSTENTION = "abstention"
NON_ABSTENTION_SET = "non-abstention"
STRICT_SET = "strict"

Entry = tuple[str, datetime, tuple[str, ...]]


def parse_lme_date(text: str) -> datetime:
    """A LongMemEval date string -> naive datetime."""
    return datetime.strptime(text.strip(), DATE_FORMAT)


def is_abstention(question: Mapping[str, Any]) -> bool:
    """Abstention questions carry `_abs` in their id."""
    return "_abs" in str(question["question_id"])


def _haystack(question: Mapping[str, Any]) -> list[tuple[str, datetime, Sequence[Any]]]:
    return [
        (str(sid), parse_lme_date(date), turns)
        for sid, date, turns in zip(
            question["haystack_session_ids"],
            question["haystack_dates"],
            question["haystack_sessions"],
            strict=True,
        )
    ]


def _official_gold(question: Mapping[str, Any], level: str) -> tuple[str, ...]:
    # The official code keeps an evidence session as gold only when a *user* turn has the answer;
    # at turn level the gold is those user turns. Assistant-only evidence leaves no gold.
    evidence = {str(s) for s in question["answer_session_ids"] if "answer" in str(s)}
    gold: dict[str, None] = {}
    for sid, _, turns in _haystack(question):
        if sid not in evidence:
            continue
        for i, turn in enumerate(turns, start=1):
            if turn["role"] == "user" and turn.get("has_answer"):
                gold.setdefault(sid if level == "session" else f"{sid}_{i}")
    return tuple(gold)


def _official_entries(question: Mapping[str, Any], level: str) -> list[Entry]:
    entries: list[Entry] = []
    for sid, time, turns in _haystack(question):
        user = [(i, t["content"]) for i, t in enumerate(turns, start=1) if t["role"] == "user"]
        if level == "session":
            entries.append((" ".join(content for _, content in user), time, (sid,)))
        else:
            entries.extend((content, time, (f"{sid}_{i}",)) for i, content in user)
    return entries


def plan_lme_official_episodes(raw: Sequence[Mapping[str, Any]], level: str) -> list[Episode]:
    """LME-OFFICIAL: user-turn memories per session or per turn; abstention questions are left out.

    Every other question is in the non-abstention set (no gold: recall_all 1, the rest 0, the
    official convention); questions with gold are also in the strict set.
    """
    if level not in ("session", "turn"):
        raise ValueError(f"LME-OFFICIAL level must be session or turn, not {level!r}")
    episodes = []
    for question in raw:
        if is_abstention(question):
            continue
        gold = _official_gold(question, level)
        sets = (NON_ABSTENTION_SET, STRICT_SET) if gold else (NON_ABSTENTION_SET,)
        qid = str(question["question_id"])
        asked = Question(
            qid,
            str(question["question"]),
            parse_lme_date(question["question_date"]),
            gold,
            (OVERALL, str(question["question_type"])),
            sets,
        )
        episodes.append(Episode(qid, plan_docs(_official_entries(question, level)), (asked,)))
    return episodes


def render_full_session(turns: Sequence[Mapping[str, Any]]) -> str:
    """Both roles as `role: content` lines."""
    return "\n".join(f"{t['role']}: {t['content']}" for t in turns)


def plan_lme_session_full_episodes(raw: Sequence[Mapping[str, Any]]) -> list[Episode]:
    """LME-SESSION-FULL: whole sessions, all questions, gold = `answer_session_ids` as given."""
    episodes = []
    for question in raw:
        entries = [(render_full_session(t), time, (sid,)) for sid, time, t in _haystack(question)]
        gold = tuple(dict.fromkeys(str(s) for s in question["answer_session_ids"]))
        groups: tuple[str, ...] = (OVERALL, str(question["question_type"]))
        if is_abstention(question):
            groups += (ABSTENTION,)
        qid = str(question["question_id"])
        now = parse_lme_date(question["question_date"])
        asked = Question(qid, str(question["question"]), now, gold, groups, ("all",))
        episodes.append(Episode(qid, plan_docs(entries), (asked,)))
    return episodes
