"""`cortex reset`: empty the project's memory (and, when asked, the global store), checkpoint first.

Each store is checkpointed before its files are removed, so `cortex restore NAME` brings it
back; the checkpoints stay where they are (`.memory/checkpoints/`, and `checkpoints/` in the
data directory for the global store). The briefing caches, cortex's block in the rules file and
the capture queue go too. It runs under the worker lock, so no capture writes meanwhile.
"""

from __future__ import annotations

import contextlib
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cortex.app import Cortex
from cortex.capture.queue import QUEUE_DIR
from cortex.core.model import Scope
from cortex.errors import CortexError
from cortex.paths import WORKER_LOCK
from cortex.shell.briefing_files import write_rules_block
from cortex.shell.files import LockBusy, file_lock

STORE_SUFFIXES = ("", "-wal", "-shm")


@dataclass(frozen=True, slots=True)
class StoreReset:
    """One store as reset found it, and the checkpoint that keeps what it held."""

    scope: str
    path: str
    memories: int  # active memories it held
    checkpoint: str | None = None  # None: there was no store


@dataclass(frozen=True, slots=True)
class ResetReport:
    """What `cortex reset` removed and where the checkpoints are."""

    stores: tuple[StoreReset, ...]
    removed: tuple[str, ...] = field(default=())  # other files and folders removed

    def to_dict(self) -> dict[str, Any]:
        """The `--json` form (its keys are a public interface: keep them)."""
        return {
            "stores": [
                {"scope": s.scope, "path": s.path, "memories": s.memories, "checkpoint": s.checkpoint}
                for s in self.stores
            ],
            "removed": list(self.removed),
        }


def scopes_for(include_global: bool) -> tuple[Scope, ...]:
    """The stores a reset empties."""
    return (Scope.PROJECT, Scope.GLOBAL) if include_global else (Scope.PROJECT,)


def preview(cx: Cortex, include_global: bool) -> list[StoreReset]:
    """What a reset would remove (for the confirmation question); writes nothing."""
    out = []
    for scope in scopes_for(include_global):
        store = cx.store(scope, create=False)
        count = store.count_active() if store is not None else 0
        out.append(StoreReset(scope.value, str(cx.store_path(scope)), count))
    return out


def reset(cx: Cortex, *, include_global: bool = False) -> ResetReport:
    """Checkpoint each store, then remove it and the project's briefing files and queue."""
    store_dir = cx.paths.store_dir
    if not store_dir.is_dir() and not (include_global and cx.paths.global_db.exists()):
        return ResetReport(tuple(preview(cx, include_global)))
    try:
        with contextlib.ExitStack() as held:
            if store_dir.is_dir():
                held.enter_context(file_lock(store_dir / WORKER_LOCK, blocking=False))
            return _reset_locked(cx, include_global)
    except LockBusy:
        raise CortexError(
            f"a cortex worker is capturing a session into {store_dir} right now; nothing was reset",
            "wait until it is done (a few seconds) and run `cortex reset` again",
        ) from None


def _reset_locked(cx: Cortex, include_global: bool) -> ResetReport:
    run = uuid.uuid4().hex[:12]
    done: list[StoreReset] = []
    for scope in scopes_for(include_global):
        path = cx.store_path(scope)
        store = cx.store(scope, create=False)
        if store is None:
            done.append(StoreReset(scope.value, str(path), 0))
            continue
        count = store.count_active()
        saved = store.write_checkpoint(reason="before-reset", run=run, at=cx.now())
        done.append(StoreReset(scope.value, str(path), count, str(saved.path)))
    cx.close()  # every connection goes before the files do
    removed: list[str] = []
    for entry in done:
        if entry.checkpoint is not None:
            removed += _remove_store_files(Path(entry.path))
    removed += _remove_project_files(cx)
    return ResetReport(tuple(done), tuple(removed))


def _remove_store_files(path: Path) -> list[str]:
    removed = []
    for suffix in STORE_SUFFIXES:
        target = path.with_name(path.name + suffix)
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
            removed.append(str(target))
    return removed


def _remove_project_files(cx: Cortex) -> list[str]:
    removed = []
    for folder in (cx.paths.briefing_dir, cx.paths.store_dir / QUEUE_DIR):
        if folder.is_dir():
            shutil.rmtree(folder)
            removed.append(str(folder))
    if write_rules_block(cx.paths.rules_file, None):
        removed.append(f"cortex's block in {cx.paths.rules_file}")
    return removed
