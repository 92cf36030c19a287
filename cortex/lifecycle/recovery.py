"""Recovery use cases: list checkpoints, roll back the last consolidation, restore a checkpoint."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from cortex.app import Cortex
from cortex.core.digest import StateDigest
from cortex.core.model import Scope
from cortex.errors import NotACortexStore, NotFound
from cortex.lifecycle import compensation
from cortex.shell.failpoints import failpoint
from cortex.store import open as stores
from cortex.store.port import Checkpoint, StoreAdmin

log = logging.getLogger("cortex.lifecycle.recovery")


@dataclass(frozen=True, slots=True)
class RestoreReport:
    """Checkpoints restored and the digests that prove it."""

    restored: tuple[Checkpoint, ...]
    digests: dict[str, str] = field(default_factory=dict)  # checkpoint name -> digest after
    safety: tuple[Checkpoint, ...] = ()  # taken just before restoring
    set_aside: tuple[Path, ...] = ()  # damaged store files moved out of the way (never deleted)

    @property
    def exact(self) -> bool:
        return all(self.digests.get(c.name) == c.digest for c in self.restored)


def list_all_checkpoints(cx: Cortex) -> list[Checkpoint]:
    """Checkpoints of both stores, newest first."""
    found = [
        c for scope in (Scope.PROJECT, Scope.GLOBAL) for c in stores.list_checkpoints(cx.store_path(scope))
    ]
    return sorted(found, key=lambda c: c.created, reverse=True)


def _scope_of(cx: Cortex, cp: Checkpoint) -> Scope:
    for scope in (Scope.PROJECT, Scope.GLOBAL):
        if stores.checkpoint_dir(cx.store_path(scope)) == cp.path.parent and cp.name.startswith(
            cx.store_path(scope).stem + "-"
        ):
            return scope
    raise NotFound(f"checkpoint {cp.name} belongs to no store of this project", "")


def _set_aside(path: Path, stamp: str) -> list[Path]:
    """Rename a damaged store (and its -wal/-shm) out of the way; it is kept, never deleted."""
    moved = []
    for suffix in ("", "-wal", "-shm"):
        src = path.with_name(path.name + suffix)
        if src.exists():
            dst = path.with_name(f"{path.name}.damaged-{stamp}{suffix}")
            src.replace(dst)
            moved.append(dst)
    return moved


def _store_for(cx: Cortex, cp: Checkpoint, moved: list[Path]) -> StoreAdmin:
    """The store a checkpoint restores into; a corrupt store (the reason to restore) is moved
    aside first, since it cannot be opened to receive the checkpoint."""
    scope = _scope_of(cx, cp)
    try:
        return cx.write_store(scope)
    except NotACortexStore as exc:
        path = cx.store_path(scope)
        if stores.newer_schema(path):
            raise
        with contextlib.suppress(OSError):
            moved.extend(_set_aside(path, cx.now().strftime("%Y%m%dT%H%M%S")))
        if not moved:
            raise
        log.warning("%s could not be opened (%s); moved aside to %s", path, exc.message, moved[0])
        return cx.write_store(scope)


def _restore_one(cx: Cortex, cp: Checkpoint, moved: list[Path]) -> tuple[Checkpoint, StateDigest]:
    store = _store_for(cx, cp, moved)
    now = cx.now()
    safety = store.write_checkpoint(reason="before-restore", run=cp.run, at=now)
    failpoint("restore.after_safety_checkpoint")
    if compensation.already_journaled(store, cp):  # killed after its journal record: only mark it
        after = store.state_digest()
    else:
        after = _swap_and_journal(cx, store, cp, now)
    failpoint("restore.after_journal")
    compensation.clear_pending(cp)
    stores.mark_restored(cp, now)
    failpoint("restore.after_mark")
    return safety, after


def _swap_and_journal(cx: Cortex, store: StoreAdmin, cp: Checkpoint, now: datetime) -> StateDigest:
    kept = compensation.load_pending(cp)  # a restore of `cp` killed after its swap
    if kept is None:
        kept = store.journal_rows(), compensation.snapshot(store)
        compensation.save_pending(cp, *kept)
    store.restore_checkpoint(cp)
    failpoint("restore.after_swap")  # restored, not yet journaled nor marked: a rerun restores again
    store.migrate()  # a checkpoint from before an upgrade comes back up to date
    after = store.state_digest()
    with store.transaction():
        # The journal only grows: the records the checkpoint lacks come back, then records
        # that undo what they did, so replaying the whole history gives the restored state.
        compensation.append_history(store, kept[0], kept[1], cx.actor, now)
        store.journal(
            cx.actor, "checkpoint-restore", None, {"checkpoint": cp.name, "digest": after.digest}, now
        )
    return after


def restore(cx: Cortex, ref: str) -> RestoreReport:
    """Restore one checkpoint by name (`cortex restore NAME`); a safety checkpoint comes first."""
    paths = [cx.store_path(Scope.PROJECT), cx.store_path(Scope.GLOBAL)]
    cp = stores.find_checkpoint(paths, ref)
    moved: list[Path] = []
    safety, after = _restore_one(cx, cp, moved)
    return RestoreReport((cp,), {cp.name: after.digest}, (safety,), tuple(moved))


def last_consolidation(cx: Cortex) -> list[Checkpoint]:
    """The checkpoints taken by the last consolidation that changed something (one per store)."""
    taken = [c for c in list_all_checkpoints(cx) if c.reason == "consolidate"]
    return [c for c in taken if c.run == taken[0].run] if taken else []


def rollback(cx: Cortex) -> RestoreReport:
    """Undo the last consolidation: restore every checkpoint of its run, once (`--rollback`)."""
    chosen = last_consolidation(cx)
    if not chosen:
        raise NotFound(
            "no consolidation to roll back: none has merged anything yet",
            "list every checkpoint with `cortex restore --list`",
        )
    # A rollback killed between two stores resumes with the checkpoints not yet restored.
    todo = [c for c in chosen if not c.restored_at]
    if not todo:
        raise NotFound(
            f"the last consolidation ({chosen[0].name}) was already rolled back",
            "restore an older state explicitly with `cortex restore NAME` (see `--list`)",
        )
    digests: dict[str, str] = {}
    safety: list[Checkpoint] = []
    moved: list[Path] = []
    for cp in todo:
        taken, after = _restore_one(cx, cp, moved)
        digests[cp.name] = after.digest
        safety.append(taken)
    return RestoreReport(tuple(todo), digests, tuple(safety), tuple(moved))
