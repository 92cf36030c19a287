"""Pick the storage adapter and open stores through it; use cases never name an adapter.

Each adapter is imported on first use inside `adapter()`, so the port never depends on one (and
one that is not installed costs nothing). Two today: SQLite (a store is a file at `path`) and
PostgreSQL (a store is a namespace `path` in the database a DSN names; see
`cortex.store.postgres.adapter`), used for stores shared by a team.
"""

from __future__ import annotations

import importlib
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from cortex.core.model import Scope
from cortex.store.port import Checkpoint, RuntimeInfo, StoreAdapter, StoreAdmin, StoreFileCheck

ADAPTERS = ("sqlite", "postgres")
DEFAULT_ADAPTER = "sqlite"


def adapter(name: str = DEFAULT_ADAPTER) -> StoreAdapter:
    """The entry points of the adapter called `name`, imported on first use.

    Imported by name: adapters depend on the port, so the port must not import them back.
    """
    if name == "sqlite":
        return cast(StoreAdapter, importlib.import_module("cortex.store.sqlite.adapter"))
    if name == "postgres":
        return cast(StoreAdapter, importlib.import_module("cortex.store.postgres.adapter"))
    raise ValueError(f"unknown store adapter {name!r}; known: {', '.join(ADAPTERS)}")


def open_store(
    scope: Scope, path: Path, *, readonly: bool = False, kind: str = DEFAULT_ADAPTER, dsn: str | None = None
) -> StoreAdmin:
    """Open the store of `scope` at `path`, creating it when allowed; read-only opens never write.

    `dsn` names the database of a server adapter (PostgreSQL: else $CORTEX_TEAM_DSN); a file
    adapter takes none.
    """
    if dsn is None:
        return adapter(kind).open_store(scope, path, readonly=readonly)
    opener: Any = adapter(kind).open_store
    return cast(StoreAdmin, opener(scope, path, readonly=readonly, dsn=dsn))


def inspect_file(path: Path, *, kind: str = DEFAULT_ADAPTER) -> StoreFileCheck:
    """Schema and integrity of a store file, without writing to it (raises CortexError)."""
    return adapter(kind).inspect_file(path)


def newer_schema(path: Path, *, kind: str = DEFAULT_ADAPTER) -> bool:
    """True when the file was written by a newer cortex than this one."""
    return adapter(kind).newer_schema(path)


def runtime_info(*, kind: str = DEFAULT_ADAPTER) -> RuntimeInfo:
    """What this Python gives the adapter (for `cortex doctor`)."""
    return adapter(kind).runtime_info()


def checkpoint_dir(store_path: Path, *, kind: str = DEFAULT_ADAPTER) -> Path:
    """Where checkpoints of the store at `store_path` live."""
    return adapter(kind).checkpoint_dir(store_path)


def list_checkpoints(store_path: Path, *, kind: str = DEFAULT_ADAPTER) -> list[Checkpoint]:
    """Complete checkpoints of one store, newest first."""
    return adapter(kind).list_checkpoints(store_path)


def find_checkpoint(store_paths: list[Path], ref: str, *, kind: str = DEFAULT_ADAPTER) -> Checkpoint:
    """A checkpoint by name, unique name prefix or path among these stores' (raises NotFound)."""
    return adapter(kind).find_checkpoint(store_paths, ref)


def mark_restored(cp: Checkpoint, at: datetime, *, kind: str = DEFAULT_ADAPTER) -> Checkpoint:
    """Record that a checkpoint was restored (a rollback happens once)."""
    return adapter(kind).mark_restored(cp, at)


def checkpoint_file(
    scope: Scope, path: Path, *, reason: str, run: str, at: datetime, kind: str = DEFAULT_ADAPTER
) -> Checkpoint:
    """Checkpoint a store file whatever its schema (before `cortex upgrade` migrates it)."""
    return adapter(kind).checkpoint_file(scope, path, reason=reason, run=run, at=at)
