"""Tool calls with their outcomes, read where Claude Code reports them. Pure.

A Bash call's outcome is its own result; a command sent to the background has its outcome where
`BashOutput` (`TaskOutput` from 2.1) later says of it (`<status>failed</status>`, its exit code
and its output), and the launch itself ("Command running in background") has none. A command
line the shell refused (zsh's `no matches found`, `command not found`) failed, whatever the exit
status of the pipe after it.

A Bash call also says what it is for (`description`: "Lint workflow files"): the note that the
machine lacks a program it ran says it too (`purpose`). A call the Bash tool stopped at its time
limit has no outcome (`timed_out`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from cortex.core.extract.commands import clip
from cortex.core.extract.transcript import Message, ToolResult, ToolUse

MAX_PURPOSE_CHARS = 80

# A background launch and what BashOutput (1.x, 2.0) or TaskOutput (2.1, with the launch's id as
# `task_id`, and `<output>` for both streams) reports of it later. 2.1 ends the id with a full stop:
# "Command running in background with ID: b03a6e3. Output is being written to: ...".
_LAUNCHED = re.compile(r"^Command running in background with ID: (\S+?)\.?(?:\s|$)")
_STATUS = re.compile(r"<status>(\w+)</status>")
_EXIT = re.compile(r"<exit_code>(-?\d+)</exit_code>")
_STREAM = re.compile(r"<(stderr|stdout|output)>\n?(.*?)\n?</\1>", re.DOTALL)
_REPORTERS = {"BashOutput": ("bash_id", "shell_id"), "TaskOutput": ("task_id",)}
_FINAL = frozenset({"failed", "completed", "killed"})
# The Bash tool stopped the call at its time limit (2.x puts "Exit code 143" before it).
_TIMED_OUT = re.compile(
    r"^(?:Exit code \d+\s+)?(?:Error: )?Command timed out(?: after (\d+m(?: [\d.]+s)?|[\d.]+s))?", re.I
)
# A `timeout N` wrapper around the command itself (`timeout 600 nix build ...`).
_TIMEOUT_WRAPPER = re.compile(r"^timeout\s+(?:-\S+\s+(?:[A-Z0-9]+[smhd]?\s+(?=\d))?)*\d+(?:\.\d+)?[smhd]?\s+")
# Words of a description that only say a command is run ("Run cargo build").
_RUN_WORDS = frozenset({"run", "runs", "running", "execute", "the", "a", "an", "command"})
_PURPOSE_WORD = re.compile(r"[\w.+-]+")
# The shell refused the line before anything ran.
_SHELL_REFUSED = re.compile(
    r"^(?:\(eval\)|zsh|bash|sh)(?::[\w ]+)*: (?:no matches found|command not found|parse error|bad pattern)",
    re.MULTILINE,
)


def command_runs(messages: Sequence[Message]) -> list[tuple[ToolUse, Message]]:
    """Every tool call with its outcome where it is known: a background command's outcome is
    the call that reported it (at that message), and a line the shell refused failed."""
    launched: dict[str, dict[str, object]] = {}  # id -> the launch's input
    done: set[str] = set()
    out: list[tuple[ToolUse, Message]] = []
    for message in messages:
        for use in message.tool_uses:
            result = use.result
            command = use.input.get("command") if use.name == "Bash" else None
            if isinstance(command, str) and result is not None:
                started = _LAUNCHED.match(result.content.strip())
                if started:
                    launched[started.group(1)] = dict(use.input)
                    continue  # a launch has no outcome yet
                if not result.is_error and _SHELL_REFUSED.search(result.content):
                    use = ToolUse(use.id, use.name, use.input, _as_failed(result))
            shell = next(filter(None, (use.input.get(k) for k in _REPORTERS.get(use.name, ()))), None)
            if isinstance(shell, str) and shell in launched and shell not in done and result is not None:
                reported = _background_outcome(use.id, launched[shell], result)
                if reported is not None:
                    done.add(shell)
                    out.append((reported, message))
                continue
            out.append((use, message))
    return out


def purpose(use: ToolUse) -> str:
    """What the assistant said a Bash call was for (its `description`), on one line without a
    closing full stop; "" without one, or when it only names the command ("Run cargo build"
    for `cargo build --release`)."""
    said = use.input.get("description")
    command = use.input.get("command")
    if not isinstance(said, str) or not isinstance(command, str):
        return ""
    said = " ".join(said.split()).rstrip(". ")
    words = _stems(said) - _RUN_WORDS
    if words <= _stems(command):
        return ""
    return clip(said, MAX_PURPOSE_CHARS)


def timed_out(output: str) -> str | None:
    """The limit at which the Bash tool stopped a call ("2m 0.0s"; "" when it does not say), or
    None for a call that ended by itself: a run stopped there has no outcome."""
    m = _TIMED_OUT.match(output.strip())
    return None if m is None else m.group(1) or ""


def without_timeout(shown: str) -> str:
    """A command without its `timeout N` wrapper: the command it runs."""
    return _TIMEOUT_WRAPPER.sub("", shown)


def _stems(text: str) -> set[str]:
    """The words of `text`, lower-cased, without a plural's `s` ("tests" is `test`)."""
    words = _PURPOSE_WORD.findall(text.lower())
    return {w[:-1] if len(w) > 3 and w.endswith("s") else w for w in words}


def _as_failed(result: ToolResult) -> ToolResult:
    return replace(result, is_error=True)


def _background_outcome(tool_id: str, launch: dict[str, object], result: ToolResult) -> ToolUse | None:
    """The background command's run as BashOutput reports it once it ended (with the launch's
    input: its command and description), else None."""
    status = _STATUS.search(result.content)
    if status is None or status.group(1) not in _FINAL:
        return None
    code = _EXIT.search(result.content)
    exit_code = int(code.group(1)) if code else None
    streams = {name: text.strip() for name, text in _STREAM.findall(result.content)}
    output = "\n".join(s for s in (streams.get(k, "") for k in ("stderr", "stdout", "output")) if s)
    failed = status.group(1) == "failed" or bool(exit_code)
    outcome = ToolResult(tool_id, output, is_error=failed, exit_code=exit_code)
    return ToolUse(tool_id, "Bash", launch, outcome)
