"""What git says about a project: subprocess git with timeouts, plus a no-subprocess HEAD read.

Every function answers None (or an empty tuple) outside a repository, without git on PATH, on
an unborn HEAD, or when git does not answer within its timeout: callers treat "unknown" and
"not a repository" alike and never fail because of git. `read_head_ref` reads `.git` files
directly (no process start) for the SessionStart hook, which has no time for one.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from cortex.core.extract.pipeline import GitContext

log = logging.getLogger("cortex.git")

GIT_TIMEOUT_S = 2.0
MAX_CHANGED_FILES = 200
MAX_RECENT_COMMITS = 10
MAX_GIT_OUTPUT_BYTES = 8_000_000
# No pager, no prompts, no index lock taken by `status`, stable (English) messages.
_GIT_ENV = {"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "LC_ALL": "C"}


# NamedTuples, not dataclasses: the SessionStart hook imports this module (see cortex.paths).
class Commit(NamedTuple):
    """One commit as `git log` reports it."""

    sha: str
    date: str  # committer date, ISO 8601 with offset
    subject: str


class HeadRef(NamedTuple):
    """Where HEAD points: a branch (with its sha when known) or a detached sha; both None outside git."""

    branch: str | None
    sha: str | None

    @property
    def name(self) -> str | None:
        """The branch name, or the sha when detached: the key briefings are cached under."""
        return self.branch or self.sha


def run_git(
    root: Path, *args: str, timeout_s: float = GIT_TIMEOUT_S, stdin_text: str | None = None
) -> str | None:
    """`git -C root args...` stdout (without the final newline), or None on any failure."""
    import subprocess  # here, not at the top: the SessionStart hook imports this module

    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args],
            input=stdin_text.encode("utf-8") if stdin_text is not None else None,
            stdin=None if stdin_text is not None else subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout_s,
            env={**os.environ, **_GIT_ENV},
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:  # no git, timeout, bad cwd
        log.debug("git %s failed: %s", " ".join(args[:2]), exc)
        return None
    if done.returncode != 0:
        return None
    return done.stdout[:MAX_GIT_OUTPUT_BYTES].decode("utf-8", errors="replace").removesuffix("\n")


def read_toplevel(root: Path) -> Path | None:
    """The work tree's top directory."""
    out = run_git(root, "rev-parse", "--show-toplevel")
    return Path(out) if out else None


def read_git_common_dir(root: Path) -> Path | None:
    """The directory shared by all worktrees (holds `info/exclude`), absolute."""
    out = run_git(root, "rev-parse", "--git-common-dir")
    if not out:
        return None
    path = Path(out)
    return path if path.is_absolute() else (root / path).resolve()


def read_branch(root: Path) -> str | None:
    """The current branch's short name; None when detached, unborn outside a repo, or unknown."""
    return run_git(root, "symbolic-ref", "--quiet", "--short", "HEAD") or None


def read_head(root: Path) -> str | None:
    """The full sha HEAD points at; None in a repository without commits."""
    return run_git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}") or None


def read_changed_files(root: Path, limit: int = MAX_CHANGED_FILES) -> tuple[str, ...]:
    """Paths (relative to the top level) that are modified, staged, renamed or untracked."""
    out = run_git(root, "status", "--porcelain=v1", "-z", "--untracked-files=normal")
    if not out:
        return ()
    paths: list[str] = []
    fields = out.split("\0")
    i = 0
    while i < len(fields) and len(paths) < limit:
        entry = fields[i]
        i += 1
        if len(entry) < 4:
            continue
        status, path = entry[:2], entry[3:]
        paths.append(path)
        if "R" in status or "C" in status:
            i += 1  # -z puts a rename's source path in the next field
    return tuple(dict.fromkeys(paths))


def read_recent_commits(
    root: Path, limit: int = MAX_RECENT_COMMITS, since_rev: str | None = None
) -> tuple[Commit, ...]:
    """The newest commits reachable from HEAD (only those after `since_rev` when given)."""
    rev = f"{since_rev}..HEAD" if since_rev else "HEAD"
    out = run_git(root, "log", f"-n{max(limit, 0)}", "--format=%H%x1f%cI%x1f%s%x1e", rev, "--")
    if not out:
        return ()
    commits = []
    for record in out.split("\x1e"):
        parts = record.strip("\n").split("\x1f")
        if len(parts) == 3:
            commits.append(Commit(parts[0], parts[1], parts[2]))
    return tuple(commits)


def batch_check(root: Path, rev: str, paths: Iterable[str], fmt: str) -> dict[str, str] | None:
    """Each of `paths` (relative to the top level) -> git's `cat-file --batch-check=<fmt>` line
    for `<rev>:<path>` (a path absent there reads "<rev>:<path> missing"); one git process for
    any number of paths. None when git cannot answer."""
    wanted = [p for p in dict.fromkeys(paths) if p and "\n" not in p]
    if not wanted:
        return {}
    out = run_git(
        root,
        "cat-file",
        f"--batch-check={fmt}",
        stdin_text="".join(f"{rev}:{p}\n" for p in wanted),
        timeout_s=GIT_TIMEOUT_S * 5,
    )
    if out is None:
        return None
    answers = out.split("\n")
    if len(answers) != len(wanted):
        return None
    return dict(zip(wanted, answers, strict=True))


def read_paths_at_head(root: Path, paths: Iterable[str]) -> frozenset[str] | None:
    """Which of `paths` (relative to the top level) exist in HEAD's tree; None when unknown."""
    wanted = [p for p in dict.fromkeys(paths) if p and "\n" not in p]
    if not wanted:
        return frozenset()
    if read_head(root) is None:
        return None
    found = batch_check(root, "HEAD", wanted, "%(objectname)")
    if found is None:
        return None
    return frozenset(p for p, answer in found.items() if not answer.endswith(" missing"))


def file_exists_at_head(root: Path, path: str) -> bool | None:
    """Whether `path` (relative to the top level) is in HEAD's tree; None when unknown."""
    found = read_paths_at_head(root, [path])
    return None if found is None else path in found


def read_git_context(root: Path) -> GitContext:
    """Branch, HEAD and changed files for the extractors (empty outside a repository)."""
    from cortex.core.extract.pipeline import GitContext  # the worker has it loaded; the hook never calls this

    return GitContext(branch=read_branch(root), head=read_head(root), changed_files=read_changed_files(root))


def read_remote_url(root: Path) -> str | None:
    """The URL of the `origin` remote, else of the first remote configured; None without one."""
    url = run_git(root, "config", "--get", "remote.origin.url")
    if url:
        return url
    names = run_git(root, "remote")
    first = names.split()[0] if names else None
    return run_git(root, "config", "--get", f"remote.{first}.url") if first else None


def read_user(root: Path) -> str | None:
    """`Name <email>` as git would sign a commit here (either part alone when only one is set)."""
    name = run_git(root, "config", "--get", "user.name") or ""
    email = run_git(root, "config", "--get", "user.email") or ""
    if name and email:
        return f"{name} <{email}>"
    return name or (f"<{email}>" if email else None)


# -- HEAD without a subprocess (SessionStart) ------------------------------------------------
def _read_small(path: Path) -> str | None:
    try:
        with path.open("rb") as fh:
            return fh.read(4096).decode("utf-8", errors="replace").strip()
    except OSError:
        return None


def read_git_dir(root: Path) -> Path | None:
    """`root/.git`, following the `gitdir:` pointer a worktree's or submodule's `.git` file holds."""
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git
    text = _read_small(dot_git)
    if not text or not text.startswith("gitdir:"):
        return None
    target = Path(text.removeprefix("gitdir:").strip())
    return target if target.is_absolute() else (root / target).resolve()


def read_repo_dirs(root: Path) -> tuple[Path | None, Path | None]:
    """(git common dir, top level) of `root`'s work tree, both None outside a repository. A plain
    clone whose top is `root` is read from the file system: what `git rev-parse` says there,
    without its two processes (~10 ms of CPU each to start from a worker holding a large store,
    after every turn). A linked worktree, GIT_DIR and the like, or a configured core.worktree
    are git's to resolve."""
    dot_git = root / ".git"
    plain = dot_git.is_dir() and not (dot_git / "commondir").exists()
    if plain and not any(os.environ.get(v) for v in ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR")):
        try:
            moved = "worktree" in (dot_git / "config").read_text(encoding="utf-8", errors="replace")
        except OSError:
            moved = True
        if not moved:
            return dot_git.resolve(), root
    return read_git_common_dir(root), read_toplevel(root)


def _common_dir(git_dir: Path) -> Path:
    pointer = _read_small(git_dir / "commondir")
    if not pointer:
        return git_dir
    target = Path(pointer)
    return target if target.is_absolute() else (git_dir / target).resolve()


def _resolve_ref(common: Path, git_dir: Path, ref: str) -> str | None:
    for base in (git_dir, common):
        sha = _read_small(base / ref)
        if sha and not sha.startswith("ref:"):
            return sha
    packed = _read_packed_refs(common / "packed-refs")
    return packed.get(ref)


def _read_packed_refs(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    refs = {}
    for line in text.splitlines():
        if line and line[0] not in "#^":
            sha, _, name = line.partition(" ")
            refs[name.strip()] = sha
    return refs


def read_head_ref(root: Path) -> HeadRef:
    """Branch and sha of HEAD read straight from `.git` (no git process); empty outside a repo."""
    git_dir = read_git_dir(root)
    head = _read_small(git_dir / "HEAD") if git_dir else None
    if not git_dir or not head:
        return HeadRef(None, None)
    if not head.startswith("ref:"):
        return HeadRef(None, head or None)  # detached
    ref = head.removeprefix("ref:").strip()
    branch = ref.removeprefix("refs/heads/")
    return HeadRef(branch or None, _resolve_ref(_common_dir(git_dir), git_dir, ref))
