"""Recovery use cases: list checkpoints, roll back the last consolidation, restore a checkpoint."""

from __future__ import annotations

from dataclasses import dataclass, field

from cortex.core.digest import StateDigest
from cortex.core.model import Scope
from cortex.engine import Cortex
from cortex.errors import NotFound
from cortex.shell import checkpoint, lifecycle_sql, migrations
from cortex.shell.store import Store


@dataclass(frozen=True, slots=True)
class RestoreReport:
    """Checkpoints restored and the digests that prove it."""

    restored: tuple[checkpoint.Checkpoint, ...]
    digests: dict[str, str] = field(default_factory=dict)  # checkpoint name -> digest after
    safety: tuple[checkpoint.Checkpoint, ...] = ()  # taken just before restoring

    @property
    def exact(self) -> bool:
        return all(self.digests.get(c.name) == c.digest for c in self.restored)


def list_all_checkpoints(cx: Cortex) -> list[checkpoint.Checkpoint]:
    """Checkpoints of both stores, newest first."""
    found = [
        c
        for scope in (Scope.PROJECT, Scope.GLOBAL)
        for c in checkpoint.list_checkpoints(cx.store_path(scope))
    ]
    return sorted(found, key=lambda c: c.created, reverse=True)


def _store_for(cx: Cortex, cp: checkpoint.Checkpoint) -> Store:
    for scope in (Scope.PROJECT, Scope.GLOBAL):
        if checkpoint.checkpoint_dir(cx.store_path(scope)) == cp.path.parent and cp.name.startswith(
            cx.store_path(scope).stem + "-"
        ):
            return cx.write_store(scope)
    raise NotFound(f"checkpoint {cp.name} belongs to no store of this project", "")


def _restore_one(cx: Cortex, cp: checkpoint.Checkpoint) -> tuple[checkpoint.Checkpoint, StateDigest]:
    store = _store_for(cx, cp)
    now = cx.now()
    safety = checkpoint.write_checkpoint(
        store,
        reason="before-restore",
        run=cp.run,
        digest=lambda s: lifecycle_sql.read_state_digest(s).digest,
        at=now,
    )
    checkpoint.restore_checkpoint(store, cp)
    migrations.migrate(store.conn)  # a checkpoint from before an upgrade comes back up to date
    after = lifecycle_sql.read_state_digest(store)
    with store.transaction():
        store.journal(
            cx.actor, "checkpoint-restore", None, {"checkpoint": cp.name, "digest": after.digest}, now
        )
    checkpoint.mark_restored(cp, now)
    return safety, after


def restore(cx: Cortex, ref: str) -> RestoreReport:
    """Restore one checkpoint by name (`cortex restore NAME`); a safety checkpoint comes first."""
    paths = [cx.store_path(Scope.PROJECT), cx.store_path(Scope.GLOBAL)]
    cp = checkpoint.find_checkpoint(paths, ref)
    safety, after = _restore_one(cx, cp)
    return RestoreReport((cp,), {cp.name: after.digest}, (safety,))


def last_consolidation(cx: Cortex) -> list[checkpoint.Checkpoint]:
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
    if any(c.restored_at for c in chosen):
        raise NotFound(
            f"the last consolidation ({chosen[0].name}) was already rolled back",
            "restore an older state explicitly with `cortex restore NAME` (see `--list`)",
        )
    digests, safety = {}, []
    for cp in chosen:
        taken, after = _restore_one(cx, cp)
        digests[cp.name] = after.digest
        safety.append(taken)
    return RestoreReport(tuple(chosen), digests, tuple(safety))
