"""The PostgreSQL adapter's entry points (`StoreAdapter` in the port), for shared stores.

How the port's `(scope, path)` maps here: the database is named by a DSN, and `path` is the
store's namespace key inside it (its `as_posix()` text, never resolved, so a key such as
`team/github.com/acme/shop` names the same store from every clone). Each namespace is one
schema (`cortex_<hash of the key>`), created and migrated on the first writable open. The DSN
is the `dsn` given to `open_store`, else the one that namespace was opened with earlier in this
process, else `$CORTEX_TEAM_DSN`. Connections come from one psycopg pool per DSN and process.

Store "files" are namespaces here: `inspect_file` and `newer_schema` look at the namespace's
schema, and checkpoints are snapshot schemas in the same database (`checkpoint`).
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

from cortex.core.model import Scope
from cortex.errors import NotACortexStore, StoreError
from cortex.store.port import Checkpoint, RuntimeInfo, StoreAdmin, StoreFileCheck
from cortex.store.postgres import migrations
from cortex.store.postgres.checkpoint import checkpoint_dir, find_checkpoint, list_checkpoints, mark_restored
from cortex.store.postgres.connection import DSN_ENV, Session, namespace, resolve_dsn, schema_name
from cortex.store.postgres.store import Store

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


def open_store(scope: Scope, path: Path, *, readonly: bool = False, dsn: str | None = None) -> StoreAdmin:
    """Open (and migrate, unless read-only) the store of namespace `path` in the DSN's database."""
    return Store.open(path, scope, readonly=readonly, dsn=dsn)


def _version(path: Path) -> int:
    key = namespace(path)
    session = Session(resolve_dsn(path), schema_name(key), readonly=True)
    with session.reading() as conn:
        return migrations.check_identity(conn, session.schema, key)


def inspect_file(path: Path) -> StoreFileCheck:
    """Schema version of the store of namespace `path`, read-only; raises CortexError naming
    the fix when there is none or it is not a cortex store."""
    version = _version(path)
    if version == 0:
        raise NotACortexStore(
            f"there is no cortex store {namespace(path)!r} in the PostgreSQL database",
            "check the store name, or open it once for writing to create it",
        )
    return StoreFileCheck(version, migrations.LATEST_VERSION, ())


def newer_schema(path: Path) -> bool:
    """True when the namespace holds a store of a newer schema than this cortex knows."""
    try:
        _version(path)
    except NotACortexStore as exc:
        return "newer cortex" in exc.message
    except StoreError:
        return False
    return False


def runtime_info() -> RuntimeInfo:
    """This Python and its PostgreSQL driver (vectors are searched by the server's pgvector)."""
    python = f"Python {sys.version.split()[0]} ({sys.executable})"
    try:
        import psycopg
        import psycopg_pool
    except ImportError:
        return RuntimeInfo(python, False, "psycopg is not installed", "pip install 'cortex-memory[team]'")
    detail = (
        f"psycopg {psycopg.__version__} (libpq {psycopg.pq.version()}), psycopg-pool "
        f"{psycopg_pool.__version__}; pgvector HNSW on the server named by {DSN_ENV}"
    )
    return RuntimeInfo(python, True, detail)


def checkpoint_file(scope: Scope, path: Path, *, reason: str, run: str, at: datetime) -> Checkpoint:
    """Checkpoint the store of namespace `path` (opened, so migrated: its digest is the state
    a restore gives, as in the SQLite adapter)."""
    store = Store.open(path, scope)
    try:
        return store.write_checkpoint(reason=reason, run=run, at=at)
    finally:
        store.close()
