"""A run whose status a pipe hid (`cargo build 2>&1 | tail -3`) is judged by its output, both
ways: "error: could not compile" is a failure like any other, and a builder's last words
("Finished `release` profile ... target(s) in 4.69s") a success. Real shapes: most builds in a
real Rust session were piped through `tail`, `head` or `grep`, so their failures, and what fixed
them, left no gotcha, and their successes no state.
"""

from __future__ import annotations

from pathlib import Path

from cortex.core.extract.failure_words import only_cause
from cortex.core.extract.failures import command_family
from cortex.core.extract.structural import extract_structural
from cortex.core.model import MemoryType, Scope, Status
from cortex.core.write.state import state_keys
from tests.capture.test_state_supersession import capture_turns, turn
from tests.support.transcript_builders import assistant, bash, user

ROOT = "/home/dev/proj"
BROKEN = (
    "error[E0599]: no method named `clone` found for struct `Database`\nerror: could not compile `app` (lib)"
)
BUILT = "warning: unused import\n    Finished `release` profile [optimized] target(s) in 4.69s"


def found(*messages: object) -> list[tuple[MemoryType, str]]:
    out = extract_structural(list(messages), project_root=ROOT)  # type: ignore[arg-type]
    return [(c.type, c.content) for c, _ in out]


def test_a_failure_a_pipe_hid_is_a_gotcha_with_its_fix() -> None:
    notes = found(
        user("build it"),
        assistant(uses=(bash("cargo build --release 2>&1 | tail -3", BROKEN, tid="1"),)),
        assistant("The Database struct needs to implement Clone."),
        assistant(uses=(bash("cargo build --release 2>&1 | tail -3", BUILT, tid="2"),)),
    )
    assert (
        MemoryType.GOTCHA,
        "`cargo build --release` failed (error[E0599]: no method named `clone` found for struct `Database` / "
        "error: could not compile `app` (lib)); fix: The Database struct needs to implement Clone.",
    ) in notes
    assert (MemoryType.PROGRESS, "`cargo build --release` succeeds") in notes


def test_a_piped_run_without_the_builders_last_words_says_nothing() -> None:
    # `head` cut the output before the end: neither a failure nor a success.
    notes = found(
        user("build it"),
        assistant(uses=(bash("cargo build 2>&1 | head -5", "   Compiling app v0.1.0 (/src/app)", tid="1"),)),
    )
    assert notes == []


def test_a_line_of_several_steps_is_the_family_of_its_main_step() -> None:
    assert command_family("touch app.db && DATABASE_URL=x cargo build --release") == "cargo build"
    assert command_family("source .venv/bin/activate && pytest -q") == "pytest"
    assert command_family("npm install && npm run build") == "npm run build"
    assert command_family("git add -A && git commit -m 'x'") == "git add"  # no check: the first step
    assert command_family("cargo check 2>&1") == "cargo check"  # a redirection is no part of it


def test_a_failure_not_seen_fixed_says_fixed_later_once_its_command_passes(project: Path) -> None:
    fails = "error[E0599]: no method named `clone` found for struct `Database`"
    cx = capture_turns(
        project,
        [
            turn(1, "cargo build", fails, 101, "The Database struct needs to implement Clone."),
            turn(2, "cargo test", "test result: ok. 3 passed; 0 failed", 0, "The tests pass."),
        ],
    )
    try:
        store = cx.write_store(Scope.PROJECT)
        (gotcha,) = [m for m in store.all_memories() if m.content.startswith("`cargo build` failed")]
        # Another command passing says nothing of the build: it is still its failing state.
        assert gotcha.status is Status.ACTIVE and "fixed later" not in gotcha.content
        assert state_keys(gotcha.tags) == {"command:cargo build"}
        cx = capture_turns(
            project,
            [
                turn(1, "cargo build", fails, 101, "The Database struct needs to implement Clone."),
                turn(2, "cargo test", "test result: ok. 3 passed; 0 failed", 0, "The tests pass."),
                turn(3, "cargo build", BUILT, 0, "It builds."),
            ],
            cx=cx,
        )
        store = cx.write_store(Scope.PROJECT)
        (gotcha,) = [m for m in store.all_memories() if m.content.startswith("`cargo build` failed")]
        assert gotcha.status is Status.ACTIVE  # the error and its cause are still the knowledge
        assert gotcha.content == (
            "`cargo build` failed (error[E0599]: no method named `clone` found for struct `Database`); "
            "fix: The Database struct needs to implement Clone; fixed later"
        )
        assert state_keys(gotcha.tags) == set() and gotcha.priority == 4
        active = {m.content for m in store.all_memories() if m.status is Status.ACTIVE}
        assert "`cargo build` succeeds" in active
    finally:
        cx.close()


def test_a_compilers_diagnostic_of_the_code_ranks_below_a_failure_of_the_environment() -> None:
    def gotcha(command: str, output: str, why: str) -> tuple[str, int]:
        messages = [
            user("run it"),
            assistant(uses=(bash(command, output, error=True, tid="1"),)),
            assistant(why),
            assistant(uses=(bash(command, "ok", tid="2"),)),
        ]
        (note,) = [
            c for c, _ in extract_structural(messages, project_root=ROOT) if c.type is MemoryType.GOTCHA
        ]
        return note.content, note.priority

    # Fixed by the next edit: seldom what a later session needs.
    assert gotcha("cargo check", BROKEN, "The Database struct needs to implement Clone.")[1] == 4
    assert (
        gotcha(
            "npx tsc --noEmit",
            "src/a.ts(1,1): error TS2304: Cannot find name 'x'.",
            "The types need to be regenerated.",
        )[1]
        == 4
    )
    # The machine or the project's setup: what the next session runs into again.
    port = gotcha(
        "./target/release/app",
        "Error: Address already in use (os error 48)",
        "Port 3000 is still in use by the old server.",
    )
    assert port[1] == 5 and "Address already in use" in port[0]


def test_a_failure_with_only_its_cause_is_replaced_once_its_command_passes(project: Path) -> None:
    # "A failure later fixed is stored as the fix, or not at all": this one says why it failed
    # and nothing of how it was fixed, so the passing run is its word (history keeps it).
    fails = "error: set `DATABASE_URL` to use query macros online, or run `cargo sqlx prepare`"
    why = "The issue is with SQLx compile-time checking of the query macros."
    turns = [turn(1, "cargo build --release", fails, 101, why)]
    cx = capture_turns(project, turns)
    try:
        store = cx.write_store(Scope.PROJECT)
        (gotcha,) = [
            m for m in store.all_memories() if m.content.startswith("`cargo build --release` failed")
        ]
        # Not fixed yet: the failure and its cause are where the build stands.
        assert gotcha.status is Status.ACTIVE and "cause: " in gotcha.content
        assert state_keys(gotcha.tags) == {"command:cargo build"}
        turns.append(turn(2, "cargo build --release", BUILT, 0, "It builds."))
        cx = capture_turns(project, turns, cx=cx)
        store = cx.write_store(Scope.PROJECT)
        (gotcha,) = [
            m for m in store.all_memories() if m.content.startswith("`cargo build --release` failed")
        ]
        assert gotcha.status is Status.SUPERSEDED and "fixed later" not in gotcha.content
        active = {m.content for m in store.all_memories() if m.status is Status.ACTIVE}
        assert "`cargo build --release` succeeds" in active
    finally:
        cx.close()


def test_only_a_cause_is_a_why_that_says_nothing_of_the_fix() -> None:
    assert only_cause("cause: The issue is with SQLx compile-time checking")
    assert not only_cause(
        "cause: I need to add the flake.nix to git first, because flakes only see tracked files"
    )
    assert not only_cause("cause: port 3000 is in use; fix: find and kill the process")
    assert not only_cause("fix: use the offline mode instead")
