"""What git's object store says about files at a revision: blob ids, contents, the commit that
last changed a path, renames. Each answers None when git cannot (see `cortex.shell.git`)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from cortex.shell.git import _GIT_ENV as GIT_ENV
from cortex.shell.git import GIT_TIMEOUT_S, batch_check, run_git


def read_blob_ids(root: Path, rev: str, paths: Iterable[str]) -> dict[str, str | None] | None:
    """Each of `paths` (relative to the top level) -> its blob id at `rev` (None: not a file
    there); one git process for any number of paths. None when git cannot answer."""
    found = batch_check(root, rev, paths, "%(objectname) %(objecttype)")
    if found is None:
        return None
    blobs: dict[str, str | None] = {}
    for path, answer in found.items():
        sha, _, kind = answer.partition(" ")
        blobs[path] = sha if kind == "blob" else None
    return blobs


def read_blob_texts(root: Path, blobs: Iterable[str]) -> dict[str, str]:
    """The text of each blob git has (one process for all; undecodable bytes replaced)."""
    import subprocess  # as `run_git`: the SessionStart hook imports `cortex.shell.git`

    wanted = [b for b in dict.fromkeys(blobs) if b and b.isalnum()]
    if not wanted:
        return {}
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "cat-file", "--batch"],
            input="".join(f"{b}\n" for b in wanted).encode("ascii"),
            capture_output=True,
            timeout=GIT_TIMEOUT_S * 5,
            env={**os.environ, **GIT_ENV},
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return {}
    out, data, at = {}, done.stdout, 0
    for blob in wanted:
        end = data.find(b"\n", at)
        if end < 0:
            break
        header = data[at:end].decode("ascii", errors="replace").split()
        at = end + 1
        if len(header) != 3 or header[1] == "missing":
            continue
        size = int(header[2])
        if header[1] == "blob":
            out[blob] = data[at : at + size].decode("utf-8", errors="replace")
        at += size + 1
    return out


def read_last_change(root: Path, path: str, since: str | None) -> tuple[str, datetime] | None:
    """The newest commit reachable from HEAD (and, given `since`, not from it) that touched
    `path`, with its committer time; None when there is none or git cannot say."""
    out = run_git(root, "log", "-1", "--format=%H%x1f%ct", f"{since}..HEAD", "--", path) if since else None
    if out is None:  # no `since`, or git no longer knows it (a rebase, a shallow clone)
        out = run_git(root, "log", "-1", "--format=%H%x1f%ct", "HEAD", "--", path)
    if not out or "\x1f" not in out:
        return None
    sha, _, stamp = out.partition("\x1f")
    return sha, datetime.fromtimestamp(int(stamp), tz=UTC)


def read_renamed_to(root: Path, commit: str, path: str) -> str | None:
    """Where `commit` moved `path` to, when it renamed it (git's rename detection)."""
    out = run_git(root, "diff-tree", "-r", "-M", "--no-commit-id", "--name-status", "-z", commit)
    if not out:
        return None
    fields = out.split("\0")
    i = 0
    while i < len(fields):
        status = fields[i]
        if status.startswith(("R", "C")) and i + 2 < len(fields):
            if fields[i + 1] == path and status.startswith("R"):
                return fields[i + 2]
            i += 3
        else:
            i += 2
    return None
