"""Global vs project, conservatively: only statements about the user across projects are global;
feature requests and chit-chat are never preferences of any scope. And the bare word
"architecture" (praise, checklists) is no architecture memory."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cortex.core.extract.copies import without_quoted_copies
from cortex.core.extract.explicit import extract_explicit
from cortex.core.extract.markers import GLOBAL_SCOPE_MIN_CONFIDENCE, extract_lexical, score_global_confidence
from cortex.core.extract.pipeline import extract_candidates
from cortex.core.extract.signals import RULE_TAG
from cortex.core.extract.transcript import Message, parse_chunk
from cortex.core.model import Candidate, Layer, MemoryType, Scope
from tests.support.transcript_builders import jsonl, prompt_record, text_record


def said(prompt: object, reply: str = "") -> list[Message]:
    """A typed prompt (and a reply) parsed from 2.1.x records."""
    records = [prompt_record(prompt)]
    if reply:
        records.append(text_record("msg_1", reply, "a1"))
    return list(parse_chunk(jsonl(records), 0).messages)


def lexical(prompt: object, reply: str = "") -> list[Candidate]:
    return [c for c, _ in extract_lexical(said(prompt, reply))]


@pytest.mark.parametrize(
    "prompt",
    [
        "I want the Matin icon like the Journée one, with the same rounded corners.",
        [{"type": "text", "text": "I want the settings page to look like the profile page please."}],
        "I like it a lot, thanks for the quick turnaround on this one!",
        "I want you to rename every handler in the billing module to match.",
    ],
)
def test_feature_requests_and_chit_chat_are_not_preferences(prompt: object) -> None:
    assert [c for c in lexical(prompt) if c.type is MemoryType.PREFERENCE] == []


@pytest.mark.parametrize(
    "prompt",
    [
        "In this repo, I prefer small commits with imperative subject lines.",
        "I prefer small commits with imperative subject lines.",
        "Please never push to main without asking me first.",
        "I prefer tabs here because the formatter config expects them.",
    ],
)
def test_preferences_without_a_cross_project_cue_stay_in_the_project(prompt: str) -> None:
    (found,) = lexical(prompt)
    assert found.type is MemoryType.PREFERENCE
    assert found.scope is Scope.PROJECT and found.global_confidence < GLOBAL_SCOPE_MIN_CONFIDENCE


@pytest.mark.parametrize(
    "prompt",
    [
        "In all my projects I prefer small commits with imperative subject lines.",
        "I always prefer small commits with imperative subject lines.",
        "Across all my repos, please never push to main without asking me first.",
    ],
)
def test_statements_about_the_user_across_projects_go_global(prompt: str) -> None:
    (found,) = lexical(prompt)
    assert found.type is MemoryType.PREFERENCE and found.scope is Scope.GLOBAL


def test_an_explicit_preference_tag_is_scoped_the_same_way() -> None:
    messages = said(
        "[MEMORY: preference] I want the Matin icon like the Journée one.\n\n"
        "[MEMORY: preference] Answer in British English.\n\n"
        "[MEMORY: preference] In every project I want answers in British English."
    )
    scopes = [c.scope for c, _ in extract_explicit(messages)]
    assert scopes == [Scope.PROJECT, Scope.PROJECT, Scope.GLOBAL]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I always run the formatter before I commit.", 0.85),
        ("In this repo, I always run the formatter before I commit.", 0.1),
        ("I always want `ruff` before a commit.", 0.1),
        ("Could you always run the formatter before committing?", 0.1),
        ("Answer in British English.", 0.4),
    ],
)
def test_global_confidence(text: str, expected: float) -> None:
    assert score_global_confidence(text, []) == expected


@pytest.mark.parametrize(
    ("text", "name", "expected"),
    [
        # The project's name (its folder, its branch) keeps a statement here only as a word:
        # a project in `proj/`, `app/` or `work/` says nothing of these.
        ("I always use tabs, never spaces, in all my projects.", "proj", 0.85),
        ("In all my projects I write the happy path test first.", "app", 0.85),
        ("In all my projects I run a development build first.", "dev", 0.85),
        ("I always deploy medianator with the release profile.", "medianator", 0.1),
        ("In all my projects I keep my-app's lint rules.", "my-app", 0.1),
    ],
)
def test_a_project_name_counts_only_as_a_whole_word(text: str, name: str, expected: float) -> None:
    assert score_global_confidence(text, [name]) == expected


def test_a_rule_of_the_user_that_goes_global_leaves_no_project_copy() -> None:
    # The rule note quotes the sentence whole; the lexical layer's copy of it would sit in the
    # project store and repeat it in every briefing beside the global rule.
    messages = said("I always use tabs, never spaces, in all my projects.", "Understood, tabs from now on.")
    found = extract_candidates(messages, project_root="/home/dev/proj", git=None)
    assert [(c.content, c.scope) for c in found] == [
        ("The user's rule: I always use tabs, never spaces, in all my projects.", Scope.GLOBAL)
    ]
    rule = _structural(f"The user's rule: {CACHE_GOTCHA}", MemoryType.PATTERN, RULE_TAG)
    message = messages[0]
    assert without_quoted_copies([(rule, message), (LEXICAL_NOTE, message)]) == [(rule, message)]


CACHE_GOTCHA = "The problem is that the cache key ignores the locale."
LEXICAL_NOTE = Candidate(content=CACHE_GOTCHA, type=MemoryType.GOTCHA, layer=Layer.LEXICAL, confidence=0.6)


def _structural(content: str, kind: MemoryType, *tags: str) -> Candidate:
    return Candidate(content=content, type=kind, layer=Layer.STRUCTURAL, confidence=0.6, tags=tags)


def test_a_report_section_of_the_same_kind_leaves_no_lexical_copy_of_its_sentence() -> None:
    messages = said("why do the German pages show English prices?", "Found it.")
    question, answer = messages
    section = f"Root cause\n{CACHE_GOTCHA} Both pages share one entry."
    report = _structural(section, MemoryType.GOTCHA, "turn-report")
    # The section holds the sentence and goes wherever the answer goes (withdrawn, undone).
    assert without_quoted_copies([(report, answer), (LEXICAL_NOTE, answer)]) == [(report, answer)]
    # Kept: the section is a state (the next report replaces it, the finding stays), it is of
    # another type, or another message said it.
    state = replace(report, type=MemoryType.PROGRESS, tags=("turn-report", "turn-state"))
    other_type = replace(report, type=MemoryType.CONTEXT)
    for holder, said_in in ((state, answer), (other_type, answer), (report, question)):
        both = [(holder, said_in), (LEXICAL_NOTE, answer)]
        assert without_quoted_copies(both) == both


def test_a_rule_of_the_user_and_the_lexical_reading_of_its_words_are_one_note() -> None:
    # The lexical layer reads "Please always ..." as a preference and "don't use X, use Y" as a
    # rejected decision, the signals layer as the user's rule: the same sentence stored twice,
    # shown twice. A preference the rule does not quote whole stays.
    for prompt in (
        "Please always run the linter before you commit.",
        "don't use any in TypeScript here, use unknown and narrow it",
    ):
        found = extract_candidates(said(prompt, "Will do."), project_root="/home/dev/proj", git=None)
        assert [(c.type, c.content) for c in found] == [(MemoryType.PATTERN, f"The user's rule: {prompt}")]
    messages = said("I prefer small focused commits with imperative subjects.", "Noted.")
    found = extract_candidates(messages, project_root="/home/dev/proj", git=None)
    assert [c.type for c in found] == [MemoryType.PREFERENCE]


@pytest.mark.parametrize(
    "reply",
    [
        "Great architecture overall, the separation between the parser and the store is really clean.",
        "- [x] Architecture review of the new payment module with the whole team",
        "I reviewed the architecture docs and the onboarding guide for the new hires today.",
    ],
)
def test_the_bare_word_architecture_is_no_architecture_memory(reply: str) -> None:
    found = lexical("how does it look overall, any concerns left to handle?", reply)
    assert [c for c in found if c.type is MemoryType.ARCHITECTURE] == []


def test_an_architecture_statement_still_is_one() -> None:
    reply = "The architecture separates capture from recall: hooks enqueue and a worker writes the store."
    (found,) = lexical("how is this put together?", reply)
    assert found.type is MemoryType.ARCHITECTURE
