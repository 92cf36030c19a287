"""Layer 2, structural: a pull request merged in the session, and the branch cleanup after it. Pure.

How a repository lands its pull requests (squash or merge commit or rebase, the title it gives
the merge, whether the branch is deleted locally and on the remote) is a convention the next
session should follow. The session shows it when it merges one itself: `gh pr merge 12 --squash
--delete-branch`, or a GitHub MCP server's `merge_pull_request` call with its `merge_method`,
then `git branch -d feature/x` and `git push origin --delete feature/x`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cortex.core.extract.commands import clip, command_steps
from cortex.core.extract.transcript import ToolUse

MAX_TITLE_CHARS = 120
MAX_DELETIONS = 3
_GH_METHODS = {
    "--squash": "squash",
    "-s": "squash",
    "--merge": "merge",
    "-m": "merge",
    "--rebase": "rebase",
    "-r": "rebase",
}
# Options of `gh pr merge` that take a value (the value is not the pull request's number).
_GH_TAKES_VALUE = frozenset(
    {
        "--subject", "-t", "--body", "-b", "--body-file", "-F", "--repo", "-R",
        "--match-head-commit", "--author-email", "-A",
    }
)  # fmt: skip


# What gh prints when it did not merge: the pull request cannot be merged, gh's own error (a
# line opening with `X`), or `--auto` queueing it until its checks pass.
_NOT_MERGED = re.compile(
    r"\bis not mergeable\b|^\s*X |\bwill be automatically merged\b|\bGraphQL: ", re.MULTILINE
)
# What a merge tool's call says of the merge (camelCase and snake_case servers): extraction keeps
# these of a call's input, with the command of a Bash call.
_NUMBER_FIELDS = ("pullNumber", "pull_number")
_METHOD_FIELDS = ("merge_method", "mergeMethod")
_TITLE_FIELDS = ("commit_title", "commitTitle")


def kept_merge_fields(tool_input: Mapping[str, object]) -> dict[str, object]:
    """The fields of a merge tool's input this layer reads (nothing of any other call)."""
    if not any(field in tool_input for field in _METHOD_FIELDS + _NUMBER_FIELDS):
        return {}
    return {
        field: value
        for field in _NUMBER_FIELDS + _METHOD_FIELDS + _TITLE_FIELDS
        if isinstance(value := tool_input.get(field), str | int) and not isinstance(value, bool)
    }


@dataclass(frozen=True, slots=True)
class Merge:
    number: str  # "" when the call names none (the current branch's pull request)
    method: str  # squash, merge, rebase; "" when the call leaves it to the repository
    title: str
    deletes_branch: bool  # the merge call itself deletes the branch (`--delete-branch`)


def merge_note(calls: Sequence[ToolUse]) -> str | None:
    """What one turn's calls say of how a pull request was merged, or None when none was."""
    merges = [m for use in calls if (m := _merge(use)) is not None]
    if not merges:
        return None
    merge = merges[-1]
    what = f"PR #{merge.number}" if merge.number else "The pull request"
    how = f" by {merge.method}" if merge.method else ""
    titled = f' as "{merge.title}"' if merge.title else ""
    deletions = _branch_deletions(calls)
    if deletions:
        after = "; after it: " + ", ".join(f"`{d}`" for d in deletions[-MAX_DELETIONS:])
    elif merge.deletes_branch:
        after = "; the merge deleted its branch (`--delete-branch`)"
    else:
        after = ""
    return f"{what} was merged{how}{titled}{after}."


def _merge(use: ToolUse) -> Merge | None:
    if use.failed is not False or use.result is None:
        return None
    if use.name.endswith("merge_pull_request"):  # a GitHub MCP server's tool (`mcp__github__...`)
        return _mcp_merge(use.input, use.result.content)
    for words in _bash_steps(use):
        if words[:3] == ["gh", "pr", "merge"]:
            # Behind `| tail` or `|| true` a refusal exits 0; `--auto` only queues the merge.
            return None if _NOT_MERGED.search(use.result.content) else _gh_merge(words[3:])
    return None


def _mcp_merge(given: Mapping[str, object], output: str) -> Merge | None:
    if '"merged":false' in output.replace(" ", ""):
        return None
    number = next((given[f] for f in _NUMBER_FIELDS if f in given), "")
    method = next((given[f] for f in _METHOD_FIELDS if f in given), "")
    title = next((given[f] for f in _TITLE_FIELDS if f in given), "")
    return Merge(
        str(number) if isinstance(number, int | str) else "",
        method.lower() if isinstance(method, str) else "",
        clip(title, MAX_TITLE_CHARS) if isinstance(title, str) else "",
        False,
    )


def _gh_merge(args: list[str]) -> Merge:
    number, method, title, deletes = "", "", "", False
    i = 0
    while i < len(args):
        word = args[i]
        if word in _GH_METHODS:
            method = _GH_METHODS[word]
        elif word in ("--delete-branch", "-d"):
            deletes = True
        elif word in ("--subject", "-t") and i + 1 < len(args):
            title = clip(args[i + 1], MAX_TITLE_CHARS)
        elif not word.startswith("-") and not number:
            number = word.lstrip("#")
        if word in _GH_TAKES_VALUE:
            i += 1
        i += 1
    return Merge(number if number.isdigit() else "", method, title, deletes)


def _branch_deletions(calls: Sequence[ToolUse]) -> list[str]:
    """The successful `git branch -d/-D` and `git push REMOTE --delete` steps, as run."""
    out: list[str] = []
    for use in calls:
        for words in _bash_steps(use):
            local = words[:2] == ["git", "branch"] and any(w in ("-d", "-D", "--delete") for w in words[2:])
            remote = words[:2] == ["git", "push"] and any(w in ("-d", "--delete") for w in words[2:])
            if (local or remote) and " ".join(words) not in out:
                out.append(" ".join(words))
    return out


def _bash_steps(use: ToolUse) -> list[list[str]]:
    """The words of each step of a Bash call that succeeded ([] for any other call)."""
    command = use.input.get("command") if use.name == "Bash" else None
    if not isinstance(command, str) or use.failed is not False:
        return []
    return command_steps(command)
