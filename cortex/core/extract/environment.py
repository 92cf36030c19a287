"""What this machine lacks: a program or Python module a command could not find. Pure.

`actionlint .github/workflows/*.yml` answered "command not found: actionlint", and `python3 -c
"import yaml; ..."` "No module named 'yaml'": the next session would find that out again. Such a
note is the current state of its tool (`state:tool:<name>`), kept only while nothing later says
otherwise: a later run that finds the tool, or an install that names it ("brew install
actionlint", "pip install pyyaml"), settles it, in the same turn (nothing is stored) or in a
later one (the note is retired; `tools_settled` says which).

Only what the command line itself runs counts: "sh: vitest: command not found" under `npm test`
says the project's packages are not installed yet, not that the machine lacks a program. A module
missing under the project's virtualenv (`poetry run`, `uv run`, `.venv/bin/python`) is said to be
missing from that environment, not from the machine.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from cortex.core.extract.commands import clip, render_command, split_steps, without_inline_env
from cortex.core.extract.runs import command_runs, purpose, without_timeout
from cortex.core.extract.transcript import Message
from cortex.core.model import Candidate, Layer, MemoryType
from cortex.core.write.state import state_tag

TOOL_KEY = "tool:"  # the state key of a missing tool: `state:tool:<name>`
CONFIDENCE = 0.6  # it rests on what a command printed, as a failure's gotcha does
PRIORITY = 5
MIN_PACKAGE_MATCH_CHARS = 3  # `pyyaml` installs `yaml`; a shorter name must match whole
MAX_SHOWN_CHARS = 120

_NAME = r"[A-Za-z][\w.+-]*"
# zsh "command not found: X", bash "X: command not found", dash "sh: 1: X: not found", cmd.exe
# "'X' is not recognized as an internal or external command", PowerShell "The term 'X' is not
# recognized as the name of a cmdlet"; a wrapper that runs X itself: GNU `timeout`/`nohup`
# "failed to run command 'X': No such file or directory", `env` "env: 'X': No such file ...".
_PROGRAM_MISSING = re.compile(
    rf"command not found: ({_NAME})$|(?:^|: )({_NAME}): command not found$|^\S+: \d+: ({_NAME}): not found$"
    rf"|^'({_NAME})' is not recognized as an internal or external command"
    rf"|The term '({_NAME})' is not recognized as the name of a cmdlet"
    rf"|^(?:timeout|nohup|env): (?:failed to run command )?[\u2018'`]({_NAME})[\u2019']: "
    r"No such file or directory$",
    re.MULTILINE,
)
# A module imported under a project's virtualenv (`poetry run python -c "import x"`, `.venv/bin/python`,
# `source .venv/bin/activate && ...`) is missing from that environment, not from the machine.
_PROJECT_ENV = re.compile(
    r"\b(?:poetry|uv|pipenv|pdm|hatch|rye|conda|mamba|micromamba)\s+run\b|(?:^|[\s/\"'])\.?venv/bin/|\bactivate\b"
)
PROGRAM, MODULE, ENV_MODULE = "program", "Python module", "Python module of the project's environment"
_MODULE_MISSING = re.compile(r"\bNo module named '?([A-Za-z_]\w*)")
_IMPORT = re.compile(r"(?:^|[\s;\"'(])(?:import|from)\s+([A-Za-z_]\w*)|\s-m\s+([A-Za-z_]\w*)")
_INSTALLS = re.compile(r"^(?:install|add)$")
_REDIRECTION = re.compile(r"\s+\d?>&\d|\s+\d?>\s*/dev/null")
_KEYWORD = re.compile(r"^(?:do|then|else)\s+")  # a loop's or a test's body: `for f in *; do x "$f"; done`
_NOT_INSTALLERS = frozenset({"git", "ssh-add", "gh"})  # `git add`, `git remote add`, `gh label add`
_ELSEWHERE = frozenset({"docker", "podman", "kubectl", "ssh", "vagrant", "lxc", "incus", "multipass"})
_LEAD_WORDS = frozenset(
    {"sudo", "command", "exec", "time", "env", "nohup", "xargs", "do", "then", "else", "!"}
)


def missing_tools(turn: Sequence[Message]) -> list[tuple[Candidate, Message]]:
    """A note per program or module the turn's commands could not find, and nothing later in
    the turn found or installed."""
    last: dict[str, tuple[str, _Run] | None] = {}  # name -> (what, the run) or settled
    for run in _evidence(turn):
        for name in set(last) - set(run.missing):
            if last[name] is not None and settles(run.found, name):
                last[name] = None
        last.update((name, (what, run)) for name, what in run.missing.items())
    kept = {name: seen for name, seen in last.items() if seen is not None}
    return [(_note(name, what, run), run.message) for name, (what, run) in kept.items()]


def tools_settled(turn: Sequence[Message]) -> frozenset[str]:
    """What the turn's commands ran, imported or installed, as its last word on each (a name
    the turn then found missing is left out): an earlier turn's note that one of them is
    missing is no longer true (`settles`)."""
    state: dict[str, bool] = {}
    for run in _evidence(turn):
        state.update((name, False) for name in run.missing)
        state.update((name, True) for name in run.found)
    return frozenset(name for name, settled in state.items() if settled)


def reports_missing(command: str, output: str) -> bool:
    """Whether a run's output says a program or module the line itself runs is missing: this
    layer's note is what the failure says."""
    return bool(_missing(command, output))


def tool_state_tag(name: str) -> str:
    return state_tag(TOOL_KEY + name)


def tool_of(tags: Sequence[str]) -> str | None:
    """The tool a missing-tool note is about, from its state tag."""
    prefix = tool_state_tag("")
    return next((t[len(prefix) :] for t in tags if t.startswith(prefix)), None)


def settles(found: frozenset[str] | set[str], name: str) -> bool:
    """Whether what a run found or installed covers the missing `name`: the name itself, or a
    package named after it (`pyyaml` provides `yaml`, `python-dotenv` `dotenv`, `sqlx-cli`
    the `sqlx` program)."""
    if name in found:
        return True
    name = name.lower()
    if len(name) < MIN_PACKAGE_MATCH_CHARS:
        return False
    return any(word.endswith(name) or name in re.split(r"[-_.]", word) for word in found)


class _Run(NamedTuple):
    """A shell command with an outcome: what its output says is missing (name -> PROGRAM,
    MODULE or ENV_MODULE), and what it ran, imported or installed."""

    command: str
    purpose: str
    message: Message
    missing: dict[str, str]
    found: set[str]


def _evidence(turn: Sequence[Message]) -> list[_Run]:
    """Each shell command with an outcome, in order. A command that reports something missing
    finds nothing: the steps after the missing one may not have run."""
    out = []
    for use, message in command_runs(turn):
        command = use.input.get("command")
        if use.name == "Bash" and isinstance(command, str) and use.result is not None:
            missing = _missing(command, use.result.content)
            found = set() if missing else _found(command, not use.failed)
            out.append(_Run(command, purpose(use), message, missing, found))
    return out


def _missing(command: str, output: str) -> dict[str, str]:
    """name -> what it is (PROGRAM, MODULE, ENV_MODULE), for what the output says is missing
    and the command line itself runs or imports."""
    out: dict[str, str] = {}
    runs = _programs(command)
    for m in _PROGRAM_MISSING.finditer(output):
        name = next(g for g in m.groups() if g)
        if name in runs:
            out[name] = PROGRAM
    # A module missing in a container or on another host is not missing here.
    imported = _imports(command) if not runs & _ELSEWHERE else set()
    for m in _MODULE_MISSING.finditer(output):
        name = m.group(1)
        if name in imported:
            in_env = _PROJECT_ENV.search(command) is not None
            out[name] = ENV_MODULE if in_env else MODULE
    return out


def _found(command: str, succeeded: bool) -> set[str]:
    """What the command line runs or imports, and (when it succeeded) the packages its
    install steps name (`pip install pyyaml`, `brew install actionlint`)."""
    names = _programs(command) | _imports(command)
    for step in split_steps(command):
        words = without_inline_env(step.strip()).split()
        # `pip install x`, `apt-get install -y x`, `sudo apt install x`, `python -m pip install x`;
        # not `git add x`.
        installs = any(_INSTALLS.match(w) for w in words[1:4]) and not _programs(step) & _NOT_INSTALLERS
        if succeeded and installs:
            names |= {_package(w) for w in words[2:] if not w.startswith("-") and not _INSTALLS.match(w)}
    return names


def _imports(command: str) -> set[str]:
    """The Python modules a command line imports (`python3 -c "import yaml"`, `python -m pytest`)."""
    return {a or b for a, b in _IMPORT.findall(command)}


def _package(word: str) -> str:
    """A package argument without quotes, version or extras (`"pyyaml>=6"` -> `pyyaml`)."""
    return re.split(r"[<>=@\[~^!]", word.strip("'\"").lower(), maxsplit=1)[0]


def _programs(command: str) -> set[str]:
    """The programs a command line runs: each step's first word past variables, `sudo` and a
    `timeout N` wrapper, as a bare name (`/opt/homebrew/bin/cargo` -> `cargo`)."""
    out = set()
    for step in split_steps(command):
        words = [w.strip("'\"(){}") for w in without_inline_env(step.strip().lstrip("({ ")).split()]
        while words:
            line = " ".join(words)
            if words[0] in _LEAD_WORDS or "=" in words[0]:
                words = words[1:]
            elif (unwrapped := without_timeout(line)) != line:
                words = unwrapped.split()
            else:
                break
        if words and words[0]:
            out.add(words[0].rsplit("/", 1)[-1])
    return out


def _note(name: str, what: str, run: _Run) -> Candidate:
    shown = clip(render_command(_step(run.command, name, what)), MAX_SHOWN_CHARS)
    ran = f"`{shown}` ({run.purpose})" if run.purpose else f"`{shown}`"
    said = f"ModuleNotFoundError: No module named '{name}'"
    if what == PROGRAM:
        content = f'Program `{name}` is not installed here (or not on PATH): {ran} gave "command not found"'
    elif what == ENV_MODULE:
        content = f"Python module `{name}` is not installed in the project's environment: {ran} gave {said}"
    else:
        content = f"Python module `{name}` is not installed here: {ran} gave {said}"
    return Candidate(
        content=content,
        type=MemoryType.GOTCHA,
        layer=Layer.STRUCTURAL,
        confidence=CONFIDENCE,
        priority=PRIORITY,
        tags=(tool_state_tag(name),),
    )


def _step(command: str, name: str, what: str) -> str:
    """The step of the command line that ran or imported `name`, without its redirections."""
    for step in split_steps(command):
        if (name in _programs(step)) if what == PROGRAM else (name in _imports(step)):
            return _KEYWORD.sub("", _REDIRECTION.sub("", step).strip())
    return command
