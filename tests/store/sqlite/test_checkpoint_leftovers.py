"""A checkpoint writer killed half-way leaves temp files; the next checkpoint removes them."""

from __future__ import annotations

from pathlib import Path

from cortex.core.model import Scope
from cortex.store.sqlite.checkpoint import checkpoint_dir
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
