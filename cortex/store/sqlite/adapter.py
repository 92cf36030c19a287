"""The SQLite adapter's entry points (`StoreAdapter` in the port): open a store, look at a store
file without writing to it, describe the driver, and find checkpoints on disk."""

from __future__ import annotations

import sqlite3
import tempfile
from datetime import datetime
from pathlib import Path

from cortex.core.model import Scope
from cortex.errors import CortexError
from cortex.store.port import Checkpoint, RuntimeInfo, StoreAdmin, StoreFileCheck
from cortex.store.sqlite import connection as db
from cortex.store.sqlite import migrations, vec
from cortex.store.sqlite.checkpoint import (
    checkpoint_dir,
    find_checkpoint,
    list_checkpoints,
    mark_restored,
    write_checkpoint,
)
from cortex.store.sqlite.store import Store

__all__ = [
    "checkpoint_dir",
    "checkpoint_file",
    "find_checkpoint",
    "inspect_file",
    "list_checkpoints",
    "mark_restored",
    "newer_schema",
    "open_store",
    "runtime_info",
]


def open_store(scope: Scope, path: Path, *, readonly: bool = False) -> StoreAdmin:
    """Open (and migrate, unless read-only) the store file of one scope."""
    return Store.open(path, scope, readonly=readonly)


def inspect_file(path: Path) -> StoreFileCheck:
    """Schema version and integrity of a store file, read-only; raises CortexError naming the
    fix when it is not a readable cortex store."""
    try:
        db.check_file(path)
        conn = db.connect(path, readonly=True)
        try:
            version = migrations.check_identity(conn)
            problems = [str(r[0]) for r in conn.execute("PRAGMA quick_check").fetchall()]
        finally:
            conn.close()
    except CortexError:
        raise
    except Exception as exc:
        raise db.translate(exc, path) from exc
    return StoreFileCheck(version, migrations.LATEST_VERSION, () if problems == ["ok"] else tuple(problems))


def newer_schema(path: Path) -> bool:
    """True when the file is a cortex store of a newer schema (restoring would downgrade it)."""
    try:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            return int(conn.execute("PRAGMA user_version").fetchone()[0]) > migrations.LATEST_VERSION
        finally:
            conn.close()
    except Exception:
        return False


def runtime_info() -> RuntimeInfo:
    """This Python, its SQLite driver, and whether sqlite-vec gives it vector search."""
    python = vec.python_description()
    driver = vec.choose_driver(True)
    if driver.vectors:
        detail = (
            f"sqlite-vec {driver.vec_path} via {driver.name} (SQLite {driver.sqlite_version}): {driver.note}"
        )
        return RuntimeInfo(python, True, detail)
    return RuntimeInfo(python, False, f"unavailable: {driver.note}", "pip install sqlite-vec sqlean.py")


def checkpoint_file(scope: Scope, path: Path, *, reason: str, run: str, at: datetime) -> Checkpoint:
    """Checkpoint a store file as it is, an older schema included (before `cortex upgrade`).

    Its digest is the state digest the store will have once migrated (taken on a migrated
    scratch copy of the same snapshot), so restoring it, which migrates, is checked exactly.
    """
    try:
        db.check_file(path)
        conn = db.connect(path, readonly=True)
    except CortexError:
        raise
    except Exception as exc:
        raise db.translate(exc, path) from exc
    try:
        migrations.check_identity(conn)

        def migrated_digest() -> str:
            with tempfile.TemporaryDirectory(prefix="cortex-upgrade-") as tmp:
                copy = Path(tmp) / path.name
                scratch = conn.driver.module.connect(str(copy), isolation_level=None)
                try:
                    conn.raw.backup(scratch)
                finally:
                    scratch.close()
                store = Store.open(copy, scope)
                try:
                    return store.state_digest().digest
                finally:
                    store.close()

        return write_checkpoint(conn, reason=reason, run=run, at=at, digest=migrated_digest)
    finally:
        conn.close()
