"""Where cortex keeps things: project root, stores, data directory, briefing files. Reads the fs only."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

STORE_DIR = ".memory"
PROJECT_DB = "cortex.db"
GLOBAL_DB = "cortex-global.db"
WORKER_LOCK = "worker.lock"  # in STORE_DIR: held by the running worker; hooks test it
RULES_FILE = Path(".claude") / "rules" / "cortex-memory.md"


def find_project_root(cwd: Path) -> Path:
    """The git top level above `cwd` (a `.git` dir, or a `.git` file in worktrees), else `cwd`."""
    cwd = cwd.resolve()
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return cwd


def cortex_home(env: Mapping[str, str] | None = None) -> Path:
    """cortex's data directory: `CORTEX_HOME`, else `~/.claude/memory`."""
    home = (os.environ if env is None else env).get("CORTEX_HOME")
    if home:
        return Path(home).expanduser()
    return Path.home() / ".claude" / "memory"


# NamedTuple, not a dataclass: every hook imports this module, and `dataclasses` (which imports
# `inspect`) costs a SessionStart hook ~15 ms of its 100 ms budget. Immutable all the same.
class Paths(NamedTuple):
    """Every location cortex uses for one project."""

    root: Path
    home: Path

    @property
    def project_name(self) -> str:
        """The project root's folder name."""
        return self.root.name or "root"

    @property
    def in_git_repo(self) -> bool:
        """Whether the project is a git work tree (else it is just the folder cortex ran in)."""
        return (self.root / ".git").exists()

    @property
    def store_dir(self) -> Path:
        """`.memory/` in the project root."""
        return self.root / STORE_DIR

    @property
    def project_db(self) -> Path:
        """The project store."""
        return self.store_dir / PROJECT_DB

    @property
    def global_db(self) -> Path:
        """The global store in CORTEX_HOME."""
        return self.home / GLOBAL_DB

    @property
    def log_file(self) -> Path:
        """The project's rotated log."""
        return self.store_dir / "cortex.log"

    @property
    def briefing_dir(self) -> Path:
        """Pre-rendered briefings, per branch and cwd."""
        return self.store_dir / "briefing"

    @property
    def checkpoint_dir(self) -> Path:
        """Store backups taken before destructive steps."""
        return self.store_dir / "checkpoints"

    @property
    def rules_file(self) -> Path:
        """The auto-loaded rules file that carries the briefing."""
        return self.root / RULES_FILE

    @property
    def models_dir(self) -> Path:
        """Model exports (ONNX) and caches in CORTEX_HOME."""
        return self.home / "models"

    @property
    def cache_dir(self) -> Path:
        """Disposable caches in CORTEX_HOME."""
        return self.home / "cache"


def resolve_paths(cwd: Path | None = None, env: Mapping[str, str] | None = None) -> Paths:
    """Paths for the project containing `cwd` (default: the current directory)."""
    return Paths(find_project_root(cwd or Path.cwd()), cortex_home(env))


def ensure_store_dir(paths: Paths) -> Path:
    """Create `.memory/` with its own `.gitignore` (`*`) so the store is never committed."""
    paths.store_dir.mkdir(parents=True, exist_ok=True)
    ignore = paths.store_dir / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# cortex's project memory store: never commit it\n*\n", encoding="utf-8")
    return paths.store_dir
