"""sqlite-vec on any Python: find the extension without numpy, choose one SQLite driver per process."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cortex.store.sqlite import vec

REPO = Path(__file__).resolve().parents[3]
STDLIB_CAN_LOAD = hasattr(sqlite3.Connection, "enable_load_extension")


def run_python(code: str, env: dict[str, str] | None = None, cwd: Path = REPO) -> dict[str, object]:
    """Run code in a fresh interpreter and parse the JSON it prints last."""
    full = {**os.environ, **(env or {}), "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=full,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.splitlines()[-1])
    return result


DRIVER_REPORT = (
    "import json, sys\n"
    "from cortex.store.sqlite import vec\n"
    "d = vec.choose_driver(True)\n"
    "print(json.dumps({'name': d.name, 'vectors': d.vectors, 'note': d.note,"
    " 'numpy': 'numpy' in sys.modules, 'sqlite_vec': 'sqlite_vec' in sys.modules}))\n"
)


def test_the_extension_is_found_as_a_file() -> None:
    path = vec.find_vec_extension()
    assert path is not None and path.is_file() and path.stem == "vec0"


def test_choosing_a_driver_never_imports_numpy_or_the_sqlite_vec_package() -> None:
    report = run_python(DRIVER_REPORT)
    assert report["numpy"] is False and report["sqlite_vec"] is False
    assert report["vectors"] is True


def test_this_python_gets_vector_search_whatever_its_stdlib_can_do() -> None:
    driver = vec.choose_driver(True)
    assert driver.vectors, driver.note
    if not STDLIB_CAN_LOAD:  # the pyenv build on our machines: sqlean.py stands in
        assert driver.name == "sqlean"
        assert "without extension loading" in driver.note


def test_the_driver_is_chosen_once_per_process() -> None:
    assert vec.choose_driver(True) is vec.choose_driver(False) is vec.chosen_driver()


def test_forcing_sqlean_gives_vectors() -> None:
    report = run_python(DRIVER_REPORT, env={vec.DRIVER_ENV: "sqlean"})
    assert report["name"] == "sqlean" and report["vectors"] is True


def test_forcing_the_stdlib_reports_why_vectors_are_missing() -> None:
    report = run_python(DRIVER_REPORT, env={vec.DRIVER_ENV: "sqlite3"})
    assert report["name"] == "sqlite3"
    if STDLIB_CAN_LOAD:
        assert report["vectors"] is True
    else:
        assert report["vectors"] is False
        assert "without extension loading" in str(report["note"])


def test_not_wanting_vectors_uses_the_stdlib() -> None:
    code = (
        "import json\nfrom cortex.store.sqlite import vec\n"
        "d = vec.choose_driver(False)\n"
        "print(json.dumps({'name': d.name, 'vectors': d.vectors}))\n"
    )
    assert run_python(code) == {"name": "sqlite3", "vectors": False}


def test_python_description_says_whether_extensions_load() -> None:
    text = vec.python_description()
    assert sys.version.split()[0] in text
    assert ("available" if STDLIB_CAN_LOAD else "NOT available") in text


@pytest.mark.skipif(STDLIB_CAN_LOAD, reason="this Python's sqlite3 can load extensions itself")
def test_stdlib_without_extension_loading_is_really_what_this_machine_has() -> None:
    # The premise of the sqlean.py fallback (SPEC §1): the stdlib module cannot load vec0 here.
    conn = sqlite3.connect(":memory:")
    try:
        assert not hasattr(conn, "enable_load_extension")
    finally:
        conn.close()
