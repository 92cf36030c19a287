"""Extraction end to end: explicit tags, /remember, redaction first, branch and file context."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex.core.extract.explicit import parse_memory_tags, parse_memory_type
from cortex.core.extract.pipeline import (
    DEFAULT_LAYERS,
    GitContext,
    extract_candidates,
    extract_sourced,
    project_relative,
)
from cortex.core.extract.transcript import Message, Role, SlashCommand, ToolResult, ToolUse, parse_chunk
from cortex.core.model import Candidate, Layer, MemoryType, Scope
from tests.support.secrets_corpus import ANTHROPIC_KEY, SECRETS
from tests.support.transcript_builders import FIXTURES, assistant, bash, fixture_files, tool, user

ROOT = "/home/dev/proj"


def extract(
    *messages: Message,
    git: GitContext | None = None,
    include_layers: Collection[Layer] = DEFAULT_LAYERS,
) -> list[Candidate]:
    return extract_candidates(list(messages), project_root=ROOT, git=git, include_layers=include_layers)


# --- layer 1: explicit tags ----------------------------------------------------------------------


D, G, P, C = MemoryType.DECISION, MemoryType.GOTCHA, MemoryType.PATTERN, MemoryType.CONTEXT


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[MEMORY: decision] Use SQLite in WAL mode.", [(D, "Use SQLite in WAL mode.")]),
        ("[memory:Gotcha] -W error fails on warnings", [(G, "-W error fails on warnings")]),
        ("[MEMORY: convention] Tests mirror the package.", [(P, "Tests mirror the package.")]),
        ("[MEMORY: bug] Offsets are bytes.", [(G, "Offsets are bytes.")]),
        ("[MEMORY: arch] Core is pure.", [(MemoryType.ARCHITECTURE, "Core is pure.")]),
        ("[MEMORY: todo] Wire the worker.", [(MemoryType.PROGRESS, "Wire the worker.")]),
        ("[MEMORY: status] Half done.", [(MemoryType.PROGRESS, "Half done.")]),
        ("[MEMORY: pref] Short answers.", [(MemoryType.PREFERENCE, "Short answers.")]),
        ("[MEMORY: whatever] Unknown is context.", [(C, "Unknown is context.")]),
        ("[MEMORY] No type at all.", [(C, "No type at all.")]),
        (
            "[MEMORY: decision]\nNext line,\nand after.\n\nNot this.",
            [(D, "Next line,\nand after.")],
        ),
        ("[MEMORY: decision] one [MEMORY: gotcha] two", [(D, "one"), (G, "two")]),
        ("[MEMORY: decision]   \n\n", []),
    ],
)
def test_memory_tags(text: str, expected: list[tuple[MemoryType, str]]) -> None:
    assert parse_memory_tags(text) == expected


def test_tags_inside_code_and_quotes_are_examples_not_memories() -> None:
    # The skills teach the syntax with examples like these; they must not be stored.
    text = (
        "Write tags like this:\n\n```\n[MEMORY: decision] example inside a fence\n```\n\n"
        "or inline: `[MEMORY: gotcha] example inline`.\n\n"
        "> [MEMORY: pattern] a quoted example\n\n"
        "[MEMORY: decision] The real one."
    )
    assert parse_memory_tags(text) == [(MemoryType.DECISION, "The real one.")]


def test_tag_text_is_capped() -> None:
    ((_, body),) = parse_memory_tags("[MEMORY: context] " + "word " * 1000)
    assert len(body) <= 1500


@pytest.mark.parametrize("name", ["Decision", " DECISIONS ", "decision"])
def test_type_names_are_case_insensitive(name: str) -> None:
    assert parse_memory_type(name) is MemoryType.DECISION


def test_explicit_tags_from_user_and_assistant_become_high_confidence_candidates() -> None:
    found = extract(
        user("[MEMORY: preference] Answer in British English."),
        assistant("Noted.\n\n[MEMORY: decision] Store offsets in bytes because JSONL is UTF-8."),
    )
    explicit = [c for c in found if c.layer is Layer.EXPLICIT]
    assert [(c.type, c.content) for c in explicit] == [
        (MemoryType.PREFERENCE, "Answer in British English."),
        (MemoryType.DECISION, "Store offsets in bytes because JSONL is UTF-8."),
    ]
    assert all(c.confidence == 0.9 and c.priority == 7 for c in explicit)
    assert explicit[0].scope is Scope.PROJECT  # nothing says it reaches beyond this project
    assert explicit[1].summary == "Store offsets in bytes because JSONL is UTF-8."


def test_tagged_text_is_not_extracted_again_by_the_lexical_layer() -> None:
    found = extract(assistant("[MEMORY: decision] We decided to use uv because pip is slow here."))
    assert [c.layer for c in found] == [Layer.EXPLICIT]


# --- /remember -----------------------------------------------------------------------------------


def test_remember_command_echo() -> None:
    message = Message(
        Role.USER,
        ("u",),
        10,
        command=SlashCommand("/cortex:remember", "--type gotcha --pin The CI box has no GPU"),
    )
    (found,) = extract(message)
    assert (found.layer, found.type, found.content) == (
        Layer.USER,
        MemoryType.GOTCHA,
        "The CI box has no GPU",
    )
    assert found.pinned and found.confidence == 0.95


def test_remember_typed_as_text_with_a_tag_and_global_flag() -> None:
    (found,) = extract(user("/remember --global [MEMORY: pref] I like terse commit messages"))
    assert found.type is MemoryType.PREFERENCE and found.scope is Scope.GLOBAL
    assert found.content == "I like terse commit messages"


def test_asking_in_words_to_remember_is_a_remember() -> None:
    # What users type when they expect a memory: the sentence they ask to keep, once.
    for said, kind, kept in (
        (
            "please remember that staging uses the eu-west-1 region",
            MemoryType.CONTEXT,
            "staging uses the eu-west-1 region",
        ),
        (
            "Remember: we always use pnpm, never npm.\n\nNow fix the build.",
            MemoryType.PATTERN,
            "we always use pnpm, never npm.",
        ),
        (
            "ok, keep in mind that the payments API allows 100 requests a minute",
            MemoryType.CONTEXT,
            "the payments API allows 100 requests a minute",
        ),
        (
            "for future reference, the prod database is read-only from laptops",
            MemoryType.CONTEXT,
            "the prod database is read-only from laptops",
        ),
    ):
        found = extract(user(said), assistant("Noted."))
        assert [(c.layer, c.type, c.content) for c in found] == [(Layer.USER, kind, kept)], said
    # The rest of the message is read as any prompt is: a rule after it is the user's rule.
    found = extract(
        user("Remember that the CI runners have no Docker. Always run integration tests locally.")
    )
    assert {c.content for c in found} == {
        "the CI runners have no Docker.",
        "The user's rule: Always run integration tests locally.",
    }
    # The ask may come after what it asks to keep: closing its sentence, or standing alone.
    for said, kept in (
        (
            "great. also the staging deploy needs the env var STRIPE_WEBHOOK_SECRET, remember that",
            "the staging deploy needs the env var STRIPE_WEBHOOK_SECRET",
        ),
        ("Staging runs Postgres on port 5433. Remember that.", "Staging runs Postgres on port 5433."),
        ("the prod bucket is versioned - keep that in mind!", "the prod bucket is versioned"),
        ("Remember this: the mobile app pins API v2.", "the mobile app pins API v2."),
    ):
        found = extract(user(said), assistant("Noted."))
        assert [(c.layer, c.content) for c in found] == [(Layer.USER, kept)], said
    found = extract(user("The API key lives in 1Password, remember that. Always run the linter first."))
    assert {c.content for c in found} == {
        "The API key lives in 1Password",
        "The user's rule: Always run the linter first.",
    }
    # The ask closes its own sentence only, where the splitter saw one sentence.
    found = extract(
        user("use pnpm not npm for installs from now on. also the bucket is acme-prod, remember that")
    )
    assert {c.content for c in found} == {
        "the bucket is acme-prod",
        "The user's rule: use pnpm not npm for installs from now on.",
    }
    # A question, a reminder for this session or nothing to keep asks for no memory.
    for said in (
        "don't forget that bug from yesterday?",
        "Remember to run the migrations",
        "remember that too",
        "can you fix the login page, remember that?",
        "Remember that.",
        "ok. remember that",
    ):
        assert extract(user(said), assistant("Sure.")) == [], said
    said = extract(
        user("set up the tests"),
        assistant(
            "Remember that the integration tests need Docker running. "
            "The compose file starts Postgres on port 5433 for them."
        ),
    )
    assert said and all(c.layer is not Layer.USER for c in said)  # the user asks, not the model


def test_a_report_paragraph_that_is_one_decision_is_typed_a_decision() -> None:
    # The report layer keeps the paragraph untyped, the lexical layer reads the same words as a
    # decision: one note, with the type.
    said = "We'll use httpx instead of requests, because the crawler needs async support.\n\nAll tests pass."
    (found,) = extract(user("continue"), assistant(said))
    assert found.type is MemoryType.DECISION and "turn-report" in found.tags
    assert found.content == "We'll use httpx instead of requests, because the crawler needs async support."
    # A paragraph the lexical layer does not type stays context.
    (plain,) = extract(
        user("continue"),
        assistant(
            "The crawler fetches 40 pages a second on one core and keeps 200 connections open at most."
            "\n\nDone."
        ),
    )
    assert plain.type is MemoryType.CONTEXT


def test_other_commands_are_not_memories() -> None:
    message = Message(Role.USER, ("u",), 1, command=SlashCommand("/compact", "keep it short"))
    assert extract(message) == []


# --- redaction, branch, files, dedupe -----------------------------------------------------------


def test_text_is_redacted_before_any_layer_sees_it() -> None:
    found = extract(
        assistant(f"[MEMORY: gotcha] The staging key is {ANTHROPIC_KEY} and it expires monthly."),
        assistant("[MEMORY: context] The deploy host is <private>10.0.0.7</private> behind the VPN."),
    )
    joined = "\n".join(c.content + c.summary for c in found)
    assert ANTHROPIC_KEY not in joined and "10.0.0.7" not in joined
    assert "[REDACTED:anthropic]" in joined


def test_secrets_in_tool_calls_and_output_never_reach_candidates() -> None:
    command = f"git commit -m 'rotate {ANTHROPIC_KEY}'"
    use = ToolUse(
        "t", "Bash", {"command": command}, ToolResult("t", f"[main abc1234] rotate {ANTHROPIC_KEY}")
    )
    found = extract(user("please commit the rotation"), assistant(uses=(use,)))
    assert found and all(ANTHROPIC_KEY not in c.content for c in found)


def test_branch_tag_comes_from_the_message_then_git() -> None:
    (on_message,) = extract(assistant("[MEMORY: decision] Use uv.", branch="feature/x"))
    assert "branch:feature/x" in on_message.tags
    (from_git,) = extract(assistant("[MEMORY: decision] Use uv.", branch=None), git=GitContext(branch="main"))
    assert "branch:main" in from_git.tags
    (detached,) = extract(assistant("[MEMORY: decision] Use uv.", branch="HEAD"))
    assert not any(t.startswith("branch:") for t in detached.tags)


def test_mentioned_files_are_made_project_relative_and_resolved_through_changed_files() -> None:
    git = GitContext(branch="main", changed_files=("cortex/shell/db.py", "README.md"))
    (found,) = extract(
        assistant(f"[MEMORY: gotcha] db.py must set busy_timeout before {ROOT}/cortex/cli.py opens it."),
        git=git,
    )
    assert found.files == ("cortex/shell/db.py", "cortex/cli.py")


def test_paths_inside_the_project_are_written_relative_to_its_root() -> None:
    report = (
        f"## Files Created\n- `{ROOT}/docs/phase2-plan.md` holds the plan\n"
        f"- `{ROOT}/src/utils/date-parser.ts` parses relative dates in local time"
    )
    found = extract(assistant(report))
    assert found, "the report is a note"
    assert all(ROOT not in c.content for c in found)
    assert any("`docs/phase2-plan.md`" in c.content for c in found)
    # A folder beside the project, a tag the user wrote and a Windows root.
    assert project_relative(f"{ROOT}-old/x.py and {ROOT}/x.py", ROOT) == f"{ROOT}-old/x.py and x.py"
    # The root itself, as git quotes it in an error, is `.`; a sentence's full stop leaves it be.
    git_error = 'Path "flake.nix" in the repository "{}" is not tracked by Git.'
    assert project_relative(git_error.format(ROOT), ROOT) == git_error.format(".")
    assert project_relative(f"cd {ROOT}/ && make, then {ROOT}.bak", ROOT) == f"cd . && make, then {ROOT}.bak"
    assert project_relative(f"ran in {ROOT}.", ROOT) == f"ran in {ROOT}."
    (tagged,) = extract(assistant(f"[MEMORY: gotcha] {ROOT}/cortex/cli.py opens the store twice"))
    assert ROOT in tagged.content
    windows = "C:/Users/Ana/app"
    assert project_relative(r"see c:\users\ana\app\src\main.rs", windows) == r"see src\main.rs"
    assert project_relative("/home/ana/x.py", "/home") == "/home/ana/x.py"


def test_duplicates_across_messages_collapse_to_one() -> None:
    found = extract(
        assistant("[MEMORY: decision] Use uv."),
        assistant("[MEMORY: decision]   use UV."),
    )
    assert len(found) == 1


def test_layers_can_be_switched_off() -> None:
    messages = (
        user("please fix the parser"),
        assistant(
            "[MEMORY: decision] Use uv.",
            uses=(tool("Edit", {"file_path": f"{ROOT}/a.py"}),),
        ),
    )
    assert {c.layer for c in extract(*messages)} == {Layer.EXPLICIT, Layer.STRUCTURAL}
    only = extract(*messages, include_layers={Layer.STRUCTURAL})
    assert {c.layer for c in only} == {Layer.STRUCTURAL}


def test_sourced_candidates_carry_offset_session_and_branch() -> None:
    message = Message(
        Role.ASSISTANT,
        ("a",),
        4242,
        texts=("[MEMORY: decision] Use uv.",),
        session_id="s1",
        git_branch="dev",
    )
    (sourced,) = extract_sourced([message], project_root=ROOT, git=None)
    assert (sourced.end_offset, sourced.session_id, sourced.branch) == (4242, "s1", "dev")


# --- the real transcripts ------------------------------------------------------------------------

EXPECTED_COUNTS = {  # each turn's closing report adds its sections
    "sample_main_transcript.jsonl": (5, 12),
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl": (15, 40),
}


@pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"shared transcript fixtures not found at {FIXTURES}")
@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: p.name)
def test_real_transcripts_give_a_sane_number_of_candidates(path: Path) -> None:
    chunk = parse_chunk(path.read_bytes(), 0)
    root = next((m.cwd for m in chunk.messages if m.cwd), None)
    found = extract_candidates(chunk.messages, project_root=root, git=None)
    low, high = EXPECTED_COUNTS.get(path.name, (0, 5))
    assert low <= len(found) <= high
    for candidate in found:
        assert candidate.content and candidate.summary
        assert 0 < candidate.confidence <= 1 and 1 <= candidate.priority <= 10
        assert all(not f.startswith("/") for f in candidate.files)


# --- invariants ----------------------------------------------------------------------------------

texts = st.one_of(
    st.text(max_size=200),
    st.sampled_from(
        [
            "[MEMORY: decision] We decided to use uv because pip is slow.",
            "```\n[MEMORY: gotcha] fenced\n```",
            "The root cause was a race in `worker.py` because two sessions wrote at once.",
            "I prefer short answers. Please always run the tests.",
            "<private>never store this</private> and this is fine",
            "<PRIVATE>unclosed secret tail",
        ]
    ),
    st.sampled_from([s.text for s in SECRETS]),
)
results = st.builds(
    ToolResult,
    tool_use_id=st.just("t"),
    content=texts,
    is_error=st.booleans(),
    rejected=st.booleans(),
    exit_code=st.none() | st.integers(-1, 255),
)
tool_uses = st.builds(
    ToolUse,
    id=st.just("t"),
    name=st.sampled_from(["Bash", "Edit", "Write", "Read", "Other"]),
    input=st.dictionaries(
        st.sampled_from(["command", "file_path", "content", "x"]), st.one_of(texts, st.integers())
    ),
    result=st.none() | results,
)
messages = st.builds(
    Message,
    role=st.sampled_from(Role),
    uuids=st.just(("u",)),
    end_offset=st.integers(0, 10**6),
    texts=st.lists(texts, max_size=3).map(tuple),
    tool_uses=st.lists(tool_uses, max_size=3).map(tuple),
    command=st.none() | st.builds(SlashCommand, st.sampled_from(["/remember", "/x"]), texts),
    git_branch=st.none() | st.sampled_from(["main", "feature/x", "HEAD"]),
    # A compaction summary whose "Errors and fixes" items quote anything, secrets included.
    compacted=st.just("") | texts.map(lambda t: f"4. Errors and fixes:\n   - **Build error**: {t}\n   - {t}"),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(messages, max_size=6), st.none() | st.sampled_from([ROOT, "/", ""]))
def test_extraction_never_raises_and_never_leaks(batch: list[Message], root: str | None) -> None:
    found = extract_candidates(batch, project_root=root, git=GitContext(changed_files=("a.py",)))
    for candidate in found:
        blob = "\n".join([candidate.content, candidate.summary, *candidate.tags, *candidate.files])
        assert "never store this" not in blob and "unclosed secret tail" not in blob
        for sample in SECRETS:
            assert sample.secret not in blob


def test_a_failure_and_its_fix_rank_above_report_prose_and_labelled_lines() -> None:
    # One turn with all three: the failure and fix rest on what happened; a report section is
    # prose; a labelled line is a fragment of a section kept whole beside it.
    failing = bash("make run", "ImportError: numpy.core.multiarray failed to import", error=True, tid="1")
    report = (
        "## Startup crash\n"
        "The server crashed at import because transformers was built against NumPy 1.x, so "
        "NumPy 2 breaks it at startup on this Python.\n\n"
        "Note: pin numpy below 2 in every environment that runs the scanner service"
    )
    found = extract(
        user("start the server"),
        assistant(uses=(failing,)),
        assistant("The crash is because NumPy 2 is installed; it must be below 2."),
        assistant(uses=(bash('pip install "numpy<2"', "", tid="2"), bash("make run", "ready", tid="3"))),
        assistant(report),
    )

    def rank(start: str) -> float:  # the briefing's rank key (default weights, no centrality)
        (c,) = [c for c in found if c.content.startswith(start)]
        return 0.5 * c.confidence + 0.2 * c.priority / 10

    failure, section = rank("`make run` failed"), rank("Startup crash\n")
    item = rank("Startup crash: pin numpy below 2")
    assert failure > section > item
