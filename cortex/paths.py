"""Where cortex keeps things: project root, stores, data directory, briefing files. Reads the fs only."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

STORE_DIR = ".memory"
PROJECT_DB = "cortex.db"
GLOBAL_DB = "cortex-global.db"
RULES_FILE = Path(".claude") / "rules" / "cortex-memory.md"


def find_project_root(cwd: Path) -> Path:
    """The git top level above `cwd` (a `.git` dir, or a `.git` file in worktrees), else `cwd`."""
    cwd = cwd.resolve()
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return cwd


def cortex_home(env: dict[str, str] | None = None) -> Path:
    """cortex's data directory: `CORTEX_HOME`, else `~/.claude/memory`."""
    env = os.environ if env is None else env
    if env.get("CORTEX_HOME"):
        return Path(env["CORTEX_HOME"]).expanduser()
    return Path.home() / ".claude" / "memory"


@dataclass(frozen=True, slots=True)
class Paths:
    """Every location cortex uses for one project."""

    root: Path
    home: Path

    @property
    def project_name(self) -> str:
        return self.root.name or "root"

    @property
    def store_dir(self) -> Path:
        return self.root / STORE_DIR

    @property
    def project_db(self) -> Path:
        return self.store_dir / PROJECT_DB

    @property
    def global_db(self) -> Path:
        return self.home / GLOBAL_DB

    @property
    def log_file(self) -> Path:
        return self.store_dir / "cortex.log"

    @property
    def briefing_dir(self) -> Path:
        return self.store_dir / "briefing"

    @property
    def checkpoint_dir(self) -> Path:
        return self.store_dir / "checkpoints"

    @property
    def rules_file(self) -> Path:
        return self.root / RULES_FILE

    @property
    def models_dir(self) -> Path:
        return self.home / "models"

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"


def resolve_paths(cwd: Path | None = None, env: dict[str, str] | None = None) -> Paths:
    """Paths for the project containing `cwd` (default: the current directory)."""
    return Paths(find_project_root(cwd or Path.cwd()), cortex_home(env))


def ensure_store_dir(paths: Paths) -> Path:
    """Create `.memory/` with its own `.gitignore` (`*`) so the store is never committed."""
    paths.store_dir.mkdir(parents=True, exist_ok=True)
    ignore = paths.store_dir / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# cortex's project memory store: never commit it\n*\n", encoding="utf-8")
    return paths.store_dir
