"""Reach PostgreSQL: one psycopg pool per DSN and process, a schema per store, transactions.

A store lives in its own schema of the database the DSN names; the schema's name is derived
from the store's namespace key (`namespace`), so the port's `(scope, path)` still names a store.
Every write runs in a transaction that first takes the store's advisory lock, so writers of one
store queue like SQLite's BEGIN IMMEDIATE: read-modify-writes stay isolated and the journal's
sequence numbers stay gap-free.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cortex.errors import StoreError
from cortex.shell.failpoints import failpoint

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

DSN_ENV = "CORTEX_TEAM_DSN"
POOL_MAX = 8  # connections per DSN and process: a hook uses one, the worker a few
POOL_WAIT_S = 5.0  # for a free connection, or for the first one of a new pool
EXTENSION_LOCK = 0x63727478  # "crtx": one creator of the database's extensions at a time

_LOCK = threading.Lock()
_POOLS: dict[str, ConnectionPool[Any]] = {}
_DSNS: dict[str, str] = {}  # namespace key -> the DSN it was opened with in this process


def namespace(path: Path) -> str:
    """The key that names a store in a database: the store's path as given (not resolved, so a
    relative key such as a repository's normalised remote URL means the same on every machine)."""
    return path.as_posix()


def schema_name(key: str) -> str:
    """The schema holding the store of this namespace key (fixed length, always a safe name)."""
    return "cortex_" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


def lock_id(schema: str) -> int:
    """The advisory lock (a signed 64-bit key) that serialises the writers of one store."""
    return int.from_bytes(hashlib.sha256(schema.encode("ascii")).digest()[:8], "big", signed=True)


def redacted(dsn: str) -> str:
    """The DSN without its password, for messages."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(dsn)
    except Exception:
        return "the configured DSN"
    parts.pop("password", None)
    return " ".join(f"{k}={v}" for k, v in sorted(parts.items()))


def resolve_dsn(path: Path, dsn: str | None = None) -> str:
    """The DSN for the store at `path`: the one given, the one it was opened with in this
    process, or $CORTEX_TEAM_DSN."""
    found = dsn or _DSNS.get(namespace(path)) or os.environ.get(DSN_ENV, "").strip()
    if not found:
        raise StoreError(
            f"no PostgreSQL DSN for the store {namespace(path)!r}",
            f"set {DSN_ENV} (or team_dsn in the config), e.g. postgresql://user@host/db",
        )
    _DSNS[namespace(path)] = found
    return found


def pool(dsn: str) -> ConnectionPool[Any]:
    """The process's pool for `dsn`, opened on first use (raises StoreError when unreachable)."""
    with _LOCK:
        found = _POOLS.get(dsn)
        if found is not None:
            return found
        try:
            from psycopg_pool import ConnectionPool
        except ImportError as exc:
            raise StoreError(
                "the PostgreSQL adapter needs psycopg and psycopg-pool",
                "pip install 'cortex-memory[team]'",
            ) from exc
        made: ConnectionPool[Any] = ConnectionPool(
            dsn,
            min_size=1,
            max_size=POOL_MAX,
            timeout=POOL_WAIT_S,
            kwargs={"autocommit": True},
            # A connection kept across a server restart is dead: checked when lent, it is replaced
            # instead of failing the caller's first query (recall, a push) once per pooled one.
            check=ConnectionPool.check_connection,
            open=False,
            name="cortex",
        )
        try:
            made.open(wait=True, timeout=POOL_WAIT_S)
        except Exception as exc:
            with contextlib.suppress(Exception):
                made.close()
            raise translate(exc, dsn) from exc
        _POOLS[dsn] = made
        return made


@atexit.register
def close_pools() -> None:
    """Close every pool of this process (at exit, and in tests that stop the server)."""
    with _LOCK:
        pools = list(_POOLS.values())
        _POOLS.clear()
    for p in pools:
        with contextlib.suppress(Exception):
            p.close(timeout=1.0)


def translate(exc: BaseException, dsn: str) -> StoreError:
    """A driver error as a StoreError that names the fix."""
    if isinstance(exc, StoreError):
        return exc
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    low = text.lower()
    where = redacted(dsn)
    if "read-only transaction" in low:
        return StoreError(f"the store is open read-only ({where}); nothing was written", "")
    if "permission denied" in low or "must be owner" in low:
        return StoreError(
            f"PostgreSQL refused ({where}): {text}",
            "grant the DSN's role CREATE on the database, or have an administrator run "
            "CREATE EXTENSION vector; CREATE EXTENSION pg_trgm;",
        )
    name = type(exc).__name__
    if name in ("PoolTimeout", "OperationalError", "ConnectionTimeout") or "connect" in low:
        return StoreError(
            f"cannot reach PostgreSQL ({where}): {text}",
            f"check that the server runs and that {DSN_ENV} / team_dsn is right",
        )
    return StoreError(f"PostgreSQL ({where}): {text}", "run `cortex doctor` for details")


class Session:
    """The connections of one store: pooled reads, and write transactions under its lock."""

    def __init__(self, dsn: str, schema: str, *, readonly: bool) -> None:
        self.dsn = dsn
        self.schema = schema
        self.readonly = readonly
        self.lock = lock_id(schema)
        self._local = threading.local()

    def _pinned(self) -> Any:
        return getattr(self._local, "conn", None)

    @contextlib.contextmanager
    def _borrow(self) -> Iterator[Any]:
        try:
            with pool(self.dsn).connection() as conn:
                conn.execute("SELECT set_config('search_path', %s, false)", (f"{self.schema}, public",))
                yield conn
        except StoreError:
            raise
        except Exception as exc:
            if _is_driver_error(exc):
                raise translate(exc, self.dsn) from exc
            raise

    @contextlib.contextmanager
    def reading(self) -> Iterator[Any]:
        """The transaction's connection inside one, else a pooled one in autocommit."""
        pinned = self._pinned()
        if pinned is not None:
            yield pinned
            return
        with self._borrow() as conn:
            yield conn

    @contextlib.contextmanager
    def writing(self) -> Iterator[Any]:
        """The transaction's connection inside one, else a transaction of its own."""
        pinned = self._pinned()
        if pinned is not None:
            yield pinned
            return
        with self.transaction() as conn:
            yield conn

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Any]:
        """Reads that see one snapshot of the store (the transaction's own, inside one)."""
        with self.transaction(lock=False, begin="BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") as conn:
            yield conn

    @contextlib.contextmanager
    def transaction(self, *, lock: bool = True, begin: str = "BEGIN") -> Iterator[Any]:
        """One transaction holding the store's write lock; nested calls join the outer one."""
        pinned = self._pinned()
        if pinned is not None:
            yield pinned
            return
        with self._borrow() as conn:
            self._local.conn = conn
            try:
                conn.execute("BEGIN READ ONLY" if self.readonly else begin)
                try:
                    if lock and not self.readonly:
                        conn.execute("SELECT pg_advisory_xact_lock(%s)", (self.lock,))
                    yield conn
                except BaseException as exc:
                    with contextlib.suppress(Exception):
                        conn.execute("ROLLBACK")
                    if _is_driver_error(exc):
                        raise translate(exc, self.dsn) from exc
                    raise
                failpoint("store.before_commit")
                try:
                    conn.execute("COMMIT")
                except Exception as exc:
                    with contextlib.suppress(Exception):
                        conn.execute("ROLLBACK")
                    raise translate(exc, self.dsn) from exc
                failpoint("store.after_commit")
            finally:
                self._local.conn = None


def _is_driver_error(exc: BaseException) -> bool:
    return type(exc).__module__.startswith(("psycopg", "psycopg_pool"))
