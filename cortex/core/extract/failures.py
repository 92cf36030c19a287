"""Layer 2, failures: a failing command and what fixed it (one gotcha), or a build still
failing (its current state). Pure.

A run's outcome is read where Claude Code reports it (`runs.command_runs`: a Bash call's own
result, or what `BashOutput` later says of a command sent to the background).

The fix is what the assistant said and did between the failure and the success: the sentence
that says why ("the config needs an empty list for output_scanners"), or, without one, what it
set out to change ("Let's escape the URL properly" -> "escape the URL properly"), and the
commands that changed something in between (`pip install "numpy<2"`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from cortex.core.extract.commands import (
    changes_something,
    clip,
    inline_env,
    is_build_command,
    is_check_command,
    is_cortex_command,
    is_git_commit,
    is_same_command,
    is_test_command,
    marked_cut,
    only_discards,
    render_command,
    split_steps,
    without_inline_env,
)
from cortex.core.extract.environment import reports_missing
from cortex.core.extract.failure_words import change_said, explanation, only_cause, states_fix
from cortex.core.extract.runs import command_runs, timed_out
from cortex.core.extract.symptoms import error_digest
from cortex.core.extract.transcript import Message, Role, ToolResult, ToolUse
from cortex.core.extract.verdicts import Verdict, is_test_run, parse_command_outcome
from cortex.core.model import Candidate, Layer, MemoryType
from cortex.core.write.state import state_tag

EXPLANATION_WINDOW = 3  # assistant messages after a failure where it says why it failed
MAX_FIX_COMMANDS = 2
MAX_FAMILY_WORDS = 3
_SCRIPT_RUNNERS = frozenset(("npm", "yarn", "pnpm", "bun"))  # `<runner> [run] <script>`
EVIDENCE_CONFIDENCE = 0.6
EVIDENCE_PRIORITY = 5
CODE_ERROR_PRIORITY = 4
# A failure not seen fixed whose gotcha gives only its cause: once a later turn's run of its
# command passes, nothing in it says how it was fixed (capture/supersession.py).
CAUSE_ONLY_TAG = "cause-only"

# A compiler's diagnostic of the code itself: rustc's `error[E0605]` and "could not compile", tsc's
# `error TS2304`, javac's and Go's undefined names, a syntax error.
_CODE_ERROR = re.compile(
    r"\berror\[E\d{4}\]|--explain E\d{4}|\bcould not compile\b|\berror TS\d+\b|\bcannot find symbol\b"
    r"|: undefined: |\bSyntaxError\b"
)
_ARGUMENT = re.compile(r"^-|[/=.:@#<>|&]")  # an option, a target, or a redirection (`2>&1`)
# A hook that refused a call: 2.x "PreToolUse:Bash hook error: [cmd]: ...", 1.x "Bash operation
# blocked by hook:\n- [cmd]: ...".
_HOOK = re.compile(r"\b\w+:\w+ hook error\b|\b\w+ operation blocked by (?:a )?hook\b", re.IGNORECASE)
_HOOK_COMMAND = re.compile(r"^\W*\[([^\]\n]+)\]:?")
# A hook's script, without the `$CLAUDE_PROJECT_DIR/` that locates it (`~/` says it is the user's).
_HOOK_SCRIPT = re.compile(
    r"(?:\$\{?\w+\}?/)?((?:~/)?(?:[\w.-]+/)*[\w.-]+\.(?:py|sh|js|mjs|cjs|ts|rb|pl))(?![\w/])"
)
_REDIRECT_TAIL = re.compile(r"(?:\s+\d?>&\d|\s+\d?>\s*/dev/null)+$")
_BLOCKED = re.compile(r"\b(?:blocked|denied|prohibited|not allowed|forbidden|refused)\b", re.IGNORECASE)
Found = list[tuple[Candidate, Message]]


def command_family(shown: str) -> str:
    """What a command runs, without its options and targets (`nix flake check --cores 4` ->
    `nix flake check`, `pytest tests/a.py -q` -> `pytest`): runs of one family share a state.
    A package script is its own family whatever its name (`npm run test:e2e`, `yarn build:prod`):
    `npm run lint` passing says nothing of `npm run build`. A line of several steps is the
    family of its last test, check or build step (`touch app.db && cargo build` is `cargo build`),
    else of its first (`git add -A && git commit` is `git add`)."""
    steps = [step.strip() for step in split_steps(shown) if step.strip()]
    main = [s for s in steps if is_test_command(s) or is_check_command(s) or is_build_command(s)]
    shown = main[-1] if len(steps) > 1 and main else shown
    words = without_inline_env(shown).split()
    if len(words) >= 2 and words[0] in _SCRIPT_RUNNERS:
        if words[1] == "run" and len(words) > 2 and not words[2].startswith("-"):
            return " ".join(words[:3])
        if words[0] != "npm" and words[1] != "run" and not words[1].startswith("-"):
            return " ".join(words[:2])  # `yarn build:prod`, `pnpm test:unit`
    family: list[str] = []
    for word in words:
        if _ARGUMENT.search(word) or len(family) == MAX_FAMILY_WORDS:
            break
        family.append(word)
    return " ".join(family) or shown


def extract_failures(messages: Sequence[Message]) -> Found:
    """A failing command fixed later in the turn is a gotcha when the assistant said why or
    what it changed; a build or lint command still failing at the end is context."""
    calls = command_runs(messages)
    position = {id(m): i for i, m in enumerate(messages)}
    found: Found = []
    reported: set[tuple[str, str]] = set()  # (command, error): each distinct error is its own gotcha
    failing: dict[str, tuple[Candidate, Message]] = {}  # builds still failing: their last failure
    same = _SameFix()
    for index, (use, message) in enumerate(calls):
        command = _command(use)
        result = use.result
        # Refused or stopped by the user: nothing says whether the command works.
        if command is None or result is None or result.rejected or result.interrupted:
            continue
        if not use.failed and not _hidden_failure(command, result):
            continue
        shown = render_command(command)
        error = error_digest(result.content)
        stopped = timed_out(result.content) is not None  # at the Bash tool's time limit: no outcome
        if (shown, error) in reported:
            continue
        fixed, retried = _later_success(calls[index + 1 :], shown) or (None, "")
        start = position[id(message)] + 1
        if fixed is not None:
            between = messages[start : position[id(fixed)] + 1]
            why, said_in = explanation(between)
            # What the assistant changed says the fix, when the error is named: without a why,
            # anywhere before the success; beside a cause, in the words that gave the cause
            # (later ones may be about anything).
            upto = (said_in,) if said_in is not None else between
            change = change_said(upto) if error and not states_fix(why) else ""
            ran = _fix_commands(calls[index + 1 :], fixed, shown, not why) if (why or error) else []
            if inline_env(retried) not in ("", inline_env(shown)):  # run with a variable set
                ran = [retried, *ran][:MAX_FIX_COMMANDS]
            if why or change or ran:
                reported.add((shown, error))
                same.add(found, shown, error, _tail(why, change, ran, True), _evidence(error), fixed)
                continue
        elif error and not is_test_run(shown):
            # Not retried as such: the fix was another command or an edit. The assistant's
            # next words say why it failed; without them the failure is noise.
            window = _answers(messages, start, EXPLANATION_WINDOW)
            wider = _answers(messages, start, 2 * EXPLANATION_WINDOW)
            said, said_in = explanation(window)
            ran = _fix_commands(calls[index + 1 :], wider[-1], shown, not said) if wider else []
            if not ran and reports_missing(command, result.content):
                continue  # a program or module missing, and nothing done: the environment's note
            # What the assistant set out to change, when a command then changed it (a run that
            # timed out has no outcome: nothing was there to change), unless the why says it;
            # beside a cause, in the words that gave it.
            upto = (said_in,) if said_in is not None else window
            change = "" if not ran or stopped or states_fix(said) else change_said(upto)
            if said or change:
                reported.add((shown, error))
                tail = _tail(said, change, ran, False)
                # Not seen fixed yet: its command's state, until a later turn's passing run of that
                # command marks it fixed (capture/supersession.py).
                tags = _state(shown) + ((CAUSE_ONLY_TAG,) if only_cause(said) and not ran else ())
                same.add(found, shown, error, tail, replace(_evidence(error), tags=tags), message)
                continue
        if fixed is None and is_build_command(shown) and not stopped:
            content = f"Command failing: `{shown}` ({error})"
            failing[shown] = (_candidate(content, MemoryType.CONTEXT, 0.5, 3, _state(shown)), message)
    explained = {shown for shown, _ in reported}
    found.extend(note for shown, note in failing.items() if shown not in explained)
    return found + _hook_blocks(calls, messages)


class _SameFix:
    """Gotchas of one command with the same explanation and fix are one gotcha: each error it
    explains is listed in it ("`cargo build` failed (error: expected `;` | no method named
    `clone`); fix: the Database struct needs to implement Clone.")."""

    def __init__(self) -> None:
        self.at: dict[tuple[str, str], tuple[int, list[str]]] = {}

    def add(
        self, found: Found, shown: str, error: str, tail: str, blank: Candidate, message: Message
    ) -> None:
        """Append the gotcha (`blank` with its text), or list `error` in the one it repeats."""
        index, errors = self.at.setdefault((shown, tail), (len(found), []))
        errors.append(error)
        content = f"`{shown}` failed ({' | '.join(errors)}); {tail}"
        if index < len(found):
            found[index] = (replace(found[index][0], content=content), found[index][1])
        else:
            found.append((replace(blank, content=content), message))


def _hook_blocks(calls: Sequence[tuple[ToolUse, Message]], messages: Sequence[Message]) -> Found:
    """A project hook that refused a call ("BLOCKED: Dangerous rm command detected"): what it
    blocks, and what the assistant did instead. Nothing ran, but the rule holds for every
    later session in the project."""
    position = {id(m): i for i, m in enumerate(messages)}
    found: Found = []
    seen: set[str] = set()
    for index, (use, message) in enumerate(calls):
        result = use.result
        hook = _HOOK.search(result.content) if result is not None and result.rejected else None
        if result is None or hook is None:
            continue
        reason = _block_reason(result.content[hook.end() :])
        if not reason or reason in seen:
            continue
        seen.add(reason)
        named = _HOOK_COMMAND.search(result.content[hook.end() :])
        by = f" (`{_hook_script(named.group(1))}`)" if named else ""
        command = _command(use)
        what = f"`{_first_step(render_command(command))}`" if command else use.name
        start = position[id(message)] + 1
        window = _answers(messages, start, EXPLANATION_WINDOW)
        alternatives = _fix_commands(calls[index + 1 :], window[-1] if window else None, command or "", True)
        instead = f"; done instead with `{alternatives[0]}`" if alternatives else ""
        content = f"A project hook{by} blocks {what}: {reason}{instead}"
        found.append((replace(_evidence(), content=content), message))
    return found


def _hook_script(hook_command: str) -> str:
    """The script a hook runs (`.claude/hooks/pre_tool_use.py`), not the whole line that runs it
    (`PATH="$HOME/.local/bin:$PATH" uv run "$CLAUDE_PROJECT_DIR/.claude/hooks/pre_tool_use.py"`)."""
    scripts = _HOOK_SCRIPT.findall(hook_command)
    return scripts[-1] if scripts else clip(hook_command, 100)


def _first_step(command: str) -> str:
    """A command line up to its first `;`, `&&`, `||` or `|`: the step the hook refused."""
    step = split_steps(command)[0].strip()
    return _REDIRECT_TAIL.sub("", step).strip() or command


def _block_reason(text: str) -> str:
    """The line a blocking hook gave as its reason (the one that says blocked or denied), else
    its last line."""
    lines = [_HOOK_COMMAND.sub("", ln).strip(" -:") for ln in text.splitlines()]
    lines = [ln for ln in lines if ln]
    said = [ln for ln in lines if _BLOCKED.search(ln)]
    return clip((said or lines[-1:] or [""])[0], 200)


def _answers(messages: Sequence[Message], start: int, count: int) -> Sequence[Message]:
    """The messages from `start` through the `count`-th assistant message (tool results between
    them do not use up the window)."""
    seen = 0
    for end in range(start, len(messages)):
        if messages[end].role is Role.ASSISTANT:
            seen += 1
            if seen == count:
                return messages[start : end + 1]
    return messages[start:]


def _command(use: ToolUse) -> str | None:
    command = use.input.get("command") if use.name == "Bash" else None
    if not isinstance(command, str) or not command.strip() or is_cortex_command(command):
        return None
    return command


def _hidden_failure(command: str, result: ToolResult) -> bool:
    """A run whose own status a pipe hid (`cargo build 2>&1 | tail -5`) while its output shows
    it failed ("error: could not compile `app`"): a failure like any other."""
    verdict = parse_command_outcome(
        command, result.content, is_error=result.is_error, exit_code=result.exit_code
    )
    return verdict.verdict is Verdict.FAILED


def _later_success(calls: Sequence[tuple[ToolUse, Message]], shown: str) -> tuple[Message, str] | None:
    """The message and the command of the next run of the same command that succeeded by the
    evidence: a run whose status `| tail` hid but whose output still shows failures is no
    success, and a test run needs a passing verdict."""
    for use, message in calls:
        command, result = _command(use), use.result
        run = render_command(command) if command else ""
        if command and result and use.failed is False and is_same_command(run, shown):
            verdict = parse_command_outcome(
                command, result.content, is_error=result.is_error, exit_code=result.exit_code
            ).verdict
            if verdict is Verdict.PASSED or (verdict is Verdict.UNKNOWN and not is_test_run(command)):
                return message, run
    return None


def _fix_commands(
    calls: Sequence[tuple[ToolUse, Message]], until: Message | None, shown: str, discards: bool
) -> list[str]:
    """The commands that changed something between the failure and `until` (its message
    included), in order: not the failing command again, nor commands that only look. A command
    that only threw work away (`git checkout flake.nix` after a script mangled it) undid a side
    effect; with a why at hand (`discards` false) it is left out, for a next session would take
    it as the fix and lose its own uncommitted work."""
    out: list[str] = []
    for use, message in calls:
        command = _command(use)
        if command and use.failed is False:
            run = render_command(command)
            changes = changes_something(run) and not is_same_command(run, shown) and not is_git_commit(run)
            if (
                changes
                and (discards or not only_discards(run))
                and not is_test_run(run)
                and not is_check_command(run)
            ):
                run = marked_cut(command, run)
                out += [run] if run not in out else []
        if message is until or len(out) == MAX_FIX_COMMANDS:
            break
    return out


def _tail(why: str, change: str, ran: Sequence[str], fixed: bool) -> str:
    """What a gotcha says after its error: the labelled why, or else the change, then the
    commands run. A cause goes with the change the assistant set out to make, or, for a failure
    seen fixed, says so: the error alone reads as a state."""
    if why.startswith("cause:"):
        if states_fix(why) or not (fixed or change):
            return f"{why}{_ran(ran, True)}"
        return f"{why.rstrip('.')}; {f'fix: {change}' if change else 'fixed'}{_ran(ran, True)}"
    said = why or (f"fix: {change}" if change else "")
    return f"{said}{_ran(ran, True)}" if said else f"fix: ran{_ran(ran, False)}"


def _ran(commands: Sequence[str], after_text: bool) -> str:
    if not commands:
        return ""
    listed = ", ".join(f"`{c}`" for c in commands)
    return f" (ran {listed})" if after_text else f" {listed}"


def _evidence(error: str = "") -> Candidate:
    """A blank gotcha of this layer: a failure and what the assistant said and ran about it, or
    the harness refusing a call. It rests on what happened, so it ranks above a report's prose
    (0.6, 4) and its labelled lines; measured on 8 real sessions, 10 of the 14 such gotchas that
    reached a briefing answered a reader's key fact, against 19 of 44 report sections and 3 of 16
    labelled lines. A compiler's diagnostic of the code being written (`error[E0605]`, `error
    TS2304`) ranks as prose: fixed by the next edit, it is seldom what a later session needs,
    unlike a port in use, a missing file or a tool's refusal."""
    priority = CODE_ERROR_PRIORITY if _CODE_ERROR.search(error) else EVIDENCE_PRIORITY
    return _candidate("", MemoryType.GOTCHA, EVIDENCE_CONFIDENCE, priority)


def _candidate(
    content: str, kind: MemoryType, confidence: float, priority: int, tags: tuple[str, ...] = ()
) -> Candidate:
    layer = Layer.STRUCTURAL
    return Candidate(
        content=content, type=kind, layer=layer, confidence=confidence, priority=priority, tags=tags
    )


def _state(shown: str) -> tuple[str, ...]:
    """The tag that makes a failure the current state of its command's family."""
    return (state_tag(f"command:{command_family(shown)}"),)
