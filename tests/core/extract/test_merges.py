"""Layer 2: a pull request merged in the session is the repository's way of landing work."""

from __future__ import annotations

from cortex.core.extract.merges import merge_note
from cortex.core.extract.pipeline import extract_candidates
from cortex.core.extract.structural import extract_structural
from cortex.core.extract.transcript import ToolResult, ToolUse
from cortex.core.model import MemoryType
from tests.support.transcript_builders import assistant, bash, user

BRANCH = "feature/issue-271-developer-workflow"


def mcp_merge(output: str, *, error: bool = False, tid: str = "m1") -> ToolUse:
    # A real 1.0.x shape: the GitHub MCP server's tool, its input and its JSON answer.
    given = {
        "owner": "acme",
        "repo": "server",
        "pullNumber": 387,
        "merge_method": "squash",
        "commit_title": "Feature: Developer workflow documentation and automation (#387)",
        "commit_message": "Comprehensive developer experience improvements",
    }
    return ToolUse(tid, "mcp__github__merge_pull_request", given, ToolResult(tid, output, is_error=error))


MERGED = '[{"type": "text", "text": "{\\"sha\\":\\"b77f523\\",\\"merged\\":true}"}]'


def test_a_squash_merge_and_the_branch_cleanup_after_it_are_one_convention() -> None:
    messages = [
        user("merge PR"),
        assistant("I'll merge PR #387 now.", uses=(mcp_merge(MERGED),)),
        assistant(uses=(bash("git checkout main && git pull origin main", "Fast-forward", tid="2"),)),
        assistant(
            uses=(bash(f"git branch -d {BRANCH}", f"Deleted branch {BRANCH} (was 4094b1d).", tid="3"),)
        ),
        assistant(uses=(bash(f"git push origin --delete {BRANCH}", f" - [deleted] {BRANCH}", tid="4"),)),
    ]
    # Through the whole extraction: the merge tool's method, number and title survive the
    # trimming of tool inputs before the layers read them.
    notes = [
        c for c in extract_candidates(messages, project_root="/p", git=None) if c.type is MemoryType.PATTERN
    ]
    assert [n.content for n in notes] == [
        'PR #387 was merged by squash as "Feature: Developer workflow documentation and automation (#387)"; '
        f"after it: `git branch -d {BRANCH}`, `git push origin --delete {BRANCH}`."
    ]


def test_gh_pr_merge_says_its_method_and_whether_it_deletes_the_branch() -> None:
    merged = bash(
        'gh pr merge 12 --rebase --delete-branch --subject "Add retry queue (#12)"', "✓ Merged", tid="1"
    )
    assert merge_note([merged]) == (
        'PR #12 was merged by rebase as "Add retry queue (#12)"; '
        "the merge deleted its branch (`--delete-branch`)."
    )
    # The repository's default method, the current branch's pull request, after a `cd`.
    plain = bash("cd web && gh pr merge --merge", "✓ Merged", tid="2")
    assert merge_note([plain]) == "The pull request was merged by merge."
    # `gh pr merge -s -d 7`: short options, the number last.
    # The cleanup is quoted as it ran: a forced local delete, another remote.
    cleanup = bash("git branch -D feat/x && git push upstream --delete feat/x", "", tid="4")
    assert merge_note([plain, cleanup]) == (
        "The pull request was merged by merge; after it: `git branch -D feat/x`, "
        "`git push upstream --delete feat/x`."
    )
    short = bash("gh pr merge -s -d 7", "✓ Merged", tid="3")
    assert (
        merge_note([short]) == "PR #7 was merged by squash; the merge deleted its branch (`--delete-branch`)."
    )


def test_no_merge_no_note() -> None:
    failed = bash("gh pr merge 12 --squash", "GraphQL: Pull Request is not mergeable", error=True, tid="1")
    refused = bash("gh pr merge 12 --squash", "", rejected=True, tid="2")
    not_merged = mcp_merge('{"merged":false,"message":"Base branch was modified"}', tid="3")
    viewed = bash("gh pr view 12 && git branch -d old", "title: x", tid="4")
    quoted = bash("echo 'gh pr merge 12 --squash'", "gh pr merge 12 --squash", tid="5")
    # gh's refusal behind a pipe exits 0, and `--auto` only queues the merge (real wordings).
    hidden = bash(
        "gh pr merge 12 --squash 2>&1 | tail -2",
        "X Pull request #12 is not mergeable: the merge commit cannot be cleanly created.",
        tid="6",
    )
    queued = bash(
        "gh pr merge 12 --auto --squash",
        "✓ Pull request #12 will be automatically merged via squash when all requirements are met",
        tid="7",
    )
    for calls in ([failed], [refused], [not_merged], [viewed], [quoted], [hidden], [queued]):
        assert merge_note(calls) is None, calls[0].input
    # A branch deleted without a merge in the turn is no convention either.
    messages = [user("clean up"), assistant(uses=(viewed,))]
    assert not [c for c, _ in extract_structural(messages, project_root="/p") if c.type is MemoryType.PATTERN]
