"""Layer 3: marker sentences scored, hedged, capped; preferences and their scope."""

from __future__ import annotations

import pytest

from cortex.core.extract.markers import (
    LEXICAL_MIN_SCORE,
    MAX_LEXICAL_PER_CHUNK,
    extract_lexical,
    score_global_confidence,
    score_sentence,
)
from cortex.core.extract.transcript import Message, Role
from cortex.core.model import Candidate, Layer, MemoryType, Scope
from tests.support.transcript_builders import assistant, user

A, U = Role.ASSISTANT, Role.USER
DEC, GOT, PAT = MemoryType.DECISION, MemoryType.GOTCHA, MemoryType.PATTERN
ARC, PREF = MemoryType.ARCHITECTURE, MemoryType.PREFERENCE


def kept(sentence: str, role: Role = A) -> MemoryType | None:
    scored = score_sentence(sentence, role)
    return scored.type if scored and scored.score >= LEXICAL_MIN_SCORE else None


def lexical(*messages: Message, words: frozenset[str] = frozenset()) -> list[Candidate]:
    return [c for c, _ in extract_lexical(list(messages), project_words=words)]


@pytest.mark.parametrize(
    ("sentence", "role", "expected"),
    [
        ("We decided to store offsets in bytes because JSONL lines are UTF-8.", A, DEC),
        ("We chose Postgres advisory locks for the job queue.", U, DEC),
        ("Let's go with sqlean.py since the pyenv Python cannot load extensions.", U, DEC),
        ("We settled on FTS5 with a trigram tokenizer for code search.", A, DEC),
        ("We chose ONNX over torch for queries because import takes 5.6 s.", A, DEC),
        ("We ruled out Chroma because it needs a server process.", A, DEC),
        ("Going with Zod for validation since it already ships with the tRPC setup.", A, DEC),
        ("Chose to keep the REST API rather than GraphQL: the mobile app depends on it.", A, DEC),
        ("The tests must run with TZ=UTC, otherwise the date-parser tests fail.", A, GOT),
        ("Turns out `json.loads` raises RecursionError on deeply nested input.", A, GOT),
        ("The root cause was a missing busy_timeout in `db.py`.", A, GOT),
        ("Watch out: FlashRank downloads its model with no timeout.", A, GOT),
        ("The worker fails silently when the transcript is rotated.", A, GOT),
        ("By convention every core module opens with a one-line docstring.", A, PAT),
        ("Always use `tmp_path` for SQLite files in tests.", A, PAT),
        ("The engine is responsible for gathering inputs from the shell.", A, ARC),
        ("Data flows from the Stop hook to a detached worker, then the store.", A, ARC),
        ("I prefer small commits with imperative subject lines.", U, PREF),
        ("Please never push to main without asking me first.", U, PREF),
        # not kept: no marker, hedged, a question, narration, too short
        ("The parser reads the file line by line and yields records.", A, None),
        ("The page loads the list first, otherwise it shows the empty state.", A, None),
        ("Maybe we should probably use Redis here, I think.", A, None),
        ("Should we use Redis for the queue?", A, None),
        ("Let me check what the convention is in this repo:", A, None),
        ("We decided.", A, None),
        ("Let's go with option B.", U, None),  # the choice is in the message before it
        ("Added the three conventions to CLAUDE.md under Conventions.", A, None),  # what it did
        ("Ok, let's go with the second one.", U, None),
        ("We went with plan B for the rollout because the deadline moved.", U, DEC),
        ("I prefer small commits with imperative subject lines.", A, None),  # only users have prefs
        # An option's pros and cons weigh a choice the user may not make.
        ("Cons: breaks when we run more than one server", A, None),
        ("**Pros:** never fails on a cold start, because the model ships in the wheel", A, None),
        ("The upload breaks when we run more than one server.", A, GOT),
    ],
)  # fmt: skip
def test_sentence_scoring(sentence: str, role: Role, expected: MemoryType | None) -> None:
    assert kept(sentence, role) is expected


def test_specific_and_causal_sentences_score_higher() -> None:
    plain = score_sentence("We decided to change the storage format.", A)
    specific = score_sentence(
        "We decided to change `cortex/shell/store.py` to store 384 floats because of sqlite-vec.", A
    )
    assert plain is not None and specific is not None
    assert specific.score > plain.score


def test_code_quotes_and_tables_are_not_prose() -> None:
    text = (
        "```python\n# We decided to use eval here because it is fast.\n```\n\n"
        "> We decided to drop Windows support because nobody uses it.\n\n"
        "| We decided | to use tables because they are neat |\n\n"
        "    We decided to indent this because it is code.\n"
    )
    assert lexical(assistant(text)) == []


def test_a_log_pasted_into_a_prompt_is_not_the_users_words() -> None:
    # A tool's advice in the log ("make sure to ...") is not a gotcha of the project's.
    log = (
        "the vercel build fails:\n"
        "15:12:06.526 Error: No address provided to ConvexReactClient.\n"
        "15:12:06.527 If trying to deploy to production, make sure to follow all the instructions "
        "found at https://docs.convex.dev/production/hosting/\n"
        "15:12:06.527 If running locally, make sure to run `convex dev` and ensure the .env.local "
        "file is populated."
    )
    assert lexical(user(log)) == []


def test_candidates_have_lexical_shape() -> None:
    (found,) = lexical(assistant("Some intro. We ruled out Chroma because it needs a server process."))
    assert found.layer is Layer.LEXICAL and found.type is MemoryType.DECISION
    assert found.content == "We ruled out Chroma because it needs a server process."
    assert "rejected" in found.tags
    assert 0.5 <= found.confidence <= 0.8 and found.priority == 6


def test_a_sentence_that_leans_on_the_previous_one_keeps_it() -> None:
    (found,) = lexical(
        assistant("So `current_span_ctx()` returns the record directly. That's the bug in our helper.")
    )
    assert found.content.startswith("So `current_span_ctx()` returns the record directly.")


def test_a_because_follow_up_is_kept_with_its_sentence() -> None:
    (found,) = lexical(assistant("We decided to pin torch to the CPU wheel. Because the CUDA wheel is 2 GB."))
    assert found.content.endswith("Because the CUDA wheel is 2 GB.")


def test_general_preferences_go_global_and_specific_ones_stay() -> None:
    found = lexical(
        user(
            "In all my projects I prefer short answers without bullet lists. "
            "I prefer `ruff` over black in cortex."
        )
    )
    general, specific = sorted(found, key=lambda c: "ruff" in c.content)
    assert general.scope is Scope.GLOBAL and general.global_confidence >= 0.8
    assert specific.scope is Scope.PROJECT and specific.global_confidence < 0.5


def test_project_words_make_a_preference_project_specific() -> None:
    (found,) = lexical(user("I always prefer that spotter logs stay quiet."), words=frozenset({"spotter"}))
    assert found.scope is Scope.PROJECT
    assert score_global_confidence("I always prefer quiet logs.", ["spotter"]) > 0.8


def test_candidates_per_chunk_are_capped_best_first() -> None:
    sentences = [f"We decided to use option number {i} for module {i}." for i in range(30)]
    sentences.append("We decided to use `uv` for installs because pip resolution takes 40 s here.")
    found = lexical(assistant(" ".join(sentences)))
    assert len(found) == MAX_LEXICAL_PER_CHUNK
    assert found[0].content.startswith("We decided to use `uv`")
