"""Where the repository's CI stands, as the GitHub CLI listed it in the session: the newest run
of each workflow (`gh run list`) or each check of a pull request (`gh pr checks`). Pure.

The session's own test runs say nothing of CI: "the workflows still fail after the fix was
merged" is known only from such a listing, and a next session that reads only "Fixed CI with
GH_TOKEN" takes it for green. Read from the CLI's plain output (tab-separated when piped, as
Claude Code runs it); a `--json` or `--template` listing, or a filtered one (`| grep`), is not read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cortex.core.extract.commands import clip, render_command, split_steps, without_inline_env
from cortex.core.extract.transcript import Message, ToolUse

CI_KEY = "ci:github"  # the state key: a later listing in the same branch replaces the note
MAX_ENTRIES = 6
MAX_NAME_CHARS = 60

_RUN_LIST = re.compile(r"^gh\s+run\s+(?:list|ls)\b")
_PR_CHECKS = re.compile(r"^gh\s+pr\s+checks\b")
_FORMATTED = re.compile(r"\s--(?:json|jq|template)\b|\s-[qt]\s")
_ELAPSED = re.compile(r"^(?:\d+(?:\.\d+)?(?:h|m|s|ms|\u00b5s|us|ns))+$")  # a Go duration: "1m2.5s", "0s"
# `gh run list`: status, conclusion, title, workflow, branch, event, id, elapsed, age.
_RUN_STATUS = frozenset({"completed", "in_progress", "queued", "requested", "waiting", "pending"})
# `gh pr checks`: name, state (a cancelled check reads "fail"), elapsed ("0" when not known),
# link and, newer, a description.
_CHECK_STATE = frozenset({"pass", "fail", "pending", "skipping", "cancel"})
# A run's conclusion or a check's state that says CI is red (a cancelled run says nothing yet).
_FAILED = frozenset({"failure", "timed_out", "startup_failure", "fail"})


def ci_state(calls: Sequence[tuple[ToolUse, Message]]) -> tuple[str, Message, bool] | None:
    """The turn's last readable CI listing as a state note, with the message that listed it and
    whether a run or check in it failed."""
    for use, message in reversed(calls):
        command = use.input.get("command") if use.name == "Bash" else None
        # `gh pr checks` exits 8 when a check fails or is pending: the listing is still the answer.
        result = use.result
        if not isinstance(command, str) or result is None or result.rejected or result.interrupted:
            continue
        step = _listing_step(command)
        if step is None or _FORMATTED.search(f" {step} "):
            continue
        shown = render_command(step)
        if _RUN_LIST.match(shown):
            listed = _runs(result.content)
        elif _PR_CHECKS.match(shown):
            listed = _checks(result.content)
        else:
            continue
        if listed:
            entries = [entry for entry, _ in listed[:MAX_ENTRIES]] + _more(len(listed))
            failed = any(outcome in _FAILED for _, outcome in listed)
            return f"CI as `{shown}` listed it: {'; '.join(entries)}", message, failed
    return None


def _listing_step(command: str) -> str | None:
    """The line's last `gh` step (`gh auth status && GH_PAGER=cat gh run list`), when what it
    printed is the listing as it was, or only its first lines (`| head`): not filtered (`| grep`),
    nor its oldest lines (`| tail`)."""
    first = command.strip().splitlines()[0] if command.strip() else ""
    steps = [without_inline_env(step.strip()) for step in split_steps(first)]
    at = max((i for i, step in enumerate(steps) if step.startswith("gh ")), default=None)
    if at is None or not all(step.startswith("head") for step in steps[at + 1 :]):
        return None
    return steps[at]


def _runs(output: str) -> list[tuple[str, str]]:
    """The newest run of each workflow ("`.github/workflows/ci.yml` on master: failure (0s)"),
    with its outcome."""
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for line in output.splitlines():
        cells = line.split("\t")
        if len(cells) < 9 or cells[0] not in _RUN_STATUS or not _ELAPSED.match(cells[7]):
            continue
        status, conclusion, _, workflow, branch = cells[:5]
        if workflow in seen:
            continue  # newest first: an older run of the workflow is history
        seen.add(workflow)
        outcome = conclusion if status == "completed" and conclusion else status.replace("_", " ")
        out.append((f"{_name(workflow)} on {branch}: {outcome} ({cells[7]})", outcome))
    return out


def _checks(output: str) -> list[tuple[str, str]]:
    """Each check of the pull request ("build: fail (2m3s)"), with its state."""
    out: list[tuple[str, str]] = []
    for line in output.splitlines():
        cells = line.split("\t")
        if len(cells) < 3 or cells[1] not in _CHECK_STATE:
            continue
        elapsed = f" ({cells[2]})" if _ELAPSED.match(cells[2]) else ""
        out.append((f"{_name(cells[0])}: {cells[1]}{elapsed}", cells[1]))
    return out


def _name(name: str) -> str:
    name = clip(name.strip(), MAX_NAME_CHARS)
    return f"`{name}`" if "/" in name or name.endswith((".yml", ".yaml")) else name


def _more(count: int) -> list[str]:
    return [f"{count - MAX_ENTRIES} more"] if count > MAX_ENTRIES else []
