"""What a turn's report says passed that the turn's own runs did not show passing, and the
state it reports failing that a later run of the turn showed passing. Pure.

A closing report often lists a check as passed ("Comprehensive flake check evaluates all
outputs successfully", "All tests pass") when the check's last run in that turn timed out,
failed or never started. No evidence is never a pass: a report section or labelled line that
claims such a check passed is not kept (the check's own runs are the structural layer's
evidence), so a claim the turn never verified does not become where things stand.

The other way round, a report said midway ("Now the refresh test fails: the token has no
`exp` claim") stands as the turn's state when the turn ends on a short sign-off; when the
check named passed in a run after it, that state (or context) is over and is not kept either.
A gotcha that explains the failure stays.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from cortex.core.extract.commands import is_check_command, is_cortex_command, render_command
from cortex.core.extract.failures import command_family
from cortex.core.extract.transcript import Message
from cortex.core.extract.verdicts import Verdict, is_test_run, parse_command_outcome
from cortex.core.model import Candidate, MemoryType

# A line saying something passed or works.
_SUCCESS = re.compile(
    r"\b(?:pass(?:es|ed|ing)?|succeed(?:s|ed)?|success(?:ful(?:ly)?)?|works?|working|green|"
    r"verified|cleanly)\b",
    re.IGNORECASE,
)
# A line saying the check did not finish or failed: it does not claim a pass.
_NOT_DONE = re.compile(
    r"\b(?:timed? ?out|timeout|still (?:running|building)|not (?:yet )?(?:finish|complet|verif|run)|"
    r"unverified|fail\w*|in the background|could not|couldn't|didn't|did not)\b",
    re.IGNORECASE,
)
_TESTS = re.compile(r"\btests?\b", re.IGNORECASE)
# What a report says midway of where things stand (its gotchas explain a failure, and stay).
_SAID_MIDWAY = frozenset((MemoryType.PROGRESS, MemoryType.CONTEXT))
_FAILING = re.compile(r"\b(?:fail(?:s|ing|ed|ures?)?|broken|still red)\b", re.IGNORECASE)
# ... and one that says it passes now ("is passed" hands over an argument, it passes nothing).
_PASSES_NOW = re.compile(
    r"\b(?:pass(?:es|ing)|(?<!is )(?<!are )(?<!was )(?<!be )passed|succeed\w*|successful\w*|green|fixed)\b",
    re.IGNORECASE,
)
MIN_NAME_WORDS = 2  # a check is named by its family's last words ("flake check")

Found = list[tuple[Candidate, Message]]


def check_runs(turn: Sequence[Message]) -> dict[str, bool]:
    """Each check family (builds, linters, test runs) run in the turn -> whether its last run
    passed (False: it timed out, failed, never started or showed nothing)."""
    return {family: passed for family, (passed, _) in last_runs(turn).items()}


def last_runs(turn: Sequence[Message]) -> dict[str, tuple[bool, int]]:
    """Each check family run in the turn -> whether its last run passed, and the index in
    `turn` of the message that ran it."""
    last: dict[str, tuple[bool, int]] = {}
    for at, message in enumerate(turn):
        for use in message.tool_uses:
            command = use.input.get("command") if use.name == "Bash" else None
            result = use.result
            if not isinstance(command, str) or is_cortex_command(command) or result is None:
                continue
            if result.rejected or result.interrupted:
                continue  # a refused or interrupted call ran nothing
            shown = render_command(command)
            if not (is_check_command(shown) or is_test_run(shown)):
                continue
            outcome = parse_command_outcome(
                command, result.content, is_error=result.is_error, exit_code=result.exit_code
            )
            last[command_family(shown)] = (outcome.verdict is Verdict.PASSED, at)
    return last


def claims_unbacked_pass(text: str, runs: dict[str, bool]) -> bool:
    """True when a line of `text` names a check whose last run did not pass and says it
    passed. "Tests" names the test runs only when none of them passed last."""
    unbacked = [family for family, passed in runs.items() if not passed]
    if not unbacked:
        return False
    tests_unbacked = any(is_test_run(f) for f in unbacked) and not any(
        passed and is_test_run(f) for f, passed in runs.items()
    )
    return _says_of(text, unbacked, tests_unbacked, _SUCCESS, _NOT_DONE)


def without_unbacked_claims(found: Found, turn: Sequence[Message]) -> Found:
    """The report candidates without those claiming a pass the turn's runs did not show, and
    without a state reporting a failure of a check that a later run of the turn passed."""
    last = last_runs(turn)
    runs = {family: passed for family, (passed, _) in last.items()}
    at = {m.end_offset: i for i, m in enumerate(turn)}  # the report's message may be a cleaned copy
    out = []
    for c, m in found:
        if not all(runs.values()) and claims_unbacked_pass(c.content, runs):
            continue
        said = at.get(m.end_offset, len(turn))
        passed_later = {f for f, (passed, ran) in last.items() if passed and ran > said}
        if c.type in _SAID_MIDWAY and passed_later and _reports_failing(c.content, passed_later):
            continue
        out.append((c, m))
    return out


def _reports_failing(text: str, families: set[str]) -> bool:
    """True when a line of `text` says one of these checks (or "tests", when a test run is
    among them) fails, and not that it passes."""
    return _says_of(text, families, any(is_test_run(f) for f in families), _FAILING, _PASSES_NOW)


def _says_of(
    text: str, families: Collection[str], tests: bool, says: re.Pattern[str], unless: re.Pattern[str]
) -> bool:
    """True when a line of `text` says `says` (and not `unless`) and names one of the check
    families, or the tests when `tests`."""
    for line in text.splitlines():
        if not says.search(line) or unless.search(line):
            continue
        low = " ".join(line.lower().split())
        if any(_names(low, family) for family in families) or (tests and _TESTS.search(low)):
            return True
    return False


def _names(line: str, family: str) -> bool:
    """The line names the check: its family's last words ("flake check" for `nix flake
    check`), or the whole family when shorter."""
    name = " ".join(family.lower().split()[-MIN_NAME_WORDS:])
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", line) is not None
