"""Paths as a transcript gives them, made relative to the project. Pure."""

from __future__ import annotations

import re

WINDOWS_ROOT = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\|//)")  # C:\ , C:/ , \\server\share
_HOME = ("~", "$HOME", "${HOME}", "%USERPROFILE%", "%HOMEPATH%")


def relative_path(path: str, project_root: str | None) -> str | None:
    """`path` relative to the project root; None for paths outside it (when a root is known):
    absolute POSIX or Windows paths elsewhere, home-relative paths, `..` that climbs out."""
    if not project_root:
        return path
    windows = bool(WINDOWS_ROOT.match(path) or WINDOWS_ROOT.match(project_root))
    if windows:  # separators either way, names in any case
        path, project_root = path.replace("\\", "/"), project_root.replace("\\", "/")
    root = project_root.rstrip("/")
    inside = path.casefold().startswith(root.casefold() + "/") if windows else path.startswith(root + "/")
    if inside:
        return path[len(root) + 1 :] or None
    if path == root or path.startswith(("/", *_HOME)) or WINDOWS_ROOT.match(path):
        return None
    parts = path.split("/")
    return None if ".." in parts else path.removeprefix("./")
