"""LoCoMo adapter: conversations -> episodes for LOCOMO-TURN and LOCOMO-SESSION. Pure.

One episode per conversation (a fresh store each). The question has no date of its own, so
"now" is the date of the conversation's last session.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from benchmarks.retrieval.datasets import Doc, Episode, Question, plan_docs
from benchmarks.retrieval.metrics import parse_dialog_ids, parse_evidence

# The integers are NOT the paper's order (research/benchmarks.md §2.3).
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ADVERSARIAL = 5
OVERALL = "overall"
OVERALL_NO_ADVERSARIAL = "overall w/o cat 5"
DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"


def category_row(category: int) -> str:
    """Report row label of a LoCoMo category, e.g. `cat 1 multi-hop`."""
    return f"cat {category} {CATEGORIES.get(category, 'unknown')}"


def parse_locomo_date(text: str) -> datetime:
    """A LoCoMo `session_<N>_date_time` string -> naive datetime."""
    return datetime.strptime(text.strip(), DATE_FORMAT)


def _sessions(conversation: Mapping[str, Any]) -> Iterator[tuple[int, str, Sequence[Any]]]:
    # Some conversations carry date keys past their last session: stop at the first gap.
    n = 1
    while f"session_{n}" in conversation:
        yield n, conversation[f"session_{n}_date_time"], conversation[f"session_{n}"]
        n += 1


def _turn_unit(turn: Mapping[str, Any]) -> str:
    ids = parse_dialog_ids(str(turn["dia_id"]))
    return ids[0] if ids else str(turn["dia_id"])


def _session_unit(dia_id: str) -> str:
    return "session_" + dia_id[1:].split(":", 1)[0]


def render_turn(turn: Mapping[str, Any]) -> str:
    """`speaker: text`, plus ` [shares <caption>]` when the turn shared an image."""
    text = f"{turn['speaker']}: {turn['text']}"
    caption = turn.get("blip_caption")
    return f"{text} [shares {caption}]" if caption else text


def render_session(date_text: str, turns: Sequence[Mapping[str, Any]]) -> str:
    """A date line, then `speaker: text` lines (no image captions, like the published harness)."""
    return "\n".join([date_text, *(f"{t['speaker']}: {t['text']}" for t in turns)])


def plan_locomo_episodes(raw: Sequence[Mapping[str, Any]], level: str) -> list[Episode]:
    """LoCoMo samples -> one episode per conversation; `level` is `turn` or `session`."""
    if level not in ("turn", "session"):
        raise ValueError(f"LoCoMo level must be turn or session, not {level!r}")
    episodes = []
    for sample in raw:
        sessions = list(_sessions(sample["conversation"]))
        entries: list[tuple[str, datetime, tuple[str, ...]]] = []
        existing: set[str] = set()
        for n, date_text, turns in sessions:
            time = parse_locomo_date(date_text)
            existing.update(_turn_unit(t) for t in turns)
            if level == "turn":
                entries.extend((render_turn(t), time, (_turn_unit(t),)) for t in turns)
            else:
                entries.append((render_session(date_text, turns), time, (f"session_{n}",)))
        docs: tuple[Doc, ...] = plan_docs(entries)
        now = max(parse_locomo_date(date_text) for _, date_text, _ in sessions)
        questions = []
        for index, qa in enumerate(sample["qa"], start=1):
            evidence = parse_evidence(qa.get("evidence") or [], existing)
            if not evidence:
                continue
            gold = evidence if level == "turn" else tuple(dict.fromkeys(map(_session_unit, evidence)))
            category = int(qa["category"])
            groups: tuple[str, ...] = (OVERALL,)
            if category != ADVERSARIAL:
                groups += (OVERALL_NO_ADVERSARIAL,)
            groups += (category_row(category),)
            qid = f"{sample['sample_id']}#q{index}"
            questions.append(Question(qid, str(qa["question"]), now, gold, groups, ("all",)))
        episodes.append(Episode(str(sample["sample_id"]), docs, tuple(questions)))
    return episodes
