"""Claude Code's own files, read only: its config folder, a project's transcripts, the plugin record.

Claude Code keeps each session's transcript as `<config dir>/projects/<folder>/<session id>.jsonl`,
where `<folder>` is the session's starting directory with every character that is not a letter
or digit replaced by `-` (names over 200 characters are cut and get a hash; see
`transcript_folders`). The config folder is `CLAUDE_CONFIG_DIR` when set, else `~/.claude`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

CONFIG_ENV = "CLAUDE_CONFIG_DIR"
PROJECTS_DIR = "projects"
INSTALLED_PLUGINS = Path("plugins") / "installed_plugins.json"
MAX_FOLDER_CHARS = 200
PLUGIN_NAME = "cortex"
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")
_CWD_PROBE_LINES = 50  # lines of a transcript read to find the directory it was recorded in


def claude_dir(env: Mapping[str, str] | None = None) -> Path:
    """Claude Code's config folder: `CLAUDE_CONFIG_DIR`, else `~/.claude`."""
    value = (os.environ if env is None else env).get(CONFIG_ENV, "").strip()
    return Path(value).expanduser() if value else Path.home() / ".claude"


def encode_project_folder(path: Path) -> str:
    """The transcript folder name Claude Code uses for sessions started in `path`."""
    return _NOT_ALNUM.sub("-", str(path))


def transcript_cwd(path: Path) -> str | None:
    """The `cwd` the first records of a transcript name (None when none says)."""
    try:
        with path.open("rb") as fh:
            for _, raw in zip(range(_CWD_PROBE_LINES), fh, strict=False):
                try:
                    record = json.loads(raw)
                except ValueError:
                    continue
                cwd = record.get("cwd") if isinstance(record, dict) else None
                if isinstance(cwd, str) and cwd:
                    return cwd
    except OSError:
        return None
    return None


def _inside(cwd: str, root: Path) -> bool:
    try:
        Path(cwd).resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        return False
    return True


def transcript_folders(config: Path, root: Path) -> list[Path]:
    """The folders under `<config>/projects/` that hold sessions of the project at `root`.

    The project's own folder, plus those of sessions started in its subdirectories (and, for a
    path too long to be encoded whole, the cut-and-hashed name): encoded names are ambiguous
    (`a-b` and `a/b` read the same), so those count only when a transcript says it ran inside
    `root`.
    """
    projects = config / PROJECTS_DIR
    own = encode_project_folder(root)
    prefix = own[:MAX_FOLDER_CHARS] if len(own) > MAX_FOLDER_CHARS else own + "-"
    try:
        names = sorted(p.name for p in projects.iterdir() if p.is_dir())
    except OSError:
        return []
    found = [projects / own] if own in names else []
    for name in names:
        if name != own and name.startswith(prefix):
            folder = projects / name
            first = next(iter(sorted(folder.glob("*.jsonl"))), None)
            cwd = transcript_cwd(first) if first is not None else None
            if cwd is not None and _inside(cwd, root):
                found.append(folder)
    return found


class Transcript(NamedTuple):
    """One session's transcript file."""

    path: Path
    session_id: str  # the file's stem: Claude Code names it after the session
    size: int
    mtime: float


def list_transcripts(folders: list[Path]) -> Iterator[Transcript]:
    """The session transcripts in `folders` (not the subagent files beside them), oldest first."""
    found: list[Transcript] = []
    for folder in folders:
        for path in folder.glob("*.jsonl"):
            try:
                stat = path.stat()
            except OSError:
                continue
            if path.is_file():
                found.append(Transcript(path, path.stem, stat.st_size, stat.st_mtime))
    yield from sorted(found, key=lambda t: (t.mtime, t.path.name))


class PluginRecord(NamedTuple):
    """What Claude Code's plugin record says about cortex."""

    installed: tuple[str, ...]  # plugin ids like `cortex@cortex-marketplace`
    record: Path
    readable: bool  # False: the record is absent or not JSON


def read_plugin_record(config: Path) -> PluginRecord:
    """The cortex plugin ids in `<config>/plugins/installed_plugins.json`."""
    path = config / INSTALLED_PLUGINS
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return PluginRecord((), path, False)
    plugins = data.get("plugins") if isinstance(data, dict) else None
    if not isinstance(plugins, dict):
        return PluginRecord((), path, False)
    ids = tuple(sorted(k for k in plugins if isinstance(k, str) and k.split("@", 1)[0] == PLUGIN_NAME))
    return PluginRecord(ids, path, True)
