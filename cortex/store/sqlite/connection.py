"""Open cortex SQLite files safely: validation, pragmas (WAL, busy timeout), sqlite-vec, transactions."""

from __future__ import annotations

import contextlib
import errno
import logging
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cortex.errors import NotACortexStore, StoreError
from cortex.shell.failpoints import failpoint
from cortex.store.sqlite import vec

log = logging.getLogger("cortex.db")

APPLICATION_ID = 0x63727478  # "crtx": marks a file as a cortex store
SQLITE_MAGIC = b"SQLite format 3\x00"
MIN_FREE_BYTES = 1_000_000  # below this, an I/O error on the store's disk is taken as "disk full"
BUSY_TIMEOUT_MS = 30_000  # several sessions write at once; waiting beats "database is locked"


@dataclass(slots=True)
class Connection:
    """A connection plus what it can do; `raw` is the DB-API connection of the chosen driver."""

    raw: Any
    path: Path
    driver: vec.Driver
    vectors: bool
    readonly: bool

    def execute(self, sql: str, params: Any = ()) -> Any:
        """Run one statement on the underlying connection."""
        return self.raw.execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> Any:
        """Run one statement for each row of parameters."""
        return self.raw.executemany(sql, rows)

    def close(self) -> None:
        """Close the underlying connection."""
        self.raw.close()


def check_file(path: Path) -> None:
    """Refuse files that are not SQLite at all (random bytes, truncated header) before opening them."""
    try:
        with path.open("rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except FileNotFoundError:
        return
    except IsADirectoryError:
        raise NotACortexStore(
            f"{path} is a directory, not a cortex store", "move it aside or remove it"
        ) from None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}", "check the file's permissions") from exc
    if head and head != SQLITE_MAGIC:
        raise NotACortexStore(
            f"{path} is not an SQLite database (corrupt or another kind of file); cortex left it untouched",
            f"move it aside (mv {path} {path}.bad) and cortex will start a new store, "
            "or restore a checkpoint with `cortex restore`",
        )


def is_sqlite_busy(exc: BaseException) -> bool:
    """True for 'database is locked' / 'busy' errors from any driver."""
    return "locked" in str(exc).lower() or "busy" in str(exc).lower()


def _io_error_of_full_disk(low: str, path: Path) -> bool:
    """SQLite reports a full disk met while growing its -shm/-wal files as a plain I/O error."""
    if "disk i/o error" not in low:
        return False
    try:
        return shutil.disk_usage(path if path.is_dir() else path.parent).free < MIN_FREE_BYTES
    except OSError:
        return False


def translate(exc: BaseException, path: Path) -> StoreError:
    """Turn a driver or OS error into a StoreError that names the fix."""
    text = str(exc)
    low = text.lower()
    if (
        (isinstance(exc, OSError) and exc.errno == errno.ENOSPC)
        or "disk is full" in low
        or _io_error_of_full_disk(low, path)
    ):
        return StoreError(
            f"the disk holding {path} is full; nothing was written",
            "free some disk space and retry",
        )
    if "readonly" in low or "read-only" in low or isinstance(exc, PermissionError):
        return StoreError(
            f"{path} is read-only; cortex cannot write there",
            "make the file and its directory writable (SQLite writes a -wal file beside it)",
        )
    if "malformed" in low or "not a database" in low or "corrupt" in low:
        return NotACortexStore(
            f"{path} is corrupt ({text}); cortex left it untouched",
            "restore the last checkpoint with `cortex restore`, or move the file aside",
        )
    if is_sqlite_busy(exc):
        return StoreError(
            f"{path} stayed locked by another writer for {BUSY_TIMEOUT_MS // 1000} s; nothing was written",
            "retry; if it keeps happening, look for a stuck cortex process (`ps aux | grep cortex`)",
        )
    if "unable to open" in low:
        return StoreError(f"cannot open {path} ({text})", "check that the directory exists and is writable")
    return StoreError(f"{path}: {text}", "run `cortex doctor` for details")


def connect(path: Path, *, readonly: bool = False, want_vectors: bool = True) -> Connection:
    """Open (creating if allowed) an SQLite file with cortex's pragmas and, when possible, sqlite-vec."""
    check_file(path)
    driver = vec.choose_driver(want_vectors)
    mod = driver.module
    try:
        if readonly:
            uri = path.resolve().as_uri() + "?mode=ro"
            raw = mod.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        else:
            raw = mod.connect(str(path), isolation_level=None, check_same_thread=False)
        raw.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if readonly:
            # SQLite opens lazily: a WAL file in a directory we cannot write fails only here.
            raw.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except Exception as exc:
        if readonly:
            raw = _connect_immutable(mod, path, exc)
        else:
            raise translate(exc, path) from exc
    conn = Connection(raw, path, driver, False, readonly)
    try:
        conn.vectors = vec.load_vec(raw, driver)
    except Exception as exc:  # a broken extension must not stop keyword search
        log.warning("sqlite-vec failed to load into %s: %s", path, exc)
    return conn


def _connect_immutable(mod: Any, path: Path, first: BaseException) -> Any:
    """Read a store in a directory we cannot write (WAL needs -shm): open it as immutable."""
    wal = path.with_name(path.name + "-wal")
    with contextlib.suppress(OSError):
        if wal.stat().st_size:
            log.warning("%s is read-only and has an unmerged WAL: recent writes may be missing", path)
    try:
        uri = path.resolve().as_uri() + "?immutable=1"
        raw = mod.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        raw.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return raw
    except Exception as exc:
        corrupt = isinstance(translate(exc, path), NotACortexStore)
        raise translate(exc if corrupt else first, path) from exc


def data_version(conn: Connection) -> int:
    """A number that changes when another connection commits to the file (not on our writes)."""
    return int(conn.execute("PRAGMA data_version").fetchone()[0])


def apply_pragmas(conn: Connection) -> None:
    """WAL, NORMAL sync, foreign keys; the WAL switch happens once per file and is persistent."""
    if conn.readonly:
        return
    _switch_to_wal(conn)
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")


def _switch_to_wal(conn: Connection) -> None:
    """Put the file in WAL mode. SQLite answers a journal-mode change that races another
    connection with an immediate "database is locked" (the busy timeout does not apply), so
    retry until it holds or the busy timeout is spent."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    pause_s = 0.005
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            return
        except Exception as exc:
            if not is_sqlite_busy(exc) or time.monotonic() > deadline:
                raise
        time.sleep(pause_s)
        pause_s = min(pause_s * 2, 0.1)


@contextlib.contextmanager
def transaction(conn: Connection) -> Iterator[Connection]:
    """BEGIN IMMEDIATE ... COMMIT: take the write lock up front so lock upgrades never deadlock."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except Exception as exc:
        raise translate(exc, conn.path) from exc
    try:
        yield conn
    except BaseException as exc:
        with contextlib.suppress(Exception):
            conn.execute("ROLLBACK")
        if isinstance(exc, conn.driver.module.Error):
            raise translate(exc, conn.path) from exc
        raise
    else:
        failpoint("store.before_commit")
        try:
            conn.execute("COMMIT")
        except Exception as exc:
            with contextlib.suppress(Exception):
                conn.execute("ROLLBACK")
            raise translate(exc, conn.path) from exc
        failpoint("store.after_commit")
