"""Layer 2, structural: edits, test runs, commits and failures from tool calls. Pure."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from cortex.core.extract.ci_runs import CI_KEY, ci_state
from cortex.core.extract.commands import (
    bash_command,
    changes_something,
    clip,
    is_check_command,
    is_git_commit,
    is_git_revert,
    parse_commit,
    parse_git_add_paths,
    render_command,
)
from cortex.core.extract.commit_subjects import commit_kind, docs_commit_scope
from cortex.core.extract.failures import EVIDENCE_CONFIDENCE, command_family, extract_failures
from cortex.core.extract.merges import merge_note
from cortex.core.extract.project_paths import WINDOWS_ROOT
from cortex.core.extract.project_paths import relative_path as relative_path  # where callers look for it
from cortex.core.extract.runs import command_runs, timed_out, without_timeout
from cortex.core.extract.service_errors import extract_service_errors
from cortex.core.extract.signals import commit_body
from cortex.core.extract.staging import extract_staging
from cortex.core.extract.symptoms import error_digest as error_digest  # where callers look for it
from cortex.core.extract.transcript import Message, Role, ToolResult, ToolUse
from cortex.core.extract.transcript_model import EDIT_TOOLS
from cortex.core.extract.verdicts import (
    Verdict,
    counts_tests,
    is_test_run,
    parse_command_outcome,
    parse_test_outcome,
)
from cortex.core.model import Candidate, Layer, MemoryType
from cortex.core.write.state import state_tag

MAX_FILES_LISTED = 5  # named in the note's text; its files keep up to MAX_FILES_KEPT
MAX_FILES_KEPT = 20
MAX_DETAIL_CHARS = 160
REQUEST_CHARS = 100  # the request an edit note quotes
_COMMIT_KINDS = {
    "fix": (MemoryType.GOTCHA, 6),
    "decision": (MemoryType.DECISION, 6),
    "feature": (MemoryType.ARCHITECTURE, 6),
    "progress": (MemoryType.PROGRESS, 4),
}
EDITS_TAG = "edits"  # a turn's edited files: the briefing shows only the latest few
PASSED_TAG = "passed"  # a passing test run or check: a failure of its command not seen fixed was fixed


Found = list[tuple[Candidate, Message]]


@dataclass(slots=True)
class _Turn:
    """A user prompt and everything up to the next one."""

    prompt: Message | None
    messages: list[Message] = field(default_factory=list)


_CD_TARGET = re.compile(r"""^\s*cd\s+("[^"]*"|'[^']*'|\S+)\s*(?:&&|;)""")


def extract_structural(messages: Sequence[Message], *, project_root: str | None) -> Found:
    """Progress/context candidates from each turn's tool calls, plus explained fixes (gotchas)."""
    found: Found = []
    for turn in _turns(messages):
        found.extend(_edits(turn, project_root))
        found.extend(_tests(turn, project_root))
        found.extend(_checks(turn, project_root))
        found.extend(_unfinished(turn, project_root))
        found.extend(_commits(turn, project_root))
        found.extend(_merges(turn))
        found.extend(_ci(turn))
        found.extend(extract_staging(turn.messages, project_root))
        found.extend(extract_service_errors(turn.messages))
    found.extend(extract_failures(messages))
    return found


def _turns(messages: Sequence[Message]) -> list[_Turn]:
    turns: list[_Turn] = []
    for message in messages:
        starts = message.role is Role.USER and bool(
            message.texts or message.command or any(r.notice for r in message.tool_results)
        )
        if starts or not turns:
            turns.append(_Turn(message if starts else None))
        turns[-1].messages.append(message)
    return turns


def _calls(messages: Sequence[Message]) -> list[tuple[ToolUse, Message]]:
    return [(use, m) for m in messages for use in m.tool_uses]


def _edits(turn: _Turn, project_root: str | None) -> Found:
    edited: dict[str, None] = {}
    written: dict[str, None] = {}
    last: Message | None = None
    for use, message in _calls(turn.messages):
        if use.name not in EDIT_TOOLS or use.failed:
            continue
        raw = use.input.get("file_path") or use.input.get("notebook_path")
        path = relative_path(raw, project_root) if isinstance(raw, str) else None
        if path:
            (written if use.name == "Write" else edited).setdefault(path, None)
            last = message
    if last is None:
        return []
    edited = {p: None for p in edited if p not in written}  # a file written this turn is new
    parts = []
    room = max(1, MAX_FILES_LISTED - len(edited))  # the edited files first, then the new ones
    if edited:
        parts.append("Edited " + _list_files(list(edited), MAX_FILES_LISTED))
    if written:
        parts.append(("wrote " if edited else "Wrote ") + _list_files(list(written), room))
    content = "; ".join(parts) + _request_note(turn.prompt)
    files = tuple(dict.fromkeys([*edited, *written]))[:MAX_FILES_KEPT]
    return [(_candidate(content, MemoryType.PROGRESS, files, 0.55, 3, (EDITS_TAG,)), last)]


def _runs(turn: _Turn, project_root: str | None) -> list[tuple[str, ToolResult, Message]]:
    """(command, result, message) of each Bash call that ran in the project: refused and
    interrupted calls, and calls with no result yet, did not. A command sent to the background
    ran where BashOutput or TaskOutput reported its end (`command_runs`)."""
    runs = []
    for use, message in command_runs(turn.messages):
        command, result = bash_command(use), use.result
        ran = result is not None and not result.rejected and not result.interrupted
        if command is not None and result is not None and ran and not _elsewhere(command, project_root):
            runs.append((command, result, message))
    return runs


def _elsewhere(command: str, project_root: str | None) -> bool:
    """The command starts in a folder outside the project (`cd /tmp/repro && pytest`): what its
    run shows is another checkout's state. A relative or home-relative folder is taken as
    the project's (where it leads is not known here)."""
    m = _CD_TARGET.match(command)
    if not project_root or m is None:
        return False
    target = m.group(1).strip("\"'").replace("\\", "/").rstrip("/")
    if not (target.startswith("/") or WINDOWS_ROOT.match(target)):
        return False
    same = target.casefold() == project_root.replace("\\", "/").rstrip("/").casefold()
    return not same and relative_path(target, project_root) is None


def _tests(turn: _Turn, project_root: str | None) -> Found:
    """The last run with evidence of each test command: a refused, interrupted, timed-out or
    unreadable run, one that never started (`cd` failed), or one in another checkout is no
    verdict. The same command run again with nothing changed in between, to see another part
    of its output (`| tail -20`, then `| grep FAIL`), is one run: its summary keeps the counts
    the earlier look showed."""
    calls = _calls(turn.messages)
    at = {use.id: i for i, (use, _) in enumerate(calls)}
    outcomes: dict[str, tuple[bool, str, Message, int | None]] = {}
    for command, result, message in _runs(turn, project_root):
        if timed_out(result.content) is not None:  # the last run did not finish: no earlier verdict stands
            outcomes.pop(render_command(command), None)
            continue
        outcome = parse_test_outcome(
            command, result.content, is_error=result.is_error, exit_code=result.exit_code
        )
        if outcome.verdict not in (Verdict.PASSED, Verdict.FAILED):
            continue
        failed, summary, shown = outcome.verdict is Verdict.FAILED, outcome.summary, render_command(command)
        here, before = at.get(result.tool_use_id), outcomes.get(shown)
        if before is not None and before[0] == failed and here is not None and before[3] is not None:
            unchanged = not any(_changes(use, shown) for use, _ in calls[before[3] + 1 : here])
            if unchanged and counts_tests(before[1]) and not counts_tests(summary):
                summary = f"{before[1]}; {summary}" if summary else before[1]
        outcomes[shown] = (failed, summary, message, here)  # the last run wins
    found: Found = []
    for shown, (failed, summary, message, _) in outcomes.items():
        verdict = "Tests failing" if failed else "Tests passed"
        detail = f" ({clip(summary, MAX_DETAIL_CHARS)})" if summary else ""
        content = f"{verdict}: `{shown}`{detail}"
        tags = _state("test", shown) if failed else (*_state("test", shown), PASSED_TAG)
        # A failing run rests on the runner's own count, as a failure's gotcha does: in the briefing
        # it is not outranked by a report's prose ("Remaining Tasks: ...") of the same branch.
        confidence, priority = (EVIDENCE_CONFIDENCE, 4) if failed else (0.55, 3)
        found.append((_candidate(content, MemoryType.PROGRESS, (), confidence, priority, tags), message))
    return found


def _changes(use: ToolUse, shown: str) -> bool:
    """Whether a call may have changed what a test run of `shown` sees: an edit, or a command
    other than that run that does more than look."""
    if use.name in EDIT_TOOLS:
        return not use.failed
    command = bash_command(use)
    return command is not None and render_command(command) != shown and changes_something(command)


def _checks(turn: _Turn, project_root: str | None) -> Found:
    """A build, lint or type check whose last run in the turn succeeded: its current state,
    which replaces an older "Command failing" note of the same command."""
    last: dict[str, tuple[bool, Message]] = {}
    for command, result, message in _runs(turn, project_root):
        shown = render_command(command)
        if is_check_command(shown) and not is_test_run(shown):
            outcome = parse_command_outcome(
                command, result.content, is_error=result.is_error, exit_code=result.exit_code
            )
            last[shown] = (outcome.verdict is not Verdict.PASSED, message)  # no evidence: no success
    found: Found = []
    for shown, (failed, message) in last.items():
        if not failed:
            tags = (*_state("command", shown), PASSED_TAG)
            found.append((_candidate(f"`{shown}` succeeds", MemoryType.PROGRESS, (), 0.55, 3, tags), message))
    return found


def _unfinished(turn: _Turn, project_root: str | None) -> Found:
    """A test run or check whose last run in the turn the Bash tool stopped at its time limit
    ("Command timed out after 2m 0.0s"): its result is not known. That is the command's current
    state until a later run of the same command line has an outcome: the next session should
    neither take an older verdict for it nor expect it to finish within the limit."""
    last: dict[str, tuple[str | None, str, Message]] = {}  # command -> (limit, state kind, message)
    for command, result, message in _runs(turn, project_root):
        shown = without_timeout(render_command(command))
        kind = "test" if is_test_run(shown) else "command" if is_check_command(shown) else None
        if kind is not None:
            last[shown] = (timed_out(result.content), kind, message)
    found: Found = []
    for shown, (limit, kind, message) in last.items():
        if limit is not None:
            stopped = f"after {limit}" if limit else "at its time limit"
            content = f"`{shown}` did not finish: the Bash tool stopped it {stopped}; its result is not known"
            note = _candidate(content, MemoryType.PROGRESS, (), 0.55, 4, (_run_state(kind, shown),))
            found.append((note, message))
    return found


def _commits(turn: _Turn, project_root: str | None) -> Found:
    found: Found = []
    for use, message in _calls(turn.messages):
        command = bash_command(use)
        if command is None or use.result is None or use.failed:
            continue
        revert = is_git_revert(command)  # a commit only as its output shows it (`-m 1` is no message)
        if not (revert or is_git_commit(command)):
            continue
        sha, subject = parse_commit("" if revert else command, use.result.content)
        if not subject:
            continue
        added = (relative_path(p, project_root) for p in parse_git_add_paths(command))
        label = f"Committed {sha}: " if sha else "Committed: "
        body = commit_body(command)
        content = label + clip(subject, MAX_DETAIL_CHARS) + (f" ({body})" if body else "")
        # A fix records a problem and its cure, a change of course a decision, a feature what
        # the code now has: all outlive the session's progress (the briefing shows them with
        # the gotchas, decisions and architecture; on 8 real sessions, 4 of the 5 feature
        # commits answered a reader's key fact).
        kind, priority = _COMMIT_KINDS[commit_kind(subject)]
        files = tuple(p for p in added if p)
        found.append((_candidate(content, kind, files, 0.6, priority, _docs_state(subject, files)), message))
    return found


def _merges(turn: _Turn) -> Found:
    """How the turn merged a pull request and cleaned up after it: the repository's way of
    landing work, a convention for the next session."""
    calls = _calls(turn.messages)
    note = merge_note([use for use, _ in calls])
    if note is None:
        return []
    return [(_candidate(note, MemoryType.PATTERN, (), 0.55, 4), calls[-1][1])]


def _ci(turn: _Turn) -> Found:
    """Where CI stands, as the turn's last `gh run list` or `gh pr checks` listed it: a state
    a later listing replaces."""
    found = ci_state(_calls(turn.messages))
    if found is None:
        return []
    note, message, failed = found
    # A red listing rests on CI's own word, as a failing test run does: in the briefing it is not
    # outranked by a report's prose of the same branch ("Fixed the workflows with GH_TOKEN").
    confidence = EVIDENCE_CONFIDENCE if failed else 0.55
    return [(_candidate(note, MemoryType.PROGRESS, (), confidence, 4, (state_tag(CI_KEY),)), message)]


def _docs_state(subject: str, files: tuple[str, ...]) -> tuple[str, ...]:
    """A documentation commit's state key: its scope and the files it commits. A later docs
    commit of the same scope on the same files says what they hold now, and replaces it
    ("docs(memory): fixed image paste; trigger Ctrl+V not Cmd+V", then "docs(memory): real
    Cmd+V fix is jcode-side"). Without named files nothing says it is the same document."""
    scope = docs_commit_scope(subject)
    if scope is None or not files:
        return ()
    return (state_tag(f"commit:{scope}:{' '.join(sorted(files))}"),)


def _request_note(prompt: Message | None) -> str:
    if prompt is None or not prompt.texts:
        return ""
    lines = [line.strip() for line in prompt.texts[0].splitlines() if line.strip()]
    request = lines[0] if lines else ""
    # "Couple of things here:" opens the request; what it asks is on the lines after it.
    for line in lines[1:]:
        if not request.endswith((":", "\uff1a")) or len(request) > REQUEST_CHARS:
            break
        request = f"{request} {line}"
    if len(request.split()) < 4:
        return ""
    return f' (request: "{clip(request, REQUEST_CHARS)}")'


def _list_files(paths: list[str], limit: int) -> str:
    shown = ", ".join(paths[:limit])
    extra = len(paths) - limit
    return shown + (f" and {extra} more" if extra > 0 else "")


def _candidate(
    content: str,
    kind: MemoryType,
    files: tuple[str, ...],
    confidence: float,
    priority: int,
    tags: tuple[str, ...] = (),
) -> Candidate:
    return Candidate(
        content=content,
        type=kind,
        layer=Layer.STRUCTURAL,
        confidence=confidence,
        priority=priority,
        files=files,
        tags=tags,
    )


def _state(kind: str, shown: str) -> tuple[str, ...]:
    """The tags that make a verdict the current state of this command's family (`test` or
    `command`) and of the command line itself (`_run_state`): a later run of the line that did
    not finish replaces it, and it replaces the note that an earlier one did not."""
    family = state_tag(f"{kind}:{command_family(shown)}")
    line = _run_state(kind, shown)
    return (family,) if line == family else (family, line)


def _run_state(kind: str, shown: str) -> str:
    """The state key of one command line, without its `timeout N` wrapper: `nix build .#simple`
    passing says nothing of `nix build .#module`, which did not finish."""
    return state_tag(f"{kind}:{without_timeout(shown)}")
