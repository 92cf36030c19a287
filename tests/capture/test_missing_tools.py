"""Through the real capture path: a note that a program is missing lasts until a later turn
runs or installs it, captured turn by turn (a Stop hook per turn) and in one go alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from cortex.core.model import Memory, Scope, Status
from tests.capture.test_state_supersession import capture_turns, turn

PROBE = 'echo "=== cargo ===" && cargo --version 2>&1; echo "=== rustc ===" && rustc --version 2>&1'
MISSING = (
    "=== cargo ===\n(eval):1: command not found: cargo\n=== rustc ===\n(eval):1: command not found: rustc"
)
INSTALL = (
    "brew install rust 2>&1 | tail -25; /opt/homebrew/bin/cargo --version; /opt/homebrew/bin/rustc --version"
)


def tool_notes(project: Path, turns: list[list[dict[str, object]]], *, at_once: bool = False) -> list[Memory]:
    run = [[r for t in turns for r in t]] if at_once else turns
    cx = capture_turns(project, run)
    try:
        return [
            m for m in cx.write_store(Scope.PROJECT).all_memories() if "is not installed here" in m.content
        ]
    finally:
        cx.close()


PROBE_TURN = turn(1, PROBE, MISSING, 0, "Rust is not installed: cargo and rustc are missing. Install it?")


def test_a_missing_program_is_a_gotcha(project: Path) -> None:
    notes = tool_notes(project, [PROBE_TURN])
    assert sorted(m.content.split(" is")[0] for m in notes if m.status is Status.ACTIVE) == [
        "Program `cargo`",
        "Program `rustc`",
    ]


@pytest.mark.parametrize("at_once", [False, True])
def test_a_later_turn_that_installs_it_retires_the_note(project: Path, at_once: bool) -> None:
    install = turn(2, INSTALL, "==> Installing rust\ncargo 1.96.0\nrustc 1.96.0", 0, "Rust is installed.")
    notes = tool_notes(project, [PROBE_TURN, install], at_once=at_once)
    assert len(notes) == 2
    assert all(m.status is Status.SUPERSEDED for m in notes)  # history keeps them


def test_a_later_turn_that_does_not_run_it_leaves_the_note(project: Path) -> None:
    probe = turn(1, PROBE, MISSING, 0, "Rust is not installed here.")
    other = turn(2, "ollama list", "gemma4:12b  7.5 GB", 0, "The model is there.")
    notes = tool_notes(project, [probe, other])
    assert len(notes) == 2 and all(m.status is Status.ACTIVE for m in notes)
