"""Two developers on one repository: a bare remote, a clone and a CORTEX_HOME each, one team store.

`team_store_dsn` names the team store a test shares: a SQLite directory (the stand-in that needs
no server) or the real PostgreSQL of `tests/support/postgres.py`. Each test's remote is a fresh
bare repository, so its team namespace (the normalised remote URL) is its own on a shared server.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from cortex.app import Cortex
from cortex.config import load_settings
from cortex.paths import Paths

TEAM_BACKENDS = ["sqlite", "postgres"]


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True, timeout=60)
    return done.stdout


@dataclass
class Developer:
    """One developer: a clone of the shared repository and a CORTEX_HOME of their own."""

    name: str
    root: Path
    home: Path
    dsn: str

    def cortex(self, *, actor: str = "cli", **settings: object) -> Cortex:
        paths = Paths(self.root, self.home)
        chosen = dataclasses.replace(load_settings(paths, env={}), team_dsn=self.dsn, **settings)
        return Cortex(paths, chosen, actor=actor)

    def env(self) -> dict[str, str]:
        """Variables for a `cortex` subprocess run as this developer."""
        return {"CORTEX_HOME": str(self.home), "CORTEX_TEAM_DSN": self.dsn}


def make_team(tmp_path: Path, dsn: str, names: tuple[str, ...] = ("ada", "bob")) -> list[Developer]:
    """A bare repository with one commit and one clone per developer (its git user set)."""
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    seed = tmp_path / "seed"
    git(tmp_path, "clone", "-q", str(origin), str(seed))
    (seed / "README.md").write_text("# shared project\n", encoding="utf-8")
    git(seed, "add", "README.md")
    git(seed, "commit", "-q", "-m", "initial commit")
    git(seed, "push", "-q", "origin", "HEAD:main")
    out = []
    for name in names:
        root = tmp_path / f"clone-{name}"
        # Clones on different machines name the remote differently: one by path, one by URL.
        url = str(origin) if name == names[0] else f"file://{origin}/"
        git(tmp_path, "clone", "-q", "-b", "main", url, str(root))
        git(root, "config", "user.name", name.capitalize())
        git(root, "config", "user.email", f"{name}@example.invalid")
        home = tmp_path / f"home-{name}"
        home.mkdir()
        out.append(Developer(name, root, home, dsn))
    return out


@pytest.fixture(params=TEAM_BACKENDS)
def team_store_dsn(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The team store's DSN: a SQLite folder, or the test PostgreSQL server."""
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_dsn"))
    folder = tmp_path / "team-sqlite"
    folder.mkdir()
    return f"sqlite://{folder}"


def server_text(dsn: str) -> str:
    """Everything the team store's server holds, as text: every row of every table of every
    cortex schema (PostgreSQL), or every byte of the store files (the SQLite stand-in)."""
    if dsn.startswith("sqlite://"):
        folder = Path(dsn.removeprefix("sqlite://"))
        files = [p for p in sorted(folder.rglob("*")) if p.is_file()]
        return "\n".join(p.read_bytes().decode("latin-1") for p in files)
    import psycopg

    out = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'"
        ).fetchall()
        for schema, table in tables:
            rows = conn.execute(f'SELECT t::text FROM "{schema}"."{table}" t').fetchall()
            out.extend(str(r[0]) for r in rows)
    return "\n".join(out)


class Switchable:
    """A team store the test can take away and bring back: its own PostgreSQL server (stopped
    and started again on the same port and data), or the SQLite stand-in's folder (moved away)."""

    def __init__(self, kind: str, base: Path) -> None:
        self.kind = kind
        self.base = base
        self.server: Any = None
        if kind == "postgres":
            from tests.support import postgres

            try:
                self.server = postgres.start(base / "pg")
            except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
                pytest.skip(f"PostgreSQL could not be started: {exc}")
            self.dsn = self.server.dsn
        else:
            self.folder = base / "team-sqlite"
            self.folder.mkdir(parents=True)
            self.dsn = f"sqlite://{self.folder}"

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
        else:
            self.folder.rename(self.folder.with_name("team-sqlite-away"))

    def start(self) -> None:
        if self.server is None:
            self.folder.with_name("team-sqlite-away").rename(self.folder)
            return
        import psycopg

        from tests.support import postgres

        folder, _ = postgres.binaries()
        assert folder is not None
        port = str(urlsplit(self.dsn).port)
        data = str(self.server.data)
        args = [str(folder / "postgres"), "-D", data, "-h", "127.0.0.1", "-p", port, "-k", data]
        for setting in postgres.SERVER_SETTINGS:
            args += ["-c", setting]
        env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
        with (self.base / "pg" / "server.log").open("ab") as log:
            self.server.process = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, env=env, **postgres._as_user()
            )
        deadline = time.monotonic() + postgres.START_TIMEOUT_S
        while True:
            try:
                psycopg.connect(self.dsn, autocommit=True).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def close(self) -> None:
        if self.server is not None:
            from cortex.store.postgres.connection import close_pools

            close_pools()
            self.server.stop()


@dataclass
class ConcurrentRun:
    """What the processes of `share_concurrently` acknowledged, and what the team store holds."""

    shared: dict[str, str]  # id -> text, every share acknowledged
    unshared: set[str]
    errors: list[str]
    team_active: list[Any]  # Memory values active in the team store
    team_all: list[Any]
    journal_seqs: list[int]


def share_concurrently(team: list[Developer], processes: int, seconds: float) -> ConcurrentRun:
    """`processes` actors spread over the developers' clones, storing and sharing at once; then
    one last push per clone (what the worker does) and a look at the team store."""
    import sys

    from cortex.team.push import push
    from tests.support.runtime import REPO

    outs = []
    procs = []
    for i in range(processes):
        dev = team[i % len(team)]
        out = dev.root.parent / f"actor-{i}.jsonl"
        outs.append(out)
        cmd = [
            sys.executable,
            "-m",
            "tests.support.team_actor",
            "--root",
            str(dev.root),
            "--home",
            str(dev.home),
        ]
        cmd += ["--dsn", dev.dsn, "--name", f"a{i}", "--seconds", str(seconds), "--out", str(out)]
        env = {**os.environ, "PYTHONPATH": str(REPO), "CORTEX_EMBEDDER": "none", "CORTEX_HOME": str(dev.home)}
        procs.append(subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True))
    errors = []
    for p in procs:
        _, err = p.communicate(timeout=seconds + 600)
        if p.returncode:
            errors.append(f"exit {p.returncode}: {err[-2000:]}")
    shared: dict[str, str] = {}
    unshared: set[str] = set()
    for out in outs:
        for line in out.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row["op"] == "shared":
                shared[row["id"]] = row["text"]
            elif row["op"] == "unshared":
                unshared.add(row["id"])
            else:
                errors.append(row["error"])
    for dev in team:
        with dev.cortex() as cx:
            report = push(cx)
            if report.error or report.pending:
                errors.append(f"final push of {dev.name}: {report.error} ({report.pending} pending)")
    with team[0].cortex() as cx:
        store = cx.team_store()
        assert store is not None
        everything = store.all_memories()
        seqs = [int(r["seq"]) for r in store.journal_rows()]
    return ConcurrentRun(
        shared, unshared, errors, [m for m in everything if m.status.value == "active"], everything, seqs
    )
