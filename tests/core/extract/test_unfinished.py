"""A test run or check the Bash tool stopped at its time limit has no result: that is its state.

Real shapes: Claude Code 1.0.x answers "Command timed out after 2m 0.0s" (an error result), 2.x
"Exit code 143\\nCommand timed out after 3m 0s". A session whose comprehensive VM test never
finished within the limit left nothing saying so, while an earlier "Tests passed" of the same
command stayed its state.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cortex.core.extract.runs import timed_out, without_timeout
from cortex.core.extract.structural import extract_structural
from cortex.core.model import MemoryType, Scope, Status
from cortex.core.write.state import state_keys
from tests.capture.test_state_supersession import capture_turns, turn
from tests.support.transcript_builders import assistant, bash, user

ROOT = "/home/dev/proj"
STOPPED = "Command timed out after 2m 0.0s\nbuilding '/nix/store/abc-vm-test-run-skypilot-module.drv'..."


def notes(*uses: object) -> list[tuple[str, set[str]]]:
    messages = [user("run the checks"), *(assistant(uses=(u,)) for u in uses)]  # type: ignore[arg-type]
    found = extract_structural(messages, project_root=ROOT)
    return [(c.content, state_keys(c.tags)) for c, _ in found if c.type is MemoryType.PROGRESS]


@pytest.mark.parametrize(
    ("output", "limit"),
    [
        (STOPPED, "2m 0.0s"),
        ("Exit code 143\nCommand timed out after 3m 0s\n=== smoke run ===", "3m 0s"),
        ("Error: Command timed out", ""),
        ("3 passed in 0.2s", None),
        ("error: the command timed out waiting for the lock", None),  # the program's own words
    ],
)
def test_a_call_the_bash_tool_stopped_says_its_limit(output: str, limit: str | None) -> None:
    assert timed_out(output) == limit


def test_a_check_that_did_not_finish_is_its_state_without_its_timeout_wrapper() -> None:
    found = notes(
        bash("timeout 600 nix build --cores 4 .#checks.x86_64-linux.skypilot-module", STOPPED, error=True)
    )
    assert found == [
        (
            "`nix build --cores 4 .#checks.x86_64-linux.skypilot-module` did not finish: the Bash tool "
            "stopped it after 2m 0.0s; its result is not known",
            {"command:nix build --cores 4 .#checks.x86_64-linux.skypilot-module"},
        )
    ]
    assert without_timeout("timeout -k 5 90s cargo test") == "cargo test"


def test_an_earlier_verdict_in_the_turn_is_not_current_once_the_last_run_stopped() -> None:
    found = notes(
        bash("pytest -q", "3 passed in 0.2s", tid="1"),
        bash("pytest -q", "Exit code 143\nCommand timed out after 2m 0s", error=True, tid="2"),
    )
    assert [content for content, _ in found] == [
        "`pytest -q` did not finish: the Bash tool stopped it after 2m 0s; its result is not known"
    ]


def test_a_later_run_with_an_outcome_is_the_state_and_other_commands_are_not_such_notes() -> None:
    found = notes(
        bash("nix flake check", STOPPED, error=True, tid="1"),
        bash("nix flake check", "all checks passed!", tid="2"),
        bash("curl -s http://localhost:8000/healthz", STOPPED, error=True, tid="3"),  # no test, no check
    )
    assert found == [("`nix flake check` succeeds", {"command:nix flake check"})]


def test_a_build_that_did_not_finish_is_not_failing() -> None:
    messages = [user("build it"), assistant(uses=(bash("cargo build --release", STOPPED, error=True),))]
    contents = [c.content for c, _ in extract_structural(messages, project_root=ROOT)]
    assert not any(c.startswith("Command failing") for c in contents)
    assert contents == [
        "`cargo build --release` did not finish: the Bash tool stopped it after 2m 0.0s; "
        "its result is not known"
    ]


def test_only_a_later_outcome_of_the_same_command_line_replaces_it(project: Path) -> None:
    module, simple = "nix build .#checks.module", "nix build .#checks.simple"
    cx = capture_turns(
        project,
        [
            turn(1, module, "Command timed out after 2m 0.0s", 143, "The module test is still building."),
            turn(2, simple, "", 0, "The simple VM test builds."),
        ],
    )
    try:
        memories = cx.write_store(Scope.PROJECT).all_memories()
        active = {m.content for m in memories if m.status is Status.ACTIVE}
        # Another target of the same family passing says nothing of the module test.
        assert (
            f"`{module}` did not finish: the Bash tool stopped it after 2m 0.0s; its result is not known"
            in active
        )
        assert f"`{simple}` succeeds" in active
        cx = capture_turns(
            project,
            [
                turn(1, module, "Command timed out after 2m 0.0s", 143, "The module test is still building."),
                turn(2, simple, "", 0, "The simple VM test builds."),
                turn(3, module, "", 0, "The module test builds now."),
            ],
            cx=cx,
        )
        memories = cx.write_store(Scope.PROJECT).all_memories()
        active = {m.content for m in memories if m.status is Status.ACTIVE}
        superseded = {m.content for m in memories if m.status is Status.SUPERSEDED}
        assert f"`{module}` succeeds" in active
        assert any(c.startswith(f"`{module}` did not finish") for c in superseded)
    finally:
        cx.close()
