"""What a replayed project holds, read the way a user (or the next session) sees it.

Only through cortex's outside surfaces: the SQLite store files (read-only SQL over the
`memories` table), the rules file's cortex block, the SessionStart hook (in replay.py) and the
`cortex` CLI (`recall --json`, `status --json`). Nothing here imports cortex.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.capture.replay import STORE_DIR, Plugin, Replay, cortex_cli

PROJECT_DB = "cortex.db"
GLOBAL_DB = "cortex-global.db"
RULES_FILE = Path(".claude") / "rules" / "cortex-memory.md"
BEGIN_MARKER = "<!-- cortex:begin -->"
END_MARKER = "<!-- cortex:end -->"
RECALL_TOP = 3
_EMBEDDED = re.compile(r"[1-9]\d* embedded \(([^()]+)")
_LOGGER = re.compile(r"^\S+ \S+ \d+ (cortex[\w.]*) ")


@dataclass(frozen=True, slots=True)
class StoredMemory:
    """An active memory as the store file holds it."""

    id: str
    type: str
    content: str
    store: str  # project | global


@dataclass(frozen=True, slots=True)
class RecallAnswer:
    """What `cortex recall --json QUESTION` returned: hit ids and contents in rank order."""

    ids: tuple[str, ...]
    contents: tuple[str, ...]
    abstained: bool
    error: str = ""


def store_files(root: Path, home: Path) -> list[tuple[str, Path]]:
    """The project store and the global store (one CORTEX_HOME per session: only its own)."""
    return [("project", root / STORE_DIR / PROJECT_DB), ("global", home / GLOBAL_DB)]


def read_memories(root: Path, home: Path) -> list[StoredMemory]:
    """Every active memory in the project store and in the (per-session) global store."""
    out: list[StoredMemory] = []
    for store, path in store_files(root, home):
        if not path.is_file():
            continue
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        try:
            rows = conn.execute(
                "SELECT id, type, content FROM memories WHERE status = 'active' ORDER BY n"
            ).fetchall()
        finally:
            conn.close()
        out += [StoredMemory(str(i), str(t), str(c), store) for i, t, c in rows]
    return out


def rules_block(root: Path) -> str:
    """The cortex block of the project's rules file ("" when there is none)."""
    try:
        text = (root / RULES_FILE).read_text(encoding="utf-8")
    except OSError:
        return ""
    lines = text.splitlines()
    begin = next((i for i, ln in enumerate(lines) if ln.strip() == BEGIN_MARKER), None)
    if begin is None:
        return ""
    end = next((i for i in range(begin + 1, len(lines)) if lines[i].strip() == END_MARKER), len(lines))
    return "\n".join(lines[begin + 1 : end])


def recall(plugin: Plugin, replay: Replay, question: str) -> RecallAnswer:
    """`cortex recall --json` with the CLI's defaults."""
    done = cortex_cli(plugin, replay, ["recall", "--json", "--", question])
    if done.returncode != 0:
        return RecallAnswer((), (), False, (done.stderr or done.stdout).strip()[-300:])
    try:
        value = json.loads(done.stdout)
    except ValueError:
        return RecallAnswer((), (), False, f"not JSON: {done.stdout[:200]!r}")
    hits = [h.get("memory") or {} for h in value.get("hits") or []]
    return RecallAnswer(
        tuple(str(m.get("id", "")) for m in hits),
        tuple(str(m.get("content", "")) for m in hits),
        bool(value.get("abstained")),
    )


def status(plugin: Plugin, replay: Replay) -> dict[str, Any]:
    """`cortex status --json` (an empty dict when it fails)."""
    done = cortex_cli(plugin, replay, ["status", "--json"])
    with contextlib.suppress(ValueError):
        value = json.loads(done.stdout)
        if isinstance(value, dict):
            return value
    return {}


def code_location(plugin: Plugin, replay: Replay) -> str:
    """Where `python -m cortex` imports the `cortex` package from: it must be the checkout under test."""
    probe = [plugin.python, "-c", "import cortex, os; print(os.path.dirname(cortex.__file__))"]
    found = subprocess.run(
        probe, cwd=replay.root, env=plugin.cli_env(replay.env), capture_output=True, text=True, check=False
    )
    where = found.stdout.strip()
    if not where:
        return f"unknown ({found.stderr.strip()[-200:]})"
    # Reported relative to the checkout, so the report carries no machine path when all is well.
    inside = Path(where).resolve().is_relative_to(plugin.repo.resolve())
    return f"{Path(where).resolve().relative_to(plugin.repo.resolve())}/ of the checkout" if inside else where


def logger_names(replay: Replay) -> list[str]:
    """The cortex logger names in the project's log: which modules (old or new layout) ran."""
    names: dict[str, None] = {}
    for log in (replay.root / STORE_DIR / "cortex.log", replay.home / "cortex.log"):
        with contextlib.suppress(OSError):
            for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
                m = _LOGGER.match(line)
                if m:
                    names[m.group(1)] = None
    return sorted(names)


def embedder_from_log(replay: Replay) -> str:
    """The embedder the worker reports having used (`N embedded (local ... via ONNX ...)`)."""
    with contextlib.suppress(OSError):
        text = (replay.root / STORE_DIR / "cortex.log").read_text(encoding="utf-8", errors="replace")
        found = _EMBEDDED.search(text)
        if found:
            return found.group(1).strip()
    return ""


def log_problems(replay: Replay) -> list[str]:
    """ERROR lines of the project's log (shortened)."""
    out: list[str] = []
    for log in (replay.root / STORE_DIR / "cortex.log", replay.home / "cortex.log"):
        with contextlib.suppress(OSError):
            for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
                if " ERROR " in line or "launcher:" in line:
                    out.append(line[:240])
    return out
