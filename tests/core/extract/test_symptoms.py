"""A gotcha found in a turn whose prompt reports a problem names that problem (real shapes: a
Rust web UI that showed "Error loading page", Claude Code 1.0.x)."""

from __future__ import annotations

from cortex.core.extract.pipeline import extract_candidates
from cortex.core.extract.symptoms import PREFIX, reported_symptom
from cortex.core.extract.transcript import parse_chunk
from cortex.core.model import MemoryType
from tests.support.transcript_builders import V1_0, jsonl, prompt_record, text_record, user

REPORT = 'I\'m getting an "Error loading page" error when I go to the UI'
FINDING = (
    "The issue is that the HTML file references `/static/styles.css` but with the new fallback "
    "service setup, the files should be directly accessible from the root path."
)


def gotchas(prompt: str, answer: str) -> list[str]:
    records = [
        prompt_record(prompt, uuid="p1", version=V1_0),
        text_record("msg_1", answer, "a1", version=V1_0),
    ]
    messages = parse_chunk(jsonl(records), 0).messages
    found = extract_candidates(messages, project_root="/work/medianator", git=None)
    return [c.content for c in found if c.type is MemoryType.GOTCHA]


def test_a_finding_names_the_problem_the_prompt_reported() -> None:
    [found] = gotchas(REPORT, FINDING)
    assert found == f'{PREFIX}"{REPORT}". {FINDING}'


def test_without_a_reported_problem_the_finding_is_as_it_was() -> None:
    [found] = gotchas("Add a reprocess button to the media detail page", FINDING)
    assert found == FINDING


def test_only_a_short_report_in_the_users_words_is_a_symptom() -> None:
    assert reported_symptom(user(REPORT)) == REPORT
    assert reported_symptom(user("CONVEX AUTH NOT WORKING???")) == "CONVEX AUTH NOT WORKING???"
    assert reported_symptom(user("The build fails with exit code 101 on the CI runner")) is not None
    error = 'error: failed to select a version for the requirement `ort = "^2.0"`'
    pasted = f"Now I'm getting this error:\n{error}\n..."
    assert reported_symptom(user(pasted)) == (f"Now I'm getting this error: {error}")
    # Pasted output, a long request, a feature request, a question about code: not reports.
    assert (
        reported_symptom(user("(base) ➜  golfgod git:(main) ✗ npx convex dev ✖ Error: Unable to push"))
        is None
    )
    assert (
        reported_symptom(user("~/Projects/medianator ❯ cargo run --release  error: failed to select")) is None
    )
    long = "Please refactor the error handling in the scanner so that " + "every module " * 10 + "fails fast"
    assert reported_symptom(user(long)) is None
    assert reported_symptom(user("I want the Matin icon like the Journée one")) is None
    assert reported_symptom(user("How does the duplicate detector group files?")) is None
