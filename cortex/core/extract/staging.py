"""Generated or local files that staging swept into the index or a commit. Pure.

`git add -A` stages whatever git does not ignore: the logs a project's hooks write, a tool's
session data under `.claude/`, a Nix `result` link, a script's `.bak` copy, a `.env` file. A
commit then carries them, and the next session stages them again, until someone ignores them or
keeps them out. A turn shows it in three places: the staged files a `git status` lists ("Changes
to be committed", or the index column of `--short` and `--porcelain`), the files a commit's
output says it created, and the paths a `git restore --staged`, `git reset` or `git rm --cached`
took out again. A file the turn wrote, or added by name, was meant; one that only looks like
output (`looks_local`) and was neither is noted:

- a commit took it in: a gotcha, naming the commit and its size;
- the turn unstaged it before committing: a convention, with the command that did it;
- the turn ended with it staged and uncommitted: where the index stands.

The three share a state key per set of folders, so the newest word on the same files replaces
the older one (a later commit that took the staged logs replaces "staged but not committed").
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence

from cortex.core.extract.commands import (
    bash_command,
    clip,
    command_steps,
    git_words,
    is_git_commit,
    parse_commit,
    parse_git_add_paths,
    shell_words,
)
from cortex.core.extract.project_paths import relative_path
from cortex.core.extract.transcript import Message
from cortex.core.extract.transcript_model import EDIT_TOOLS
from cortex.core.model import Candidate, Layer, MemoryType
from cortex.core.write.state import state_tag

Found = list[tuple[Candidate, Message]]

STAGING_KEY = "index:"  # + the folders (or files) noted, sorted: one state per set of files
MAX_GROUPS_LISTED = 6
MAX_COMMAND_CHARS = 160
MAX_SUBJECT_CHARS = 72  # git's own advice for a subject line

# Folders whose files are written by running something, not by hand.
_LOCAL_DIRS = frozenset(
    {
        "logs", "log", "tmp", "temp", "__pycache__", "node_modules", ".pytest_cache", ".mypy_cache",
        ".ruff_cache", ".cache", ".next", ".turbo", ".parcel-cache", ".nyc_output", "htmlcov", ".tox",
    }
)  # fmt: skip
# Inside `.claude/`, Claude Code's configuration is shared (settings.json, CLAUDE.md, commands,
# agents, hooks, skills, rules); these are a tool's runtime data, and settings.local.json is
# the user's own settings, which Claude Code keeps out of git.
_CLAUDE_LOCAL = frozenset({"data", "logs", "cache", "sessions", "tmp", "todos", "shell-snapshots", "statsig"})
_LOCAL_NAMES = frozenset({".DS_Store", "Thumbs.db", "desktop.ini", "nohup.out", ".coverage"})
_LOCAL_SUFFIXES = (".log", ".bak", ".orig", ".rej", ".swp", ".swo", ".tmp", ".pyc", "~")
_NIX_RESULT = re.compile(r"^result(?:-[\w.-]+)?$")  # `nix build`'s link, at the root
# A local environment file (its secrets, this machine's settings); a template of one is shared.
_ENV_FILE = re.compile(r"^\.env(?:\.(?!(?:example|sample|template|dist|defaults?)$)[\w.-]+)?$")

# `git status` (long form): the staged section and its entries.
_STAGED_HEAD = re.compile(r"^Changes to be committed:\s*$")
_OTHER_HEAD = re.compile(r"^(?:Changes not staged for commit|Untracked files|Unmerged paths):\s*$")
_LONG_ENTRY = re.compile(r"^\s+(?:new file|modified|deleted|renamed|copied|typechange):\s+(.+?)\s*$")
# `git status --short` / `--porcelain`: XY PATH, X the index's status.
_SHORT_ENTRY = re.compile(r"^([MADRCT])[ MADRCTU?] (.+?)\s*$")
_CREATED = re.compile(r"^\s*create mode \d+ (.+?)\s*$", re.MULTILINE)
_CHANGED = re.compile(r"\b(\d+) files? changed\b")


def looks_local(path: str) -> bool:
    """The file is one that running something writes (a log, a backup copy, a cache, a build
    link, a tool's session data) or this machine's own (a `.env`), not source a person meant
    to commit."""
    return _local_folder(path) is not None


def _local_folder(path: str) -> str | None:
    """The folder that makes the file local ("node_modules/", ".claude/data/"), "" for a file
    local by its own name (`server.log`, `flake.nix.bak`, `result`), None for any other file."""
    parts = [p for p in path.strip("/").split("/") if p not in ("", ".")]
    if not parts:
        return None
    if len(parts) > 2 and parts[0] == ".claude" and parts[1] in _CLAUDE_LOCAL:
        return f".claude/{parts[1]}/"
    folder = next((i for i, p in enumerate(parts[:-1]) if p in _LOCAL_DIRS), None)
    if folder is not None:
        return "/".join(parts[: folder + 1]) + "/"
    name = parts[-1]
    if name in _LOCAL_NAMES or name.endswith(_LOCAL_SUFFIXES) or _ENV_FILE.match(name):
        return ""
    if parts == [".claude", "settings.local.json"]:
        return ""
    return "" if len(parts) == 1 and _NIX_RESULT.match(name) else None


def extract_staging(messages: Sequence[Message], project_root: str | None = None) -> Found:
    """One turn's notes of local files staged, unstaged or committed (see the module doc)."""
    meant = _meant(messages, project_root)

    def stray(path: str) -> bool:
        """Looks generated or local, and the turn neither wrote it nor added it by name."""
        return looks_local(path) and not _covered(path, meant)

    staged: dict[str, None] = {}  # the index as the turn's last listing showed it
    by: str = ""  # the `git add -A` (or `.`) that staged them, when the turn ran it
    last: Message | None = None
    found: Found = []
    for use, message in ((u, m) for m in messages for u in m.tool_uses):
        command = bash_command(use)
        if command is None or use.result is None or use.result.rejected or use.result.interrupted:
            continue
        output = use.result.content
        steps = [git_words(words) for words in command_steps(command)]  # [] for a step not git's
        for git in steps:
            if git[:1] == ["add"] and any(w in ("-A", "--all", ".", "-u", "--update") for w in git[1:]):
                by = " ".join(["git", *git])
        if is_git_commit(command) and not use.failed:
            sha, subject = parse_commit(command, output)
            if subject:
                taken = [p for p in dict.fromkeys((*staged, *_created(output))) if stray(p)]
                if taken:
                    found.append((_committed(sha, subject, output, taken, by), message))
                staged, last = {}, None
            continue
        listed = _staged_listing(steps, output)
        if listed is not None:
            staged, last = dict.fromkeys(listed), message
            continue
        if use.failed:
            continue
        if _clears_index(steps):
            staged, last = {}, None  # stashed or thrown away: nothing is left staged, nothing kept out
            continue
        patterns = _unstaged(steps)
        if patterns is not None:
            out = [p for p in staged if stray(p) and _covered(p, patterns)]
            staged = {p: None for p in staged if not _covered(p, patterns)}
            if out:
                found.append((_kept_out(out, command, by), message))
    left = [p for p in staged if stray(p)]
    if left and last is not None:
        found.append((_left_staged(left, by), last))
    return found


def _meant(messages: Sequence[Message], project_root: str | None) -> list[str]:
    """The paths the turn wrote or added by name (as written: a folder or a glob covers more)."""
    out: list[str] = []
    for use in (u for m in messages for u in m.tool_uses):
        if use.name in EDIT_TOOLS and not use.failed:
            raw = use.input.get("file_path") or use.input.get("notebook_path")
            if isinstance(raw, str) and (rel := relative_path(raw, project_root)):
                out.append(rel)
        command = bash_command(use)
        out.extend(parse_git_add_paths(command) if command else ())
    return out


def _covered(path: str, patterns: Iterable[str]) -> bool:
    """The path is one of these, or under one (a folder), or matches one (a glob); "." is all."""
    for raw in patterns:
        pattern = raw.removeprefix("./").rstrip("/")
        if pattern in ("", ".", ":/") or path == pattern or path.startswith(pattern + "/"):
            return True
        if any(c in pattern for c in "*?[") and fnmatch.fnmatchcase(path, pattern):
            return True
    return False


def _staged_listing(steps: Sequence[list[str]], output: str) -> list[str] | None:
    """The staged paths a `git status` among the command's git steps listed; None when it ran
    none."""
    status = [git for git in steps if git[:1] == ["status"]]
    if not status:
        return None
    short = any(_short_flag(w) for w in status[-1][1:])
    if short:
        entries = (_SHORT_ENTRY.match(line) for line in output.splitlines())
        return [_unquote(m.group(2).split(" -> ")[-1]) for m in entries if m]
    paths: list[str] = []
    inside = False
    for line in output.splitlines():
        if _STAGED_HEAD.match(line):
            inside = True
        elif _OTHER_HEAD.match(line):
            inside = False
        elif inside and (m := _LONG_ENTRY.match(line)):
            paths.append(_unquote(m.group(1).split(" -> ")[-1]))
    return paths


def _short_flag(word: str) -> bool:
    """`--short`, `--porcelain[=v1]`, or `-s` alone or among other short flags (`-sb`)."""
    if word.startswith("--"):
        return word == "--short" or word in ("--porcelain", "--porcelain=v1")
    return word.startswith("-") and "s" in word[1:]


def _clears_index(steps: Sequence[list[str]]) -> bool:
    """`git stash` (push or save) or `git reset --hard`: the index is emptied, not unstaged by
    choice of what to keep out."""
    for git in steps:
        stashes = git[:1] == ["stash"] and (
            len(git) == 1 or git[1] in ("push", "save") or git[1].startswith("-")
        )
        if stashes and not {"-k", "--keep-index"} & set(git):  # --keep-index leaves the index as it is
            return True
        if git[:1] == ["reset"] and "--hard" in git[1:]:
            return True
    return False


def _unstaged(steps: Sequence[list[str]]) -> list[str] | None:
    """What a `git restore --staged`, `git reset [HEAD] [--] ...` or `git rm --cached` took out
    of the index (["."] for all of it); None when the command did none of these."""
    found: list[str] | None = None
    for git in steps:
        args = [w for w in git[1:] if not w.startswith("-")]
        flags = set(git[1:]) - set(args)
        if git[:1] == ["restore"] and ("--staged" in flags or "-S" in flags):
            paths = args
        elif git[:1] == ["reset"] and not flags & {"--hard", "--soft", "--keep", "--merge"}:
            paths = args[1:] if args and args[0] in ("HEAD", "@") else args
            paths = paths or ["."]
        elif git[:1] == ["rm"] and "--cached" in flags:
            paths = args
        else:
            continue
        found = (found or []) + paths
    return found


def _created(output: str) -> list[str]:
    return [_unquote(p) for p in _CREATED.findall(output)]


def _unquote(path: str) -> str:
    words = shell_words(path) if path.startswith('"') else []
    return words[0] if len(words) == 1 else path


def _groups(paths: Sequence[str]) -> dict[str, int]:
    """The paths by the folder that makes them local ("node_modules/" -> how many files under
    it); a file local by its name is grouped by its folder when others share it, else by itself."""
    by_dir: dict[str, list[str]] = {}
    for path in paths:
        folder = _local_folder(path) or path.rpartition("/")[0] + "/"
        by_dir.setdefault(folder if folder != "/" else "", []).append(path)
    out: dict[str, int] = {}
    for folder, members in by_dir.items():
        if folder and len(members) > 1:
            out[folder] = len(members)
        else:
            out.update(dict.fromkeys(members, 1))
    return out


def _shown(paths: Sequence[str]) -> tuple[str, str]:
    """(the files as a reader scans them, the state key naming them). A folder's files are
    counted, not named: their names (`chat.json`, a session's uuid) add nothing, and a named
    log that changes every run would mark the note "may be stale" at once."""
    groups = _groups(paths)
    parts = [f"{name} ({count} files)" if count > 1 else name for name, count in groups.items()]
    extra = len(parts) - MAX_GROUPS_LISTED
    text = ", ".join(parts[:MAX_GROUPS_LISTED]) + (f" and {extra} more" if extra > 0 else "")
    return text, state_tag(STAGING_KEY + ",".join(sorted(groups)))


_LOOK = "look generated or local"


def _how(by: str) -> str:
    return f"; staged by `{by}`" if by else ""


def _committed(sha: str, subject: str, output: str, paths: Sequence[str], by: str) -> Candidate:
    """The commit by its id and subject (an id alone tells a reader, or a search, nothing)."""
    text, key = _shown(paths)
    size = _CHANGED.search(output)
    commit = " ".join(p for p in ("Commit", sha, f'"{clip(subject, MAX_SUBJECT_CHARS)}"') if p)
    sized = f" ({size.group(0)})" if size else ""
    content = f"{commit}{sized} took in files this session did not write that {_LOOK}: {text}{_how(by)}"
    return _candidate(content, MemoryType.GOTCHA, 5, key)


def _kept_out(paths: Sequence[str], command: str, by: str) -> Candidate:
    text, key = _shown(paths)
    content = (
        f"Kept out of commits: files this session did not write that {_LOOK}: {text}"
        f"{_how(by)}; unstaged with `{clip(command, MAX_COMMAND_CHARS)}`"
    )
    return _candidate(content, MemoryType.PATTERN, 5, key)


def _left_staged(paths: Sequence[str], by: str) -> Candidate:
    text, key = _shown(paths)
    content = f"Staged and not committed: files this session did not write that {_LOOK}: {text}{_how(by)}"
    return _candidate(content, MemoryType.PROGRESS, 4, key)


def _candidate(content: str, kind: MemoryType, priority: int, key: str) -> Candidate:
    return Candidate(
        content=content, type=kind, layer=Layer.STRUCTURAL, confidence=0.6, priority=priority, tags=(key,)
    )
