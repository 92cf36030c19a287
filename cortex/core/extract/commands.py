"""Shell command text and output -> what it was (test, build, commit) and how it went. Pure."""

from __future__ import annotations

import re
from collections.abc import Sequence

from cortex.core.extract.transcript_model import ToolUse

MAX_COMMAND_CHARS = 120
SAME_COMMAND_MIN_JACCARD = 0.6

_RUNNERS = r"(?:pytest|py\.test|tox|nox|jest|vitest|mocha|rspec|phpunit|ctest)(?![\w.-])"
_TEST = re.compile(
    rf"(?:^|[\s;&|(]){_RUNNERS}"
    # A runner started by its path at the head of a step (`vendor/bin/phpunit`, `./node_modules/.bin/jest`).
    rf"|(?:^|[;&|(])\s*(?:[\w.~-]*/)+{_RUNNERS}"
    r"|\b(?:python3?|uv run|poetry run|pipenv run|hatch run)\s+(?:-m\s+)?(?:pytest|unittest)\b"
    r"|\b(?:npm|yarn|pnpm|bun)\s+(?:run\s+)?test\b|\bcargo\s+(?:test|nextest)\b|\bgo\s+test\b"
    r"|\bmix\s+test\b|\bmake\s+(?:test|check)\b|\bgradlew?\s+test\b|\bmvn\s+(?:\S+\s+)*test\b"
    r"|\bdotnet\s+test\b|\bdeno\s+test\b|\bswift\s+test\b|\bplaywright\s+test\b|\bartisan\s+test\b"
    r"|\b(?:flutter|dart|sbt|lein)\s+test\b|\brake\s+(?:test|spec)\b|\brails\s+test\b"
)
# A step that names a runner without running it: installs it, locates it, reads or edits it
# (`pip install pytest`, `npm i -D jest`, `which pytest`).
_NOT_A_RUN = re.compile(
    r"^\s*(?:sudo\s+)?(?:(?:python3?\s+-m\s+)?pip3?|pipx|uv\s+(?:add|remove|pip|tool|sync)"
    r"|poetry\s+(?:add|remove|install)|pdm\s+(?:add|remove)|conda|mamba"
    r"|npm\s+(?:i|install|ci|uninstall|remove|add|view|info|ls)|yarn\s+(?:add|remove|install|global)"
    r"|pnpm\s+(?:add|install|i|remove)|bun\s+(?:add|install|i|remove)|brew|apt(?:-get)?|dnf|yum|pacman"
    r"|cargo\s+(?:install|add|remove)|go\s+(?:install|get)|gem\s+install|composer\s+(?:require|install)"
    r"|which|type|command\s+-v|whereis|man|cat|ls|echo|printf|grep|rg|find|head|tail|less|git|cd|pushd)\b"
)
_BUILD = re.compile(
    r"^(?:make|cmake|ninja|cargo|go|npm|npx|yarn|pnpm|bun|pip3?|uv|poetry|pipenv|mix|rebar3|"
    r"gradlew?|mvn|tsc|mypy|ruff|black|flake8|pylint|eslint|prettier|docker|docker-compose|"
    r"kubectl|terraform|bundle|rake|rails|dotnet|swift|xcodebuild|alembic|python3?|node)\b"
)
# Builds, linters and type checkers: a success says the code is in a known good state.
_CHECK = re.compile(
    r"^(?:cargo (?:build|check|clippy)|go (?:build|vet)|(?:npm|pnpm|yarn|bun) (?:run )?"
    r"(?:build|lint|typecheck|type-check|check)\b|make(?: (?:all|build))?$|gradlew? build\b"
    r"|mvn (?:compile|package|verify)\b|dotnet build\b|swift build\b|xcodebuild\b|docker build\b"
    r"|nix (?:build|flake check)\b"
    # A checker run as itself or through the project's runner (`npx tsc`, `uv run mypy`).
    r"|(?:(?:npx|bunx|pnpm(?: exec)?|yarn|uv run|poetry run|pipenv run|python3? -m) )?"
    r"(?:tsc|mypy|ruff check|eslint|flake8|pylint|next build)\b)"
)
_GIT_COMMIT = re.compile(r"\bgit\b(?:\s+-[Cc]\s+\S+)*\s+commit\b")
_GIT_REVERT = re.compile(r"\bgit\b(?:\s+-[Cc]\s+\S+)*\s+revert\b")
_COMMIT_OUTPUT = re.compile(r"^\[[^\]\s]+(?: \([^)]*\))? ([0-9a-f]{7,40})\] (.+)$", re.MULTILINE)
_NOT_COMMITTED = re.compile(
    r"\bnothing (?:added )?to commit\b|\bno changes added to commit\b|\bhook exited with code [1-9]"
    r"|\b(?:pre-commit|commit-msg) hook failed\b|\bPre-commit validation failed\b",
    re.IGNORECASE,
)
_DRY_RUN = re.compile(r"\bgit\b[^|;&]*\scommit\b[^|;&]*\s--dry-run\b")
_COMMIT_MESSAGE = re.compile(r"""-m\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)')""", re.DOTALL)
_HEREDOC = re.compile(r"<<-?\s*'?(\w+)'?\n(.*?)\n\s*\1\b", re.DOTALL)
_ERROR_LINE = re.compile(
    r"^.*(?:error|exception|failed|fatal|not found|no such|denied|traceback|cannot|can't|"
    r"unable).*$",
    re.IGNORECASE | re.MULTILINE,
)
_EXIT_LINE = re.compile(r"^(?:Error: )?Exit code -?\d+\s*$")
# A pattern's quoted `|` is no pipe: `| grep -E "error|Finished"` is one filter.
_PIPE_TAIL = re.compile(
    r"\s*(?:2>&1\s*)?(?:\|\s*(?:tail|head|tee|grep|less|cat)\b(?:\"[^\"]*\"|'[^']*'|[^|'\"])*)+$"
)
# Setup before the command: `cd x &&`, and variables set as statements (`TRASH=/tmp/t &&`, not
# the `DATABASE_URL=x cargo build` environment of the command itself).
_SETUP_PREFIX = re.compile(
    r"^\s*(?:(?:cd\s+(?:\"[^\"]*\"|'[^']*'|\S+)|\w+=(?:\"[^\"]*\"|'[^']*'|\S*))\s*(?:&&|;)\s*)+"
)
_CONTINUED = re.compile(r"\\\n\s*")
# Variables set for the one command after them (`CI=1 LOG=debug pnpm build`).
_INLINE_ENV = re.compile(r"^\s*(?:\w+=(?:\"[^\"]*\"|'[^']*'|\S*)\s+)+(?=\S)")
_VERSIONED = re.compile(r"[\d.]+$")  # python3 -> python, pip3.11 -> pip
_QUOTED = r"'[^']*'|\"(?:[^\"\\]|\\.)*\""  # a single- or double-quoted shell string
# A command line's pieces: a quoted string (kept whole), an escaped character, a step separator
# (`&&`, `||`, `;`, `|`: group 1) or anything else.
_STEP_PIECE = re.compile(_QUOTED + r"""|\\.|(&&|\|\||;|\|)|[^'"\\&|;]+|.""", re.DOTALL)
_QUOTED_STRING = re.compile(_QUOTED)
_SHELL_WORD = re.compile(r"""'([^']*)'|"((?:[^"\\]|\\.)*)"|(\S+)""")
_REDIRECT = re.compile(r"\d?>>?(?:&\d|/dev/null)?|&>(?:/dev/null)?")
_SELF = re.compile(r"^\s*(?:cortex|python3? -m cortex)\b")
# Output sent to a file (`> out.txt`, `>> ~/.bashrc`), not to a stream or /dev/null.
_WRITES_FILE = re.compile(r"(?<![<>])\d?>>?(?!&)\s*(?!/dev/null\b)[\w~./$\"'-]")
# Commands that only look: never the fix.
_READS = frozenset(
    (
        "ls", "cat", "head", "tail", "grep", "rg", "find", "ps", "pwd", "echo", "sleep", "which",
        "whoami", "env", "printenv", "lsof", "wc", "stat", "file", "jq", "tree", "less", "more",
        "du", "df", "curl", "wget", "open", "man", "type", "history", "date", "uname",
    )
)  # fmt: skip

# Tools whose subcommand decides whether they only look (`git status`, `gh workflow list`,
# `docker ps`): the first word past the tool's options says so (gh's first two).
_READ_SUBCOMMANDS = {
    "git": frozenset(
        ("status", "diff", "log", "show", "blame", "describe", "rev-parse", "ls-files", "ls-remote",
         "shortlog", "reflog", "grep", "cat-file", "check-ignore")
    ),
    "gh": frozenset(("list", "view", "status", "checks", "diff")),
    "docker": frozenset(("ps", "images", "logs", "inspect", "version", "info")),
    "kubectl": frozenset(("get", "describe", "logs", "version")),
    "systemctl": frozenset(("status", "is-active", "list-units")),
    **dict.fromkeys(("npm", "pnpm", "yarn", "bun"), frozenset(("ls", "list", "view", "outdated", "why"))),
    **dict.fromkeys(("pip", "pip3"), frozenset(("list", "show", "freeze"))),
}  # fmt: skip
# Options that take a value before the subcommand (`git -C repo status`, `kubectl -n ns get`).
# A file's name as a command argument: its last part has an extension that starts with a letter.
_FILE_NAME = re.compile(r"^[^-][^\s]*\.[A-Za-z]\w*$")
_VALUED_OPTIONS = frozenset(("-C", "-c", "--git-dir", "--work-tree", "-n", "--namespace", "--context", "-R"))


def is_test_command(command: str) -> bool:
    """pytest, npm test, cargo test, go test, mix test, make test and the like, run (not
    installed or looked up: `pip install pytest`, `which jest`)."""
    if _TEST.search(command) is None:
        return False
    naming = [step for step in split_steps(command) if _TEST.search(step)]
    # No step names it alone when its words span a line break: a run, as before.
    return not naming or any(not _NOT_A_RUN.match(step) for step in naming)


def is_build_command(command: str) -> bool:
    """A build, install, lint or run command whose failure is worth remembering."""
    return _BUILD.match(without_inline_env(command)) is not None and not is_test_command(command)


def is_check_command(shown: str) -> bool:
    """A build, lint or type check (`cargo build`, `nix flake check`, `tsc`): its success says
    the code is in a known good state."""
    return _CHECK.match(without_inline_env(shown)) is not None


def is_git_commit(command: str) -> bool:
    """`git commit`, also with `-C dir` before it."""
    return _GIT_COMMIT.search(command) is not None


def is_git_revert(command: str) -> bool:
    """`git revert`, also with `-C dir` before it: a commit when its output names one."""
    return _GIT_REVERT.search(command) is not None


def bash_command(use: ToolUse) -> str | None:
    """The command line of a Bash call; None for any other tool, an empty command, or cortex's
    own CLI (the skills run it: never a memory about the project)."""
    command = use.input.get("command") if use.name == "Bash" else None
    if not isinstance(command, str) or not command.strip() or is_cortex_command(command):
        return None
    return command


def is_cortex_command(command: str) -> bool:
    """cortex's own CLI (the skills run it): never a memory about the project."""
    return _SELF.match(command) is not None


def render_command(command: str) -> str:
    """The command as people would retype it: first line, no `cd x &&` or `VAR=x &&` setup, no
    `| tail` plumbing."""
    stripped = _CONTINUED.sub(" ", command.strip())  # a line continued with `\` is one line
    first = stripped.splitlines()[0] if stripped else ""
    first = _PIPE_TAIL.sub("", _SETUP_PREFIX.sub("", first)).strip()
    return clip(first, MAX_COMMAND_CHARS)


def inline_env(command: str) -> str:
    """The variables a command line sets for its command alone (`CI=1 pnpm build` -> `CI=1`)."""
    m = _INLINE_ENV.match(command)
    return m.group(0).strip() if m else ""


def without_inline_env(command: str) -> str:
    """The command without the variables set for it alone (`CI=1 pnpm build` -> `pnpm build`)."""
    return _INLINE_ENV.sub("", command, count=1)


def is_same_command(a: str, b: str) -> bool:
    """The same command, or a retry with small changes (`python x.py` -> `python3 x.py`, a URL
    quoted, `2>&1 &` added, a variable set for it: `DATABASE_URL=... pnpm migrate`)."""
    a, b = without_inline_env(a), without_inline_env(b)
    if a == b:
        return True
    wa, wb = _retry_words(a), _retry_words(b)
    if not wa or not wb or _VERSIONED.sub("", wa[0]) != _VERSIONED.sub("", wb[0]):
        return False
    sa, sb = set(wa[1:]), set(wb[1:])
    if not sa and not sb:
        return True  # the program alone both times (`make`, `make 2>&1`)
    return len(sa & sb) / len(sa | sb) >= SAME_COMMAND_MIN_JACCARD


def _retry_words(command: str) -> list[str]:
    """The command's words without quotes, redirections and a trailing `&`: what a retry keeps."""
    words = (w.strip("'\"") for w in command.split())
    return [w for w in words if w and w != "&" and not _REDIRECT.fullmatch(w)]


def parse_commit(command: str, output: str) -> tuple[str, str]:
    """(short sha, subject) of a commit: from git's `[branch sha] subject` line, else from
    the `-m` message or heredoc in the command (sha then empty); ("", "") when the output
    shows nothing was committed (nothing staged, a hook refused it, a dry run) behind an exit
    status that hid it (`| tail`, `|| true`)."""
    out = _COMMIT_OUTPUT.search(output)
    if out:
        return out.group(1), out.group(2).strip()
    if _NOT_COMMITTED.search(output) or _DRY_RUN.search(command):
        return "", ""
    heredoc = _HEREDOC.search(command)
    if heredoc:
        return "", first_line(heredoc.group(2))
    m = _COMMIT_MESSAGE.search(command)
    if not m:
        return "", ""
    text = m.group(1) if m.group(1) is not None else m.group(2)
    return "", first_line(text.replace("\\n", "\n").replace('\\"', '"'))


def split_steps(command: str) -> list[str]:
    """The steps of a command line, cut at `&&`, `||`, `;` and `|` outside quotes
    (`git commit -m "a; b" && git push` is two steps), each as written."""
    steps = [""]
    for m in _STEP_PIECE.finditer(command):
        if m.group(1):
            steps.append("")
        else:
            steps[-1] += m.group(0)
    return steps


def without_quoted(command: str) -> str:
    """The command line with each quoted string emptied (`echo "a > b"` -> `echo ''`): what is
    left is the shell's own syntax."""
    return _QUOTED_STRING.sub("''", command)


def masked_quotes(command: str) -> str:
    """The command line with the inside of each quoted string blanked (`_`), every position
    kept: the shell's own operators are found where they are (`bash -c "a && b"` has none)."""
    return _QUOTED_STRING.sub(lambda m: m.group(0)[0] + "_" * (len(m.group(0)) - 2) + m.group(0)[-1], command)


def marked_cut(command: str, run: str) -> str:
    """`run` (a command's first line) with `…` when lines followed it: `bash -c '` alone reads
    as the whole command."""
    lines = [line.rstrip() for line in command.strip().splitlines() if line.strip()]
    cut = any(not line.endswith("\\") for line in lines[:-1])
    return f"{run} …" if cut and not run.endswith("…") else run


def changes_something(command: str) -> bool:
    """Whether a command line changes something: a step that does more than look
    (`lsof -ti :3000 | xargs kill`), or output written to a file (`echo 'x' >> .env`)."""
    steps = [words for words in (step.split() for step in split_steps(command)) if words]
    looks = all(_looks(words) for words in steps)
    # A quoted `>` is text, not a redirection.
    return bool(steps) and (not looks or _WRITES_FILE.search(without_quoted(command)) is not None)


def only_discards(command: str) -> bool:
    """Whether every step of a command line that changes something throws work away: puts files
    back as committed (`git checkout flake.nix`, `git checkout -- .`, `git restore src/`,
    `git reset --hard`), sets it aside (`git stash`) or deletes what git does not track
    (`git clean -fd`). Such a step undoes; it is not what fixed an error. `git checkout main`
    (a branch) is not one."""
    changing = [words for words in command_steps(command) if words and not _looks(words)]
    return bool(changing) and all(_discards(words) for words in changing)


def git_words(words: Sequence[str]) -> list[str]:
    """A step's words past `git` and its `-C dir` / `-c name=value` options (`git -C repo add
    x` -> `add x`); [] for a step that is not git's."""
    if not words or words[0] != "git":
        return []
    rest = list(words[1:])
    while len(rest) > 1 and rest[0] in ("-C", "-c"):
        rest = rest[2:]
    return rest


def _discards(words: list[str]) -> bool:
    rest = git_words(words)
    if not rest:
        return False
    sub, args = rest[0], rest[1:]
    if sub == "checkout":
        # Paths: after `--`, `.`, or a file's name (`flake.nix`, `src/app.ts`); not a branch
        # (`main`, `feature/login`, `release/1.2`) nor a new one (`-b`).
        if "-b" in args or "-B" in args:
            return False
        return "--" in args or any(a == "." or _FILE_NAME.search(a) is not None for a in args)
    if sub == "stash":
        return not args or args[0] in ("push", "save", "-u", "--include-untracked", "-k", "--keep-index")
    return sub in ("restore", "clean") or (sub == "reset" and "--hard" in args)


def _looks(words: list[str]) -> bool:
    """Whether one step only looks: a reading command, or a tool's reading subcommand
    (`git -C repo status`, `gh workflow list`; not `git checkout flake.nix`)."""
    reads = _READ_SUBCOMMANDS.get(words[0])
    if reads is None:
        return words[0] in _READS
    plain: list[str] = []
    valued = False
    for word in words[1:]:
        if not valued and not word.startswith("-"):
            plain.append(word)
        valued = word in _VALUED_OPTIONS
    # gh's subcommands are two deep (`gh workflow list`, `gh pr checks 12`; `gh status`).
    return any(w in reads for w in plain[: 2 if words[0] == "gh" else 1])


def command_steps(command: str) -> list[list[str]]:
    """The words of each step of a command line (`split_steps`; quotes removed, [] for a step
    with a quote left open)."""
    return [shell_words(step) for step in split_steps(command)]


def parse_git_add_paths(command: str) -> list[str]:
    """Explicit paths given to `git add` in a command line (not `-A`, `.`, `*` or `:/`, which
    stand for everything)."""
    paths: list[str] = []
    for words in command_steps(command):
        git = git_words(words)
        if git[:1] == ["add"]:
            paths.extend(w for w in git[1:] if not w.startswith("-") and w not in (".", "*", ":/"))
    return paths


def parse_error_line(output: str) -> str:
    """The first line that names the error (not the `Exit code N` preamble)."""
    lines = [ln for ln in output.splitlines() if ln.strip() and not _EXIT_LINE.match(ln.strip())]
    m = _ERROR_LINE.search("\n".join(lines))
    return m.group(0).strip() if m else (lines[0].strip() if lines else "")


def first_line(text: str) -> str:
    """The first non-blank line, stripped."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def clip(text: str, limit: int) -> str:
    """Whitespace collapsed, cut at `limit` characters with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def shell_words(part: str) -> list[str]:
    """Words of a simple command line, quotes removed; [] when a quote is left open."""
    words = []
    for m in _SHELL_WORD.finditer(part):
        single, double, bare = m.groups()
        if bare is not None and bare[:1] in "'\"":
            return []  # an unterminated quote: nothing reliable here
        words.append(single if single is not None else double if double is not None else bare)
    return words
