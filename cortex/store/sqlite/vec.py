"""Find and load the sqlite-vec extension on any Python, and choose the SQLite driver once per process."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

# One SQLite library per process: two copies of SQLite in one process that open the same file can
# silently drop each other's POSIX locks on close, which corrupts databases under concurrency.
_LOCK = threading.Lock()
_CHOSEN: Driver | None = None

DRIVER_ENV = "CORTEX_SQLITE_DRIVER"  # "sqlite3" | "sqlean": force a driver (tests, diagnostics)


@dataclass(frozen=True, slots=True)
class Driver:
    """The DB-API module cortex uses in this process and whether it gives vector search."""

    name: str
    module: ModuleType
    sqlite_version: str
    vec_path: Path | None
    vectors: bool
    note: str


def find_vec_extension() -> Path | None:
    """Path of the sqlite-vec loadable library, found without importing `sqlite_vec` (it imports numpy)."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations)))
    for name in ("vec0.so", "vec0.dylib", "vec0.dll"):
        if (folder / name).exists():
            return folder / name
    return None


def _try_load(module: ModuleType, vec_path: Path) -> str | None:
    """Load vec0 into a scratch connection of `module`; None on success, else the reason."""
    try:
        conn = module.connect(":memory:")
    except Exception as exc:  # pragma: no cover - a broken driver module
        return f"cannot open a connection: {exc}"
    try:
        if not hasattr(conn, "enable_load_extension"):
            return "this Python's sqlite3 was built without extension loading"
        conn.enable_load_extension(True)
        conn.load_extension(str(vec_path.with_suffix("")))
        conn.enable_load_extension(False)
        conn.execute("select vec_version()").fetchone()
        return None
    except Exception as exc:
        return f"loading sqlite-vec failed: {exc}"
    finally:
        conn.close()


def _stdlib() -> ModuleType:
    import sqlite3

    return sqlite3


def _choose(want_vectors: bool) -> Driver:
    forced = os.environ.get(DRIVER_ENV, "").strip().lower()
    stdlib = _stdlib()
    if not want_vectors and forced != "sqlean":
        return Driver("sqlite3", stdlib, stdlib.sqlite_version, None, False, "vectors not requested")
    vec_path = find_vec_extension()
    if vec_path is None:
        return Driver(
            "sqlite3",
            stdlib,
            stdlib.sqlite_version,
            None,
            False,
            "sqlite-vec is not installed (pip install sqlite-vec): keyword-only search",
        )
    reasons = []
    if forced in ("", "sqlite3"):
        why = _try_load(stdlib, vec_path)
        if why is None:
            return Driver("sqlite3", stdlib, stdlib.sqlite_version, vec_path, True, "stdlib sqlite3")
        reasons.append(f"stdlib sqlite3: {why}")
        if forced == "sqlite3":
            return Driver("sqlite3", stdlib, stdlib.sqlite_version, vec_path, False, reasons[0])
    try:
        sqlean = importlib.import_module("sqlean")
    except ImportError:
        reasons.append("sqlean.py is not installed (pip install sqlean.py)")
    else:
        why = _try_load(sqlean, vec_path)
        if why is None:
            note = "sqlean.py (" + (reasons[0] if reasons else "forced") + ")"
            return Driver("sqlean", sqlean, sqlean.sqlite_version, vec_path, True, note)
        reasons.append(f"sqlean.py: {why}")
    return Driver("sqlite3", stdlib, stdlib.sqlite_version, vec_path, False, "; ".join(reasons))


def choose_driver(want_vectors: bool = True) -> Driver:
    """The driver for this process: chosen on first call and kept, so one SQLite library is in use."""
    global _CHOSEN
    with _LOCK:
        if _CHOSEN is None:
            _CHOSEN = _choose(want_vectors)
        return _CHOSEN


def chosen_driver() -> Driver | None:
    """The driver already chosen in this process, if any (for diagnostics)."""
    return _CHOSEN


def reset_driver_for_tests() -> None:
    """Forget the chosen driver; only tests that open no connection afterwards with the old one."""
    global _CHOSEN
    with _LOCK:
        _CHOSEN = None


def load_vec(conn: object, driver: Driver) -> bool:
    """Load sqlite-vec into an open connection when the driver can; True when vec0 is available."""
    if not driver.vectors or driver.vec_path is None:
        return False
    conn.enable_load_extension(True)  # type: ignore[attr-defined]
    try:
        conn.load_extension(str(driver.vec_path.with_suffix("")))  # type: ignore[attr-defined]
    finally:
        conn.enable_load_extension(False)  # type: ignore[attr-defined]
    return True


def python_description() -> str:
    """One line naming this Python and whether its stdlib sqlite3 can load extensions."""
    stdlib = _stdlib()
    can = hasattr(stdlib.Connection, "enable_load_extension")
    return (
        f"Python {sys.version.split()[0]} ({sys.executable}); stdlib sqlite3 {stdlib.sqlite_version}, "
        f"extension loading {'available' if can else 'NOT available'}"
    )
