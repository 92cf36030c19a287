"""What a Bash call was for (its `description`, which Claude Code writes on nearly every call)
leads the notes about its run, in the words a later question is likely to use: "Why did the
workflow YAML check fail?" finds "Check YAML syntax: `python3 -c ...` failed ..."."""

from __future__ import annotations

import pytest

from cortex.core.extract.environment import missing_tools
from cortex.core.extract.pipeline import extract_candidates
from cortex.core.extract.runs import purpose
from cortex.core.extract.structural import extract_structural
from cortex.core.extract.transcript import ToolResult, ToolUse, parse_chunk
from cortex.core.model import MemoryType
from tests.support.transcript_builders import (
    V1_0,
    V2_1,
    assistant,
    bash,
    bash_result_record,
    jsonl,
    prompt_record,
    text_record,
    tool_use_record,
    user,
)

ROOT = "/home/dev/proj"


def gotchas(*messages: object) -> list[str]:
    found = extract_structural(list(messages), project_root=ROOT)  # type: ignore[arg-type]
    return [c.content for c, _ in found if c.type is MemoryType.GOTCHA]


@pytest.mark.parametrize(
    ("command", "description", "said"),
    [
        ("actionlint .github/workflows/*.yml", "Lint workflow files", "Lint workflow files"),
        ("pnpm build", "  Run production\n build. ", "Run production build"),
        # It only names the command: nothing to add.
        ("cargo build --release", "Run cargo build", ""),
        ("npm test", "Run the tests", ""),
        ("ls", "", ""),
        # A word the command only echoes ("Checking syntax") is not the same word.
        ('for f in *.yml; do echo "Checking syntax: $f"; done', "Check YAML syntax", "Check YAML syntax"),
    ],
)
def test_a_calls_purpose_is_its_description_unless_it_only_names_the_command(
    command: str, description: str, said: str
) -> None:
    assert purpose(bash(command, description=description)) == said


def test_a_call_without_a_description_has_no_purpose() -> None:
    assert purpose(bash("make")) == ""
    assert purpose(ToolUse("t", "Bash", {"command": "make", "description": 3}, None)) == ""


def test_a_long_description_is_clipped() -> None:
    said = purpose(bash("make", description="Build " + "everything " * 20))
    assert len(said) == 80 and said.endswith("…")


def test_a_fixed_failure_leads_with_what_the_run_was_for() -> None:
    messages = [
        user("run the script"),
        assistant(
            uses=(
                bash(
                    "python gen.py",
                    "/bin/bash: python: command not found",
                    error=True,
                    tid="1",
                    description="Generate the numbers",
                ),
            )
        ),
        assistant("The failure is because this image only ships `python3`, not `python`."),
        assistant(uses=(bash("python3 gen.py", "Sum: 307", tid="2", description="Generate again"),)),
    ]
    assert gotchas(*messages) == [
        "Generate the numbers: `python gen.py` failed (/bin/bash: python: command not found); "
        "cause: The failure is because this image only ships `python3`, not `python`; fixed"
    ]


def test_a_background_run_keeps_the_description_of_its_launch() -> None:
    # Real shape (1.0.72): BashOutput reports the failure of a launch that had a description.
    launch = bash(
        "make run-uvicorn",
        "Command running in background with ID: bash_2",
        tid="1",
        description="Start the API server",
    )
    report = ToolUse(
        "2",
        "BashOutput",
        {"bash_id": "bash_2"},
        ToolResult(
            "2", "<status>failed</status>\n<exit_code>2</exit_code>\n<stderr>\nImportError: numpy\n</stderr>"
        ),
    )
    messages = [
        user("run the server"),
        assistant(uses=(launch,)),
        assistant(uses=(report,)),
        assistant(
            "We need to downgrade NumPy to version 1.x to fix this:",
            uses=(bash('pip install "numpy<2"', "Successfully installed numpy-1.26.4", tid="3"),),
        ),
    ]
    (gotcha,) = gotchas(*messages)
    assert gotcha.startswith("Start the API server: `make run-uvicorn` failed (ImportError: numpy)")


def test_one_gotcha_for_several_errors_keeps_the_first_runs_purpose() -> None:
    messages = [
        user("build it"),
        assistant(
            uses=(
                bash(
                    "cargo build", "error: expected `;`", error=True, tid="1", description="Build the crate"
                ),
            )
        ),
        assistant("The Database struct needs to implement Clone."),
        assistant(
            uses=(
                bash(
                    "cargo build",
                    "error[E0599]: no method named `clone`",
                    error=True,
                    tid="2",
                    description="Rebuild",
                ),
            )
        ),
        assistant("The Database struct needs to implement Clone."),
        assistant(uses=(bash("cargo build", "Finished release", tid="3"),)),
    ]
    (gotcha,) = gotchas(*messages)
    assert gotcha.startswith("Build the crate: `cargo build` failed (error: expected `;` | error[E0599]")


def test_a_missing_tool_note_says_what_the_run_was_for() -> None:
    turn = [
        user("check the workflows"),
        assistant(
            uses=(
                bash(
                    "actionlint .github/workflows/*.yml",
                    "(eval):1: command not found: actionlint",
                    tid="1",
                    description="Lint workflow files",
                ),
            )
        ),
    ]
    ((note, _),) = missing_tools(turn)
    assert note.content == (
        "Program `actionlint` is not installed here (or not on PATH): "
        '`actionlint .github/workflows/*.yml` (Lint workflow files) gave "command not found"'
    )


@pytest.mark.parametrize("version", [V1_0, V2_1])
def test_the_description_is_read_from_the_records_and_redacted(version: str) -> None:
    token = "ghp_" + "Zq8xN2vB7kLm4Pw9Rt6Yc3Hd5Jf1Gs0Ua8Ee"
    records = [
        prompt_record("check the workflows", version=version),
        tool_use_record(
            "t1",
            "Bash",
            {
                "command": "actionlint .github/workflows/*.yml",
                "description": f"Lint workflows (token {token})",
            },
            version=version,
        ),
        bash_result_record("t1", "(eval):1: command not found: actionlint", exit_code=127, version=version),
        text_record("m2", "actionlint is not installed.", "a2", version=version),
    ]
    messages = parse_chunk(jsonl(records), 0).messages
    found = [c.content for c in extract_candidates(messages, project_root=ROOT, git=None)]
    (note,) = [c for c in found if c.startswith("Program `actionlint`")]
    assert "(Lint workflows (token [REDACTED" in note
    assert token not in note
