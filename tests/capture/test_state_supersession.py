"""Through the real capture path: a state a later turn reports again replaces the older one.

A test that failed and later passed, a build that failed and later succeeded, a turn report of
where things stood: only the latest stays active, the older ones are superseded (kept in
history with a `supersedes` edge), and a state on another branch is left alone.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from cortex.app import Cortex
from cortex.capture.queue import QueueEntry
from cortex.capture.session import GitFacts, capture_session
from cortex.core.extract.pipeline import GitContext
from cortex.core.model import EdgeType, Scope, Status
from cortex.paths import resolve_paths
from tests.conftest import T0
from tests.support.transcript_builders import (
    bash_result_record,
    bash_use_record,
    jsonl,
    prompt_record,
    text_record,
)


def turn(n: int, command: str, output: str, exit_code: int, report: str) -> list[dict[str, object]]:
    return [
        prompt_record(f"step {n}: run `{command}` and tell me where we are", uuid=f"p{n}"),
        bash_use_record(f"t{n}", command, uuid=f"a{n}"),
        bash_result_record(f"t{n}", output, exit_code=exit_code, uuid=f"r{n}"),
        text_record(f"m{n}", report, uuid=f"x{n}"),
    ]


def capture_turns(project: Path, turns: list[list[dict[str, object]]]) -> Cortex:
    ticks = iter(T0 + timedelta(seconds=i) for i in range(1_000_000))
    cx = Cortex(resolve_paths(project), clock=lambda: next(ticks))
    transcript = project / "session.jsonl"
    entry = QueueEntry("Stop", "s1", str(transcript), str(project))
    records: list[dict[str, object]] = []
    for i, records_of_turn in enumerate(turns):
        records += records_of_turn
        transcript.write_bytes(jsonl(records))
        capture_session(
            cx, entry, GitFacts(GitContext(branch="main")), closed=i == len(turns) - 1, lag_wait_s=0
        )
    return cx


def test_the_latest_verdict_report_and_build_state_win(project: Path) -> None:
    cx = capture_turns(
        project,
        [
            turn(1, "pytest -q", "FAILED tests/test_a.py::test_x\n1 failed, 2 passed in 0.2s", 1,
                 "## Current status\n- The parser test fails on empty input and needs a guard in parse()"),
            turn(2, "tsc --noEmit", "src/a.ts(1,1): error TS2304: Cannot find name 'x'.", 2,
                 "Root cause\nThe generated types were stale because the schema changed; regenerate them."),
            turn(3, "pytest -q", "3 passed in 0.2s", 0,
                 "## Current status\n- All three parser tests pass after adding the guard to parse()"),
            turn(4, "tsc --noEmit", "", 0, "Types regenerated; the type check is clean again now."),
        ],
    )  # fmt: skip
    try:
        store = cx.write_store(Scope.PROJECT)
        memories = store.all_memories()
        active = {m.content for m in memories if m.status is Status.ACTIVE}
        superseded = {m.content for m in memories if m.status is Status.SUPERSEDED}
        assert "Tests passed: `pytest -q` (3 passed in 0.2s)" in active
        assert any(c.startswith("Tests failing: `pytest -q`") for c in superseded)
        assert "`tsc --noEmit` succeeds" in active
        assert any(c.startswith("Command failing: `tsc --noEmit`") for c in superseded)
        assert any("All three parser tests pass" in c for c in active)
        assert any("fails on empty input" in c for c in superseded)
        # Knowledge is not state: the explained cause stays active.
        assert any(c.startswith("Root cause\nThe generated types were stale") for c in active)
        ids = {m.id for m in memories if m.status is Status.SUPERSEDED}
        edges = [e for e in store.edges() if e.type is EdgeType.SUPERSEDES]
        assert ids == {e.target for e in edges}
    finally:
        cx.close()
