"""Helpers for the kill tests: projects with queued sessions, cortex child processes that may
carry a failpoint, and the checks every store must pass after a kill.

A failpoint (`CORTEX_FAILPOINT`, see cortex/shell/failpoints.py) makes the child SIGKILL itself
at a named step, so a test knows where the kill landed because the child died (-SIGKILL), not
because of how long it ran.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from cortex.paths import STORE_DIR
from cortex.shell.failpoints import ENV as FAILPOINT_ENV
from tests.conftest import GIT_ENV, KEPT_CORTEX_ENV, LEAKY_ENV
from tests.support.runtime import (
    DEMO_TRANSCRIPT,
    REPO,
    decision_session,
    queue_stop,
    user_record,
    write_transcript,
)
from tests.support.stress import integrity, journal_gaps, query
from tests.support.transcript_builders import FIXTURES

KILLED = -signal.SIGKILL if hasattr(signal, "SIGKILL") else 137
FIXTURE_SESSIONS = (
    "spotter/short.jsonl",
    "spotter/tool_heavy.jsonl",
    "fasthooks/sample_main_transcript.jsonl",
    "generated/cc-2.1.330-mock-api-session.jsonl",
)
# Sessions each worker run captures: the fixtures found, the demo session, and `mixed`.
SESSION_COUNT = sum((FIXTURES / rel).exists() for rel in FIXTURE_SESSIONS) + 2
QUIET = {
    "CORTEX_EMBEDDER": "none",
    "CORTEX_CONSOLIDATE_EVERY": "100000",  # merging depends on how often the tick ran
    "CORTEX_CONSOLIDATE_ACTIVE_OVER": "100000",
}
HASHES_SQL = "SELECT content_hash FROM memories"


def child_env(home: Path, failpoint: str | None = None, **extra: str) -> dict[str, str]:
    """A cortex child's environment: this checkout, its own home, no model, none of the
    caller's CORTEX_* settings, and the failpoint when one is given."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not (k.startswith("CORTEX_") and k not in KEPT_CORTEX_ENV) and k not in LEAKY_ENV
    }
    env.update(GIT_ENV)
    env.update(PYTHONPATH=str(REPO), CORTEX_HOME=str(home), **QUIET, **extra)
    if failpoint:
        env[FAILPOINT_ENV] = failpoint
    return env


def run_child(
    args: Sequence[str], home: Path, failpoint: str | None = None, *, timeout_s: float = 600, **extra: str
) -> int:
    """Run `python ARGS` to its end (or its failpoint); its return code."""
    return subprocess.run(
        [sys.executable, *args],
        env=child_env(home, failpoint, **extra),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        timeout=timeout_s,
        check=False,
    ).returncode


def start_child(args: Sequence[str], home: Path, failpoint: str | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, *args],
        env=child_env(home, failpoint),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def worker_args(project: Path) -> list[str]:
    return ["-m", "cortex.plugin.worker", "--root", str(project)]


def cli_args(project: Path, *args: str) -> list[str]:
    return ["-m", "cortex", "-C", str(project), *args]


def git_project(root: Path) -> Path:
    """A git repository on branch `main` with one commit (the `project` fixture, for any scope)."""
    root.mkdir(parents=True)
    env = {**os.environ, **GIT_ENV}
    (root / "README.md").write_text("# demo project\n", encoding="utf-8")
    for args in (
        ("init", "-q", "-b", "main"),
        ("add", "README.md"),
        ("commit", "-q", "-m", "initial commit"),
    ):
        subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, check=True, timeout=60)
    return root


def sessions(folder: Path) -> list[tuple[str, Path]]:
    """(session id, transcript) pairs: real fixtures, the demo session, and one with a global note."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for rel in FIXTURE_SESSIONS:
        src = FIXTURES / rel
        if src.exists():
            dst = folder / rel.replace("/", "_")
            shutil.copy2(src, dst)
            out.append((f"fixture-{dst.stem}", dst))
    demo = folder / "demo.jsonl"
    shutil.copy2(DEMO_TRANSCRIPT, demo)
    out.append(("demo-session", demo))
    remember = (
        "<command-name>/cortex:remember</command-name>\n"
        "<command-args>--global --type preference Keep commit subjects under 60 characters</command-args>"
    )
    mixed = write_transcript(
        folder / "mixed.jsonl",
        [user_record(remember, uuid="g1", sessionId="mixed"), *decision_session("mixed")],
    )
    out.append(("mixed", mixed))
    assert len(out) == SESSION_COUNT
    return out


def fresh_project(base: Path, template: Path, transcripts: list[tuple[str, Path]]) -> tuple[Path, Path]:
    """A copy of the template repository with every session queued, and its own CORTEX_HOME."""
    project = base / "project"
    shutil.copytree(template, project, symlinks=True)
    home = base / "home"
    home.mkdir()
    for session, transcript in transcripts:
        queue_stop(project, transcript, session)
    return project, home


def project_db(project: Path) -> Path:
    return project / STORE_DIR / "cortex.db"


def has_schema(db: Path) -> bool:
    """The store exists and its first migration committed (a kill may come before either)."""
    return db.exists() and bool(query(db, "SELECT 1 FROM sqlite_master WHERE name = 'memories'"))


def committed_hashes(db: Path) -> set[str]:
    """Content hashes in the store (none when it was killed before its schema committed)."""
    return {r[0] for r in query(db, HASHES_SQL)} if has_schema(db) else set()


def assert_intact(db: Path) -> None:
    """Read without opening it as cortex does (which would migrate or repair): SQLite's own
    integrity check passes and the journal has no holes."""
    if not db.exists():
        return
    assert integrity(db) == ["ok"]
    if has_schema(db):
        assert journal_gaps(db) == []


def spec_name(spec: str) -> str:
    """`name:N` -> name."""
    return spec.partition(":")[0]


def failpoints_of(specs: Iterable[str | Sequence[str]]) -> set[str]:
    """The failpoint names a list of scenarios arms (a scenario is a spec or a list of specs)."""
    out: set[str] = set()
    for item in specs:
        for spec in [item] if isinstance(item, str) else item:
            out.add(spec_name(spec))
    return out
