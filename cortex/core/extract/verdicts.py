"""A test command and its output -> passed, failed, did not start, or no evidence. Pure.

A verdict needs evidence: a test runner's summary line, a build failure, or the exit status of
the test command itself. The exit status Claude Code reports is the whole command line's, so it
says nothing about the tests when the test command is piped into `tail`/`head`/`grep` (without
`set -o pipefail`) or followed by `; ...` or `|| ...`. Empty output, a timed-out or background
run, and a command that never started (`cd` failed, runner not installed) are not verdicts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from cortex.core.extract.commands import is_test_command, masked_quotes, parse_error_line


class Verdict(StrEnum):
    """What a test run showed."""

    PASSED = "passed"
    FAILED = "failed"  # tests failed, or the code did not build
    NOT_STARTED = "not started"  # the command failed before any test ran
    UNKNOWN = "unknown"  # no evidence either way


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """A verdict and the output line that supports it ("" when none)."""

    verdict: Verdict
    summary: str = ""


_M = re.MULTILINE
# Runner summaries that report failures: pytest, jest, vitest, mix, rspec, mocha, cargo, go,
# unittest, phpunit, dotnet, ctest, bun, deno, swift.
_FAIL_SUMMARY = re.compile(
    r"\b[1-9]\d* (?:failed|failures?|failing|errors?)\b|\btest result: FAILED\b|^\s*FAIL(?:ED)?\b"
    r"|^--- FAIL\b|^FAILURES!|\bFailed!\s+-\s+Failed:|\b[1-9]\d* tests? failed out of\b"
    r"|^\s*[1-9]\d* fail$|\bwith [1-9]\d* failures?\b|^ERROR: .*commands failed",
    _M,
)
_PASS_SUMMARY = re.compile(
    r"\b\d+ (?:passed|passing)\b|\b\d+ (?:tests?|examples?|doctests?|specs?)(?:, \d+ \w+)*, 0 "
    r"failures?\b|\btest result: ok\b|^ok\s+\S+\s+(?:[\d.]+m?s|\(cached\))|^PASS$|^OK \(\d+ tests?"
    r"|\bPassed!\s+-\s+Failed:\s+0\b|\b100% tests passed\b|^\s*\d+ pass$|\bwith 0 failures\b"
    r"|congratulations :\)|^ok \| \d+ passed",
    _M,
)
# Output that shows the code did not build, so no test could pass.
_BUILD_FAILED = re.compile(
    r"could not compile|^error(?:\[E\d+\])?:|\berror TS\d+:|Failed to compile|Compilation failed"
    r"|\bcompilation error|\*\* \(\w*(?:Compile|Syntax)Error\)|^SyntaxError:|\bBUILD FAILED\b"
    r"|^make(?:\[\d+\])?: \*\*\* .*Error \d+|^npm ERR! |ERROR collecting",
    _M | re.IGNORECASE,
)
# What a builder prints last once it built, seen through a pipe that hid its status (`| tail -3`):
# cargo's "Finished `release` profile [optimized] target(s) in 4.69s" (older: "Finished release
# [optimized] target(s) in"), vite's "built in 1.2s", Gradle's "BUILD SUCCESSFUL", Maven's "BUILD
# SUCCESS", dotnet's "Build succeeded.", xcodebuild's "** BUILD SUCCEEDED **". Not Next.js's
# "Compiled successfully": its type check and page generation come after it.
_BUILD_PASSED = re.compile(
    r"^\s*Finished\b.*\btarget\(s\) in\b|^\W*built in \d|^BUILD SUCCESS(?:FUL)?\b|^\s*Build succeeded\."
    r"|\*\* BUILD SUCCEEDED \*\*",
    _M,
)
# Output that shows the command never reached a test: `cd` failed, no runner, no script.
_NOT_STARTED = re.compile(
    r"\bcd:(?:\d+:)? .*(?:no such file or directory|not a directory|can't cd)"
    r"|\bcommand not found\b|^\S+: \d+: \S+: not found$|is not recognized as an internal or external"
    r"|No module named '?(?:pytest|unittest|tox|nox)'?$|Missing script: \"?test"
    r"|ERR_PNPM_NO_SCRIPT|error Command \"test\" not found|no such (?:sub)?command",
    _M | re.IGNORECASE,
)
_NO_OUTCOME = re.compile(
    r"^(?:Error: )?Command timed out|^Command running in background|^Interrupted by user"
    r"|^\[Request interrupted",
    _M | re.IGNORECASE,
)
# A run that found nothing to run, or skipped all it found, passed nothing.
_NO_TESTS = re.compile(
    r"\bno tests ran\b|\bno tests? (?:files? )?found\b|\bthere are no tests to run\b|\bcollected 0 items\b"
    r"|\bRan 0 tests\b|\b0 tests?, 0 failures\b|\[no test files\]|\brunning 0 tests\b"
    r"|^\W*\d+ (?:skipped|deselected)(?:, \d+ (?:skipped|deselected|xfailed|warnings?))* in [\d.]+m?s\b"
    r"|^Tests:\s+\d+ skipped, \d+ total",
    re.IGNORECASE | re.MULTILINE,
)
# A summary that counts tests that ran (`3 passed`, `Ran 4 tests`, go's `ok  pkg  0.1s`).
_SOME_RAN = re.compile(
    r"\b[1-9]\d* (?:passed|passing|pass|tests?|examples?|doctests?|specs?)\b|^ok\s+\S+\s", re.MULTILINE
)
# A summary that counts what ran ("16 failed | 690 passed (734)", "Ran 4 tests"), not one test's
# line ("FAIL test/utils/sanitizer.test.ts > strips paths").
_COUNTS = re.compile(
    r"\b\d+ (?:passed|passing|pass|failed|failures?|failing|errors?|tests?|examples?|specs?)\b"
)
# `echo "exit=$?"` / `echo ${PIPESTATUS[0]}` in the command, the number in the output.
_ECHOES_STATUS = re.compile(r"\$\?|\$\{?PIPESTATUS")
_STATUS_LINE = re.compile(
    r"^\W*(?:exit(?:[ _-]?(?:code|status))?|rc|status|pipestatus|test_exit)\W*[:=]?\s*(\d+)\W*$",
    _M | re.IGNORECASE,
)
# unittest: "Ran 12 tests in 0.3s" then "OK" (or "OK (skipped=1)") on a line of its own.
_UNITTEST_OK = re.compile(r"^Ran \d+ tests? in .*\n+OK(?: \(.*\))?$", _M)
_OPERATOR = re.compile(r"\|\||&&|\|&|\||;|\n|&(?![>&\d])")
_PIPEFAIL = re.compile(r"\bset\s+(?:-\w*\s+)*-o\s+pipefail\b|\bset\s+-\w*o\s*pipefail\b")
_INFO_ONLY = re.compile(r"\s--?(?:version|help|h|collect-only|co|list(?:-tests)?|listTests)(?![\w-])")
_HARMLESS_AFTER = re.compile(r"^\s*(?:echo|printf|true|:)\b")
NOT_STARTED_EXIT_CODES = frozenset({126, 127})


@dataclass(frozen=True, slots=True)
class _Run:
    """Where the test command sits in the command line, for reading the exit status."""

    status_is_its_own: bool  # the line's exit status is the test command's (or its setup's)
    info_only: bool  # `pytest --version`, `jest --listTests`: no test ran


def is_test_run(command: str) -> bool:
    """A test command that runs tests (not `pytest --version` or `--collect-only`)."""
    run = _locate(command)
    return run is not None and not run.info_only


def parse_test_outcome(command: str, output: str, *, is_error: bool, exit_code: int | None) -> RunOutcome:
    """The verdict of one test command's run, from its output and the exit status reported."""
    text = output.strip()
    run = _locate(command)
    if run is None or run.info_only or _NO_OUTCOME.search(text[:300]):
        return RunOutcome(Verdict.UNKNOWN)
    if not text:  # nothing to read: only the test command's own failure status says anything
        failed = run.status_is_its_own and (is_error or bool(exit_code))
        return RunOutcome(Verdict.FAILED if failed else Verdict.UNKNOWN)
    if _NO_TESTS.search(text) and not _FAIL_SUMMARY.search(text) and not _SOME_RAN.search(text):
        return RunOutcome(Verdict.UNKNOWN)
    summaries = _summary_lines(text)
    if summaries:
        failing = [s for s in summaries if _FAIL_SUMMARY.search(s)]
        own_failure = run.status_is_its_own and is_error
        if failing or own_failure:
            return RunOutcome(Verdict.FAILED, failing[-1] if failing else summaries[-1])
        return RunOutcome(Verdict.PASSED, summaries[-1])
    status = _exit_status(command, text, run, is_error, exit_code)
    not_started = _NOT_STARTED.search(text)
    if (not_started and status != 0) or status in NOT_STARTED_EXIT_CODES:
        return RunOutcome(Verdict.NOT_STARTED, not_started.group(0).strip() if not_started else "")
    build = _build_failure(text) if status != 0 else None  # a clean own exit status wins
    if build:
        return RunOutcome(Verdict.FAILED, build)
    if status is None:
        return RunOutcome(Verdict.UNKNOWN)
    if status:
        return RunOutcome(Verdict.FAILED, parse_error_line(text))
    return RunOutcome(Verdict.PASSED)


def counts_tests(summary: str) -> bool:
    """Whether a verdict's summary line counts the tests ("16 failed | 690 passed") rather than
    naming one ("FAIL test/a.test.ts > parses dates")."""
    return _COUNTS.search(summary) is not None


def _summary_lines(text: str) -> list[str]:
    lines = [ln.strip() for ln in text.splitlines() if _FAIL_SUMMARY.search(ln) or _PASS_SUMMARY.search(ln)]
    unittest = _UNITTEST_OK.search(text)
    if unittest is not None:
        lines.append(" ".join(unittest.group(0).split()))
    return lines


def _exit_status(command: str, text: str, run: _Run, is_error: bool, exit_code: int | None) -> int | None:
    """The test command's own exit status when the output or the command line shows it."""
    if _ECHOES_STATUS.search(command):
        shown = _STATUS_LINE.findall(text)
        if shown:
            return int(shown[-1])
    if not run.status_is_its_own:
        return None
    if exit_code is not None:
        return exit_code
    return 1 if is_error else 0


def parse_command_outcome(command: str, output: str, *, is_error: bool, exit_code: int | None) -> RunOutcome:
    """The outcome of a build, install, lint or run command by the same rules: its own exit
    status when the command line shows it (not `| tail`'s), and build failures in the output
    whatever the status; a test command is judged as one."""
    if is_test_run(command):
        return parse_test_outcome(command, output, is_error=is_error, exit_code=exit_code)
    text = output.strip()
    run = _locate(command, test=False)
    # `tsc --version`, `cargo build --help`: the tool answered, nothing was checked.
    if run is None or run.info_only or _NO_OUTCOME.search(text[:300]):
        return RunOutcome(Verdict.UNKNOWN)
    status = _exit_status(command, text, run, is_error, exit_code)
    not_started = _NOT_STARTED.search(text)
    if (not_started and status != 0) or status in NOT_STARTED_EXIT_CODES:
        return RunOutcome(Verdict.NOT_STARTED, not_started.group(0).strip() if not_started else "")
    build = _build_failure(text) if status != 0 else None  # a clean own exit status wins
    if build:
        return RunOutcome(Verdict.FAILED, build)
    if status is None:  # a pipe hid it: only the builder's own words say it built
        return RunOutcome(Verdict.PASSED if _BUILD_PASSED.search(text) else Verdict.UNKNOWN)
    return RunOutcome(Verdict.FAILED, parse_error_line(text)) if status else RunOutcome(Verdict.PASSED)


def _locate(command: str, *, test: bool = True) -> _Run | None:
    """The last pipeline that runs a test command (or, `test=False`, the last pipeline of the
    line that is not an `echo`), and whether the line's exit status is its own."""
    masked = masked_quotes(command)
    if test and not is_test_command(masked):
        # The test command is inside quotes (`bash -c "cd x && pytest"`): read it unmasked.
        if not is_test_command(command):
            return None
        masked = command
    pieces: list[tuple[str, str]] = []  # (operator before, text)
    start, op = 0, ""
    for m in _OPERATOR.finditer(masked):
        pieces.append((op, masked[start : m.start()]))
        start, op = m.end(), m.group(0)
    pieces.append((op, masked[start:]))
    if test:
        index = max((i for i, (_, text) in enumerate(pieces) if is_test_command(text)), default=None)
    else:
        heads = [i for i, (o, t) in enumerate(pieces) if o not in ("|", "|&") and t.strip()]
        index = max((i for i in heads if not _HARMLESS_AFTER.match(pieces[i][1])), default=None)
        if index is None:
            return None
    if index is None:  # the test words span an operator (`uv run pytest` split oddly): no status
        return _Run(False, bool(_INFO_ONLY.search(masked)))
    info_only = bool(_INFO_ONLY.search(pieces[index][1]))
    after = pieces[index + 1 :]
    piped = bool(after) and after[0][0] in ("|", "|&")
    hidden_by_pipe = piped and not _PIPEFAIL.search(masked)
    rest = [p for p in after if p[0] not in ("|", "|&")] if piped else after
    hidden_after = any(o != "&&" or not _HARMLESS_AFTER.match(t) for o, t in rest if t.strip())
    background = any(o == "&" for o, _ in after)
    return _Run(not (hidden_by_pipe or hidden_after or background), info_only)


def _build_failure(text: str) -> str:
    """The first line that shows the code did not build ("" when none); `head` closing the
    pipe early makes the writer report a broken pipe, which is no failure of the build."""
    for m in _BUILD_FAILED.finditer(text):
        line = _line_at(text, m.start())
        if "broken pipe" not in line.casefold():
            return line
    return ""


def _line_at(text: str, pos: int) -> str:
    begin = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[begin : end if end >= 0 else len(text)].strip()
