"""The user's answers to AskUserQuestion, from the records 2.0.22 and 2.1.191 write: the
option chosen (with its description) or the user's own words settle the question asked."""

from __future__ import annotations

from cortex.core.extract.pipeline import extract_sourced
from cortex.core.extract.signals import ANSWER_TAG
from cortex.core.extract.transcript import parse_chunk
from cortex.core.model import MemoryType
from tests.support.transcript_builders import (
    REJECT_PROCEED,
    V2_0,
    V2_1,
    jsonl,
    prompt_record,
    text_record,
    tool_result_record,
    tool_use_record,
)

WHERE = "Where should the working clone of the fork go?"
HOW_MUCH = "How much of the launcher do I convert in this first pass?"
QUESTIONS = [
    {
        "question": WHERE,
        "header": "Fork location",
        "options": [
            {
                "label": "$WS/jcode (Recommended)",
                "description": "A project folder in the workspace, git-ignored.",
            },
            {"label": "Outside $WS", "description": "E.g. ~/dev/jcode. Tell me the path."},
        ],
        "multiSelect": False,
    },
    {
        "question": HOW_MUCH,
        "header": "Scope",
        "options": [
            {
                "label": "Full rewrite (Recommended)",
                "description": "The extension launches jcode; hermes/ goes.",
            },
            {"label": "Minimal", "description": "Only the launch command changes."},
        ],
        "multiSelect": False,
    },
]


def ask(version: str, answers: dict[str, str], wording: str) -> list[dict[str, object]]:
    """An AskUserQuestion call and the user's answers, as `version` writes them."""
    use = tool_use_record("q1", "AskUserQuestion", {"questions": QUESTIONS}, version=version)
    said = ", ".join(f'"{q}"="{a}"' for q, a in answers.items())
    top: dict[str, object] = {"questions": QUESTIONS, "answers": answers}
    if version >= "2.1":
        top["annotations"] = {}
    result = tool_result_record("q1", wording.format(said), is_error=False, top=top, version=version)
    return [prompt_record("Plan the switch to jcode", "p1", version=version), use, result]


def answers(records: list[dict[str, object]]) -> list[str]:
    messages = list(parse_chunk(jsonl(records), 0).messages)
    found = extract_sourced(messages, project_root=None, git=None)
    return [s.candidate.content for s in found if ANSWER_TAG in s.candidate.tags]


def test_options_chosen_are_decisions_with_what_they_mean() -> None:
    records = ask(
        V2_1,
        {WHERE: "$WS/jcode (Recommended)", HOW_MUCH: "Full rewrite (Recommended)"},
        "Your questions have been answered: {}. You can now continue with these answers in mind.",
    )
    records.append(text_record("m1", "Forking now.", "t1"))
    messages = list(parse_chunk(jsonl(records), 0).messages)
    found = [s.candidate for s in extract_sourced(messages, project_root=None, git=None)]
    chosen = [c for c in found if ANSWER_TAG in c.tags]
    assert [c.type for c in chosen] == [MemoryType.CONTEXT, MemoryType.CONTEXT]
    assert [c.content for c in chosen] == [
        f'Asked "{WHERE}", the user answered: $WS/jcode (Recommended) '
        "(A project folder in the workspace, git-ignored.)",
        f'Asked "{HOW_MUCH}", the user answered: Full rewrite (Recommended) '
        "(The extension launches jcode; hermes/ goes.)",
    ]


def test_an_answer_in_the_users_own_words_keeps_its_statements_not_its_questions() -> None:
    records = ask(
        V2_0,
        {
            WHERE: "it was working before, what is wrong now? was it because my migration??",
            HOW_MUCH: "DO CONVEX AUTH. LOOK AT THE DOCUMENTATION AND MAKE SURE I CAN SIGN IN",
        },
        "User has answered your questions: {}. You can now continue with the user's answers in mind.",
    )
    assert answers(records) == [
        f'Asked "{HOW_MUCH}", the user answered: '
        "DO CONVEX AUTH. LOOK AT THE DOCUMENTATION AND MAKE SURE I CAN SIGN IN"
    ]


def test_a_refused_question_settles_nothing() -> None:
    use = tool_use_record("q1", "AskUserQuestion", {"questions": QUESTIONS}, version=V2_0)
    refused = tool_result_record(
        "q1", REJECT_PROCEED, is_error=True, top=f"Error: {REJECT_PROCEED}", version=V2_0
    )
    assert answers([prompt_record("plan it", "p1", version=V2_0), use, refused]) == []


def test_a_secret_in_an_answer_is_redacted() -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    records = ask(
        V2_1,
        {WHERE: f"Use the token {secret} for the clone"},
        "Your questions have been answered: {}. You can now continue with these answers in mind.",
    )
    (note,) = answers(records)
    assert secret not in note and note.startswith(f'Asked "{WHERE}", the user answered: Use the token ')
