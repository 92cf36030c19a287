"""Two developers on one repository: a bare remote, a clone and a CORTEX_HOME each, one team store.

`team_store_dsn` names the team store a test shares: a SQLite directory (the stand-in that needs
no server) or the real PostgreSQL of `tests/support/postgres.py`. Each test's remote is a fresh
bare repository, so its team namespace (the normalised remote URL) is its own on a shared server.
"""

from __future__ import annotations

import dataclasses
import subprocess
from dataclasses import dataclass
from pathlib import Path

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
