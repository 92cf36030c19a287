"""A checkpoint writer killed half-way leaves temp files; the next checkpoint removes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from cortex.core.model import Scope
from cortex.shell.files import LockBusy, file_lock
from cortex.store.sqlite import checkpoint
from cortex.store.sqlite.checkpoint import checkpoint_dir, checkpoint_lock
from cortex.store.sqlite.store import Store
from tests.conftest import T0


def test_the_next_checkpoint_removes_a_killed_writers_backup_and_sidecar_temp_files(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "cortex.db", Scope.PROJECT)
    try:
        first = store.write_checkpoint(reason="consolidate", run="r1", at=T0)
        folder = checkpoint_dir(store.path)
        backup = folder / "cortex-20260101T000000000000Z-000-consolidate.db.tmp"
        sidecar = folder / ".cortex-20260101T000000000000Z-000-consolidate.json.k3x9q2.tmp"
        other = folder / ".notes.json.k3x9q2.tmp"  # not a checkpoint's: left alone
        for path in (backup, sidecar, other):
            path.write_text("half written", encoding="utf-8")
        second = store.write_checkpoint(reason="consolidate", run="r2", at=T0)
        assert not backup.exists() and not sidecar.exists() and other.exists()
        assert first.path.exists() and second.path.exists() and second.sidecar.exists()
    finally:
        store.close()


def test_a_writer_holds_the_checkpoint_lock_so_another_never_takes_its_backup_for_a_leftover(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Real failure (the 8-actor stress test): the worker's consolidation and `cortex consolidate`
    # checkpointed at once; one removed the other's backup under its temporary name as a killed
    # writer's, and the other failed with "disk I/O error". While a backup is written under its
    # temporary name, the lock is held: another writer waits instead of cleaning up.
    store = Store.open(tmp_path / "cortex.db", Scope.PROJECT)
    seen: list[str] = []

    def at_point(name: str) -> None:
        if name == "checkpoint.after_backup":
            (tmp,) = checkpoint_dir(store.path).glob("*.db.tmp")  # this writer's backup, not done yet
            try:
                with file_lock(checkpoint_lock(store.path), blocking=False):
                    seen.append("free")
            except LockBusy:
                seen.append("held")
            assert tmp.exists()

    monkeypatch.setattr(checkpoint, "failpoint", at_point)
    try:
        taken = store.write_checkpoint(reason="consolidate", run="r1", at=T0)
        assert seen == ["held"] and taken.path.exists() and taken.sidecar.exists()
        with file_lock(checkpoint_lock(store.path), blocking=False):
            pass  # released once the checkpoint is complete
    finally:
        store.close()
