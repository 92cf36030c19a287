"""Where CI stands, as the GitHub CLI listed it: real shapes of `gh run list` piped output (tab
separated: status, conclusion, title, workflow, branch, event, id, elapsed, age) from a session
where the workflows still failed after the fix was merged, and of `gh pr checks` (name, state,
elapsed, link), which exits 8 while a check fails."""

from __future__ import annotations

from pathlib import Path

from cortex.app import Cortex
from cortex.core.extract.ci_runs import ci_state
from cortex.core.extract.structural import extract_structural
from cortex.core.extract.transcript import ToolUse
from cortex.core.model import Memory, MemoryType, Scope, Status
from cortex.core.recall.ranking import rank_for_briefing
from cortex.core.write.state import state_keys
from tests.capture.test_state_supersession import capture_turns, turn
from tests.support.transcript_builders import assistant, bash, user

ARCHIVE = "backup: Archive memories at 20250928_131109"
RUNS = (
    f"completed\tfailure\t{ARCHIVE}\t.github/workflows/sync.yml\tmaster\tpush\t18074756711\t0s\t2025-09-28T13:11:11Z\n"
    f"completed\tfailure\t{ARCHIVE}\t.github/workflows/ci.yml\tmaster\tpush\t18074756637\t0s\t2025-09-28T13:11:11Z\n"
    "completed\tsuccess\tfix: Update workflows to use GH_TOKEN (#2)\tBackup Claude Memory\tmaster\tpush"
    "\t18074754880\t11s\t2025-09-28T13:11:03Z\n"
    "completed\tfailure\tfix: Update workflows to use GH_TOKEN (#2)\t.github/workflows/ci.yml\tmaster\tpush"
    "\t18074754575\t3s\t2025-09-28T13:11:03Z\n"
    "in_progress\t\tfeat: docs\tDocs\tmain\tpush\t18074750000\t1m2s\t2025-09-28T13:10:00Z"
)
CHECKS = (
    "build\tpass\t1m12.5s\thttps://github.com/o/r/actions/runs/1/job/2\t\n"
    "test (ubuntu-latest)\tfail\t2m3s\thttps://github.com/o/r/actions/runs/1/job/3\n"
    "lint\tpending\t0\thttps://github.com/o/r/actions/runs/1/job/4"
)


def state(*uses: ToolUse) -> str | None:
    found = ci_state([(use, assistant(uses=(use,))) for use in uses])
    return None if found is None else found[0]


def red(*uses: ToolUse) -> bool | None:
    found = ci_state([(use, assistant(uses=(use,))) for use in uses])
    return None if found is None else found[2]


def test_the_newest_run_of_each_workflow_is_where_ci_stands() -> None:
    assert state(bash("gh run list --limit 5", RUNS)) == (
        "CI as `gh run list --limit 5` listed it: "
        "`.github/workflows/sync.yml` on master: failure (0s); "
        "`.github/workflows/ci.yml` on master: failure (0s); "
        "Backup Claude Memory on master: success (11s); Docs on main: in progress (1m2s)"
    )


def test_the_checks_of_a_pull_request_are_read_though_the_command_exits_non_zero() -> None:
    assert state(bash("gh pr checks 389", CHECKS, error=True)) == (
        "CI as `gh pr checks 389` listed it: build: pass (1m12.5s); "
        "test (ubuntu-latest): fail (2m3s); lint: pending"
    )


def test_what_is_not_a_plain_listing_says_nothing() -> None:
    assert state(bash("gh run list --json status,conclusion", '[{"status":"completed"}]')) is None
    assert state(bash("gh run list | grep ci.yml", RUNS.splitlines()[1])) is None  # a filtered list
    assert state(bash("gh pr checks", "no checks reported on the 'main' branch", error=True)) is None
    assert state(bash("gh run list", RUNS, rejected=True)) is None
    assert state(bash("echo 'gh run list'", "gh run list")) is None
    assert state(bash("gh run list | tail -2", RUNS)) is None  # the oldest runs listed
    assert state(bash("cd repo && gh run list | head -2", RUNS)) is not None  # the newest ones


def test_the_listing_is_the_lines_last_gh_step() -> None:
    for line in ("gh auth status && gh run list --limit 5", "GH_PAGER=cat gh run list --limit 5"):
        listed = state(bash(line, RUNS))
        assert listed is not None and listed.startswith("CI as `gh run list --limit 5` listed it: "), line


def test_the_turns_last_listing_wins_and_is_a_progress_state() -> None:
    notes = extract_structural(
        [
            user("did the workflows pass?"),
            assistant(uses=(bash("gh run list --limit 5", RUNS, tid="1"),)),
            assistant(uses=(bash("gh pr checks 2", CHECKS, tid="2", error=True),)),
            assistant("The test check still fails."),
        ],
        project_root="/home/dev/proj",
    )
    ci = [c for c, _ in notes if "ci:github" in state_keys(c.tags)]
    assert len(ci) == 1
    assert ci[0].content.startswith("CI as `gh pr checks 2` listed it: build: pass")
    assert ci[0].type is MemoryType.PROGRESS and state_keys(ci[0].tags) == {"ci:github"}


def test_a_later_listing_replaces_the_earlier_one(project: Path) -> None:
    first = RUNS.replace(f"completed\tfailure\t{ARCHIVE}", f"completed\tsuccess\t{ARCHIVE}", 1)
    turns = [
        turn(1, "gh run list --limit 5", first, 0, "Sync passes now."),
        turn(2, "gh run list --limit 5", RUNS, 0, "Sync and CI fail again."),
    ]
    cx = capture_turns(project, turns)
    try:
        ci = {m.status: m.content for m in listings(cx)}
        assert "sync.yml` on master: success" in ci[Status.SUPERSEDED]
        assert "sync.yml` on master: failure (0s)" in ci[Status.ACTIVE]
        # The first listing again, word for word: it is where CI stands now, not history.
        turns.append(turn(3, "gh run list --limit 5", first, 0, "Sync passes again."))
        cx = capture_turns(project, turns, cx=cx)
        active = [m.content for m in listings(cx) if m.status is Status.ACTIVE]
        assert len(active) == 1 and "sync.yml` on master: success" in active[0]
    finally:
        cx.close()


def listings(cx: Cortex) -> list[Memory]:
    return [m for m in cx.write_store(Scope.PROJECT).all_memories() if "ci:github" in state_keys(m.tags)]


def test_a_listing_is_red_when_a_run_or_a_check_failed() -> None:
    green = "\n".join(line.replace("\tfailure\t", "\tsuccess\t") for line in RUNS.splitlines())
    cancelled = RUNS.replace("\tfailure\t", "\tcancelled\t")
    assert red(bash("gh run list --limit 5", RUNS)) is True
    assert red(bash("gh run list --limit 5", green)) is False
    assert red(bash("gh run list --limit 5", cancelled)) is False  # stopped: says nothing yet
    assert red(bash("gh pr checks 389", CHECKS, error=True)) is True
    assert red(bash("gh pr checks 389", CHECKS.replace("\tfail\t", "\tpass\t"), error=True)) is False
    # The sixth entry on is counted, not listed: a red one still makes the listing red.
    many = "\n".join(
        f"completed\tsuccess\tt\tW{i}\tmain\tpush\t{i}\t1s\t2025-09-28T13:11:11Z" for i in range(7)
    )
    late_failure = many + "\ncompleted\tfailure\tt\tW9\tmain\tpush\t9\t1s\t2025-09-28T13:11:11Z"
    listed = state(bash("gh run list", late_failure))
    assert listed is not None and listed.endswith("2 more") and "failure" not in listed
    assert red(bash("gh run list", late_failure)) is True


def test_a_red_listing_outranks_the_earlier_report_that_called_ci_fixed(project: Path) -> None:
    # Real shape: the report said the workflows were fixed; `gh run list` after the merge
    # showed them still failing. The next session must read the listing first.
    turns = [
        turn(1, "git push origin fix-token", "done", 0,
             "## What we accomplished\nFixed the GitHub Actions workflows: they use the org secret "
             "GH_TOKEN now, merged as PR #2."),
        turn(2, "gh run list --limit 5", RUNS, 0, "Let me look at the runs."),
    ]  # fmt: skip
    cx = capture_turns(project, turns)
    try:
        progress = [
            m
            for m in cx.write_store(Scope.PROJECT).all_memories()
            if m.type is MemoryType.PROGRESS and m.status is Status.ACTIVE
        ]
        order = [m.content for m in rank_for_briefing(progress)]
        listing = next(i for i, c in enumerate(order) if c.startswith("CI as `gh run list"))
        report = next(i for i, c in enumerate(order) if "Fixed the GitHub Actions workflows" in c)
        assert listing < report
    finally:
        cx.close()
