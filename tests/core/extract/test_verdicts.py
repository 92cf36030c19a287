"""Test verdicts come from evidence: runner summaries and the test command's own exit status.

Each regression case is built from the record shapes the client versions write (a Bash call,
then its `tool_result` with `toolUseResult`), parsed as a transcript, then read by layer 2.
"""

from __future__ import annotations

import pytest

from cortex.core.extract.structural import extract_structural
from cortex.core.extract.transcript import parse_chunk
from cortex.core.extract.verdicts import (
    RunOutcome,
    Verdict,
    counts_tests,
    is_test_run,
    parse_command_outcome,
    parse_test_outcome,
)
from tests.support.transcript_builders import (
    INTERRUPTED_FOR_TOOL,
    REJECT_ACTION,
    REJECT_PROCEED,
    V1_0,
    V2_0,
    V2_1,
    VERSIONS,
    bash_result_record,
    bash_use_record,
    jsonl,
    prompt_record,
    refused_result_record,
)

ROOT = "/home/dev/proj"
PASS, FAIL, NOT_STARTED, UNKNOWN = Verdict.PASSED, Verdict.FAILED, Verdict.NOT_STARTED, Verdict.UNKNOWN


def notes_of(records: list[dict[str, object]]) -> list[str]:
    chunk = parse_chunk(jsonl([prompt_record("run the tests please"), *records]), 0)
    found = extract_structural(chunk.messages, project_root=ROOT)
    return [c.content for c, _ in found if c.content.startswith("Tests ")]


def one_run(command: str, output: str, *, exit_code: int = 0, version: str = V2_1) -> list[str]:
    return notes_of(
        [
            bash_use_record("t1", command, version=version),
            bash_result_record("t1", output, exit_code=exit_code, version=version),
        ]
    )


# --- the regressions, as the client versions write them ------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_empty_output_is_no_verdict(version: str) -> None:
    assert one_run("pytest -q 2>&1 | tail -5", "", version=version) == []
    assert one_run("npm test", "", version=version) == []


@pytest.mark.parametrize("version", VERSIONS)
def test_tail_hides_the_exit_status_so_only_a_summary_decides(version: str) -> None:
    # A crash before any summary, piped through `tail`: the pipeline exits 0.
    crashed = "** (exit) an exception was raised:\n    (app 0.1.0) lib/app/boot.ex:12: App.start/2"
    assert one_run("mix test --seed 0 2>&1 | tail -50", crashed, version=version) == []
    assert (
        one_run("mix test 2>&1 | head -100", "Compiling 7 files (.ex)\nGenerated app", version=version) == []
    )
    # The same with a summary: the summary decides, whatever the pipeline's status.
    summary = "Finished in 2.1 seconds\n3 doctests, 40 tests, 2 failures"
    assert one_run("mix test 2>&1 | tail -5", summary, version=version) == [
        "Tests failing: `mix test` (3 doctests, 40 tests, 2 failures)"
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_compile_failure_is_a_failure(version: str) -> None:
    output = (
        "   Compiling demo v0.1.0 (/home/dev/proj)\n"
        "error[E0425]: cannot find value `widget` in this scope\n"
        "error: could not compile `demo` (lib test) due to 188 previous errors"
    )
    assert one_run("cargo test 2>&1 | tail -20", output, version=version) == [
        "Tests failing: `cargo test` (error[E0425]: cannot find value `widget` in this scope)"
    ]
    assert one_run("cargo test", output, exit_code=101, version=version)[0].startswith("Tests failing")


@pytest.mark.parametrize("version", VERSIONS)
def test_a_failed_cd_is_not_a_test_verdict(version: str) -> None:
    output = "/bin/bash: line 1: cd: services/api: No such file or directory"
    assert one_run("cd services/api && pytest -q", output, exit_code=1, version=version) == []
    zsh = "(eval):cd:1: no such file or directory: services/api"
    assert one_run("cd services/api && pytest -q", zsh, exit_code=1, version=version) == []
    missing = "/bin/bash: line 1: pytest: command not found"
    assert one_run("pytest -q", missing, exit_code=127, version=version) == []


@pytest.mark.parametrize(
    ("wording", "top", "version"),
    [
        (REJECT_PROCEED, f"Error: {REJECT_PROCEED}", V1_0),
        (REJECT_PROCEED, f"Error: {REJECT_PROCEED}", V2_0),
        (REJECT_PROCEED, "User rejected tool use", V2_1),
        (REJECT_PROCEED, f"Error: {REJECT_PROCEED}", V2_1),
        (REJECT_ACTION, "User rejected tool use", V2_1),
        (REJECT_ACTION, f"Error: {REJECT_ACTION}", V2_1),
        (INTERRUPTED_FOR_TOOL, f"Error: {INTERRUPTED_FOR_TOOL}", V2_0),
        ("Permission to use Bash has been denied.", "Error: Permission to use Bash has been denied.", V2_1),
    ],
)
def test_refused_and_interrupted_calls_are_not_runs(wording: str, top: object, version: str) -> None:
    records = [
        bash_use_record("t1", "pytest -q", version=version),
        refused_result_record("t1", wording, top, version=version),
    ]
    assert notes_of(records) == []
    chunk = parse_chunk(jsonl(records), 0)
    (use,) = [u for m in chunk.messages for u in m.tool_uses]
    assert use.result is not None and (use.result.rejected or use.result.interrupted)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_refused_rerun_keeps_the_last_real_verdict(version: str) -> None:
    top = "User rejected tool use" if version >= "2.1" else f"Error: {REJECT_PROCEED}"
    records = [
        bash_use_record("t1", "pytest -q", version=version),
        bash_result_record("t1", "F..\n1 failed, 2 passed in 0.2s", exit_code=1, version=version),
        bash_use_record("t2", "pytest -q", version=version),
        refused_result_record("t2", REJECT_PROCEED, top, version=version),
    ]
    assert notes_of(records) == ["Tests failing: `pytest -q` (1 failed, 2 passed in 0.2s)"]


def test_a_timed_out_run_is_no_verdict() -> None:
    output = "Command timed out after 2m 0s\n....."
    assert one_run("pytest", output, exit_code=143) == []


# --- evidence that does decide --------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_the_test_commands_own_exit_status_decides_without_a_summary(version: str) -> None:
    assert one_run("make test", "running the suite\nall checks done", version=version) == [
        "Tests passed: `make test`"
    ]
    failed = one_run(
        "make test", "running the suite\nassertion failed in case 3", exit_code=2, version=version
    )
    assert failed == ["Tests failing: `make test` (assertion failed in case 3)"]
    # `; echo done` makes the status echo's: no evidence.
    assert one_run("make test; echo done", "running the suite\ndone", version=version) == []


def test_pipefail_and_an_echoed_status_show_the_real_exit_status() -> None:
    out = "running the suite\nassertion failed in case 3"
    assert one_run("set -o pipefail; make test 2>&1 | tail -3", out, exit_code=2)[0].startswith(
        "Tests failing"
    )
    shown = one_run('make test 2>&1 | tail -3; echo "exit=${PIPESTATUS[0]}"', out + "\nexit=2")
    assert shown[0].startswith("Tests failing")
    ok = one_run('make test > log.txt; echo "exit code: $?"', "exit code: 0")
    assert ok == ['Tests passed: `make test > log.txt; echo "exit code: $?"`']


@pytest.mark.parametrize(
    ("output", "verdict", "summary"),
    [
        ("....\n5 passed in 0.1s", PASS, "5 passed in 0.1s"),
        ("F...\n1 failed, 4 passed in 0.2s", FAIL, "1 failed, 4 passed in 0.2s"),
        ("14 doctests, 297 tests, 0 failures", PASS, "14 doctests, 297 tests, 0 failures"),
        ("test result: FAILED. 3 passed; 1 failed", FAIL, "test result: FAILED. 3 passed; 1 failed"),
        ("test result: ok. 12 passed; 0 failed", PASS, "test result: ok. 12 passed; 0 failed"),
        (" Test Files  4 failed | 49 passed (53)\n      Tests  16 failed | 690 passed (706)", FAIL,
         "Tests  16 failed | 690 passed (706)"),
        ("Tests:       12 passed, 12 total", PASS, "Tests:       12 passed, 12 total"),
        ("ok  \texample.com/pkg\t0.012s", PASS, "ok  \texample.com/pkg\t0.012s"),
        ("--- FAIL: TestParse (0.00s)\nFAIL\texample.com/pkg\t0.01s", FAIL, "FAIL\texample.com/pkg\t0.01s"),
        ("Ran 4 tests in 0.01s\n\nOK", PASS, "Ran 4 tests in 0.01s OK"),
        ("Ran 4 tests in 0.01s\n\nFAILED (failures=1)", FAIL, "FAILED (failures=1)"),
        ("12 examples, 0 failures", PASS, "12 examples, 0 failures"),
        ("  3 passing (20ms)\n  1 failing", FAIL, "1 failing"),
        ("a.ts(3,1): error TS2304: no name 'x'.", FAIL, "a.ts(3,1): error TS2304: no name 'x'."),
        ("Failed to compile.\n./app/page.tsx", FAIL, "Failed to compile."),
        ("just some log lines", UNKNOWN, ""),
        ("collected 0 items\n\n====== no tests ran in 0.01s ======", UNKNOWN, ""),
        ("There are no tests to run\nFinished in 0.01 seconds\n0 tests, 0 failures", UNKNOWN, ""),
    ],
)  # fmt: skip
def test_runner_summaries_behind_a_pipe(output: str, verdict: Verdict, summary: str) -> None:
    outcome = parse_test_outcome("npm test 2>&1 | tail -40", output, is_error=False, exit_code=None)
    assert outcome == RunOutcome(verdict, summary)


@pytest.mark.parametrize(
    ("command", "output", "verdict"),
    [
        # Everything skipped, or nothing to run: exit 0, and nothing passed.
        ("pytest -q", "sssss\n5 skipped in 0.10s", UNKNOWN),
        ("pytest -q", "===== 5 skipped, 1 warning in 0.10s =====", UNKNOWN),
        ("npx jest", "Tests:       3 skipped, 3 total", UNKNOWN),
        ("go test ./...", "?   \texample.com/cmd\t[no test files]", UNKNOWN),
        ("cargo test", "running 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored", UNKNOWN),
        # Some ran beside those: the run is evidence as before.
        ("pytest -q", "..s\n2 passed, 1 skipped in 0.10s", PASS),
        ("go test ./...", "?   \texample.com/cmd\t[no test files]\nok  \texample.com/pkg\t0.02s", PASS),
        ("cargo test", "running 5 tests\ntest result: ok. 5 passed; 0 failed\n   Doc-tests app\n"
         "running 0 tests\ntest result: ok. 0 passed; 0 failed", PASS),
    ],
)  # fmt: skip
def test_a_run_that_ran_no_test_passed_nothing(command: str, output: str, verdict: Verdict) -> None:
    assert parse_test_outcome(command, output, is_error=False, exit_code=0).verdict is verdict


def test_a_passing_summary_with_a_failing_own_status_is_a_failure() -> None:
    # pytest-cov's threshold fails the run after "5 passed".
    output = "5 passed in 1.0s\nFAIL Required test coverage of 90% not reached"
    outcome = parse_test_outcome("pytest --cov", output, is_error=True, exit_code=1)
    assert outcome.verdict is FAIL
    later = parse_test_outcome(
        "pytest && git push", "Exit code 1\n5 passed in 1.0s", is_error=True, exit_code=1
    )
    assert later == RunOutcome(PASS, "5 passed in 1.0s")  # the push failed, not the tests


def test_version_and_collect_only_are_not_test_runs() -> None:
    assert not is_test_run("pytest --version")
    assert not is_test_run('nix develop --command bash -c "black --version && pytest --version"')
    assert not is_test_run("pytest --collect-only -q")
    assert is_test_run("cd web && npx vitest run")
    assert is_test_run('docker compose exec api sh -c "cd /app && pytest -x"')
    outcome = parse_test_outcome("pytest --version", "pytest 8.3.5", is_error=False, exit_code=None)
    assert outcome.verdict is UNKNOWN


@pytest.mark.parametrize("version", VERSIONS)
def test_installing_or_locating_a_runner_runs_no_test(version: str) -> None:
    # Real shapes: setting up a suite names its runner; nothing ran, so nothing passed.
    for command, output in (
        (
            "pip install pytest pytest-cov",
            "Successfully installed coverage-7.6.1 pytest-8.3.2 pytest-cov-5.0.0",
        ),
        ("python -m pip install -U pytest", "Requirement already satisfied: pytest in ./.venv/lib"),
        ("uv add --dev pytest", "Resolved 12 packages in 80ms\n + pytest==8.3.2"),
        ("npm install --save-dev jest @types/jest", "added 292 packages, and audited 293 packages in 9s"),
        ("which pytest", "/home/dev/proj/.venv/bin/pytest"),
        ("cat pytest.ini", "[pytest]\naddopts = -q"),
    ):
        assert one_run(command, output, version=version) == [], command
        assert not is_test_run(command)
    # Installed, then run: the run is the verdict.
    assert one_run("pip install pytest && pytest -q", "Successfully installed pytest\n3 passed in 0.1s") == [
        "Tests passed: `pip install pytest && pytest -q` (3 passed in 0.1s)"
    ]


def test_a_run_in_another_checkout_is_no_verdict_of_the_project() -> None:
    # A scratch reproduction or a second repository: its tests say nothing of this project's.
    for command in (
        "cd /tmp/repro && pytest -q",
        'cd "/home/dev/other repo" && npm test',
        "cd /home/dev/project && pytest",
    ):
        assert one_run(command, "3 passed in 0.1s") == [], command
    # Inside the project (by its full path, a subfolder or a relative one), the run counts.
    for command in (f"cd {ROOT} && pytest -q", f"cd {ROOT}/api && pytest -q", "cd api && pytest -q"):
        assert one_run(command, "3 passed in 0.1s") == ["Tests passed: `pytest -q` (3 passed in 0.1s)"], (
            command
        )


def test_runners_started_by_path_or_through_a_framework_are_read() -> None:
    assert one_run(
        "vendor/bin/phpunit 2>&1 | tail -3", "FAILURES!\nTests: 5, Assertions: 10, Failures: 1."
    ) == ["Tests failing: `vendor/bin/phpunit` (FAILURES!)"]
    assert one_run("./node_modules/.bin/jest", "Tests:       12 passed, 12 total") == [
        "Tests passed: `./node_modules/.bin/jest` (Tests: 12 passed, 12 total)"
    ]
    assert one_run("npx playwright test | tail -3", "  2 failed\n  5 passed (10s)") == [
        "Tests failing: `npx playwright test` (2 failed)"
    ]
    assert (
        is_test_run("php artisan test")
        and is_test_run("flutter test")
        and is_test_run("bundle exec rake spec")
    )
    # A path to a runner that something else reads is no run.
    assert not is_test_run("ls node_modules/.bin/jest")


def test_not_started_has_the_reason() -> None:
    output = "Exit code 1\n/bin/bash: line 1: cd: api: No such file or directory"
    outcome = parse_test_outcome("cd api && pytest", output, is_error=True, exit_code=1)
    assert outcome.verdict is NOT_STARTED and "cd: api: No such file or directory" in outcome.summary
    npm = parse_test_outcome("npm test", 'npm ERR! Missing script: "test"', is_error=True, exit_code=1)
    assert npm.verdict is NOT_STARTED


@pytest.mark.parametrize(
    ("command", "output", "is_error", "verdict"),
    [
        ("cargo build 2>&1 | tail -3", "error: could not compile `demo` (4 previous errors)", False, FAIL),
        ("npm run build 2>&1 | tail -5", "Failed to compile.\n./app/page.tsx", False, FAIL),
        # Next.js's "Compiled successfully" comes before its type check: a hidden status stays unknown.
        ("npm run build 2>&1 | tail -5", "Compiled successfully in 4.2s", False, UNKNOWN),
        # A builder's last words say it built, whatever the pipe did to the status.
        ("cargo build -r 2>&1 | tail -3", "   Finished `release` profile [optimized] target(s) in 4.69s",
         False, PASS),
        ("./gradlew build | tail -2", "BUILD SUCCESSFUL in 12s\n7 actionable tasks: 7 executed", False, PASS),
        ("cargo build 2>&1 | head -5", "   Compiling demo v0.1.0 (/src/demo)", False, UNKNOWN),
        ("npm run build", "Compiled successfully in 4.2s", False, PASS),
        ("npm run build", "Exit code 1\nsomething broke in the bundler", True, FAIL),
        ("cd web && npm run build", "Exit code 1\nbash: line 1: cd: web: No such file or directory", True,
         NOT_STARTED),
        ("npm run build; echo done", "done", False, UNKNOWN),
        ("npm run build && echo built", "built", False, PASS),
        ("npm run build", "Command timed out after 2m 0s", True, UNKNOWN),
        ("pytest -q | tail -2", "1 failed, 3 passed", False, FAIL),
        ("pip install 'numpy<2'", "ERROR: pip's dependency resolver does not account for x", False, PASS),
        ("nix flake show | head -20", "error: writing to file: Broken pipe", False, UNKNOWN),
    ],
)  # fmt: skip
def test_build_and_run_commands_follow_the_same_evidence_rules(
    command: str, output: str, is_error: bool, verdict: Verdict
) -> None:
    assert parse_command_outcome(command, output, is_error=is_error, exit_code=None).verdict is verdict


def test_a_summary_counts_tests_or_names_one() -> None:
    for counted in ("Tests  16 failed | 690 passed | 28 skipped (734)", "1 failed, 3 passed", "Ran 4 tests"):
        assert counts_tests(counted), counted
    for named in ("FAIL  test/a.test.ts > parses dates", "--- FAIL: TestParse (0.00s)", "FAILED."):
        assert not counts_tests(named), named
