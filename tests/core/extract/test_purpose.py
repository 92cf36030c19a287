"""What a Bash call was for (its `description`, which Claude Code writes on nearly every call)
is said in a note that the machine lacks a program or module: "`actionlint ...` (Lint workflow
files) gave "command not found"" says what the missing tool was needed for."""

from __future__ import annotations

import pytest

from cortex.core.extract.environment import missing_tools
from cortex.core.extract.pipeline import extract_candidates
from cortex.core.extract.runs import purpose
from cortex.core.extract.transcript import ToolUse, parse_chunk
from tests.support.transcript_builders import (
    V1_0,
    V2_1,
    assistant,
    bash,
    bash_output,
    bash_result_record,
    jsonl,
    prompt_record,
    text_record,
    tool_use_record,
    user,
)

ROOT = "/home/dev/proj"


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


def test_a_background_run_keeps_the_description_of_its_launch() -> None:
    # Real shape (1.0.72): the launch has no outcome; BashOutput reports it later, by its id.
    launch = bash(
        "mailpit --smtp 127.0.0.1:1025",
        "Command running in background with ID: bash_2",
        tid="1",
        description="Start the mail catcher",
    )
    report = bash_output("2", "bash_2", "failed", 127, "zsh: command not found: mailpit")
    turn = [user("start the mail catcher"), assistant(uses=(launch,)), assistant(uses=(report,))]
    ((note, _),) = missing_tools(turn)
    assert "`mailpit --smtp 127.0.0.1:1025` (Start the mail catcher) gave" in note.content
