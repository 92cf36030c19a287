"""Which memories refer only to files gone from both the work tree and HEAD (marked stale)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePosixPath

from cortex.core.model import Memory, Scope
from cortex.shell import git


def _relative_path(path: str, root: Path) -> str | None:
    if path and not path.startswith(("/", "./")) and "/." not in path and "\\" not in path:
        return path  # the common case, already relative and clean
    p = PurePosixPath(path)
    if p.is_absolute():
        try:
            return p.relative_to(root.as_posix()).as_posix()
        except ValueError:
            return None  # outside the project: nothing to check at HEAD
    parts = [x for x in p.parts if x != "."]
    return "/".join(parts) if parts and ".." not in parts else None


def project_resolver(root: Path) -> Callable[[str | None], str | None]:
    """A recorded relative path -> that path inside the project at `root`, or None when it
    cannot be placed there: one written from a parent folder (`app/src/x.py` for the project
    `app`) is that file when it exists; one whose top folder the project lacks (a sibling
    project's, or the parent folder's) proves nothing about the project's files. A bare name
    lives at the root. One directory listing per call of this function, not per path."""
    try:
        tops = {entry.name for entry in os.scandir(root)}
    except OSError:
        tops = set()

    def resolve(rel: str | None) -> str | None:
        if not rel or "/" not in rel:
            return rel
        top, rest = rel.split("/", 1)
        if top in tops:
            return rel
        if top == root.name and (root / rest).exists():
            return rest
        return None

    return resolve


def read_gone_paths(root: Path, paths: Iterable[str]) -> dict[str, str | None]:
    """Each path as memories record it -> its path relative to `root` when that is gone from
    both the work tree and HEAD, else None (present, outside the project, or not placeable
    in it: `project_resolver`)."""
    resolve = project_resolver(root)
    rel = {f: resolve(_relative_path(f, root)) for f in paths}
    checkable = sorted({r for r in rel.values() if r})
    at_head = git.read_paths_at_head(root, checkable) or frozenset()
    gone = {r for r in checkable if r not in at_head and not (root / r).exists()}
    return {f: r if r in gone else None for f, r in rel.items()}


def read_stale_ids(root: Path, memories: Iterable[Memory]) -> frozenset[str]:
    """Ids of project memories all of whose files are gone from both the work tree and HEAD."""
    memories = list(memories)
    paths = {f for m in memories if m.scope is Scope.PROJECT for f in m.source.files}
    return flag_stale(memories, read_gone_paths(root, paths))


def flag_stale(memories: Iterable[Memory], gone: Mapping[str, str | None]) -> frozenset[str]:
    """Ids of project memories all of whose files `gone` (from `read_gone_paths`) says are gone."""
    # A global memory's files belong to whichever project it was recorded in.
    return frozenset(
        m.id
        for m in memories
        if m.source.files
        and m.scope is Scope.PROJECT
        and all(gone.get(f) is not None for f in m.source.files)
    )
