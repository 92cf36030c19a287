"""SIGKILL a consolidation, a rollback and a migration at each of their crash points.

Each scenario arms a failpoint and asserts the child died there (-SIGKILL). After the kill
every store passes SQLite's integrity check, has a gap-free journal and is in the state before
or after the interrupted step, never a mix; only complete checkpoints are listed. A rerun
without failpoint then ends exactly where a run never killed ends: each merge applied once, a
rollback restoring exactly, each migration applied once. A short seeded run of kills at
random moments checks the same outcomes, never where the kills landed. (The worker's crash
points are in tests/plugin/test_worker_kill.py.)
"""

from __future__ import annotations

import random
import shutil
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cortex.app import utcnow
from cortex.core.model import Memory, MemoryType, Scope, Source, Status
from cortex.core.text import content_hash
from cortex.paths import GLOBAL_DB
from cortex.store.sqlite import checkpoint
from cortex.store.sqlite import migrations as sqlite_migrations
from cortex.store.sqlite.store import Store
from tests.support.crash import (
    HASHES_SQL,
    KILLED,
    assert_intact,
    cli_args,
    git_project,
    project_db,
    run_child,
    start_child,
)
from tests.support.runtime import snapshot
from tests.support.stress import nonce_text, query

pytestmark = pytest.mark.slow  # dozens of cortex processes

SEED = 7_2026
RANDOM_RUNS = 6
PAIRS = {Scope.PROJECT: 60, Scope.GLOBAL: 4}  # clusters of near-duplicates per store
STATE_SQL = "SELECT content_hash, status, type FROM memories ORDER BY content_hash, status"
JOURNAL_SQL = "SELECT op, memory_id, payload FROM journal ORDER BY seq"
MERGES_SQL = "SELECT count(*) FROM journal WHERE op = 'merge' AND memory_id IS NULL"
CONSOLIDATE = ("consolidate", "--yes", "--json")
ROLLBACK = ("consolidate", "--rollback", "--yes", "--json")
SCOPES = (Scope.PROJECT, Scope.GLOBAL)  # the order a consolidation visits the stores


def store_paths(project: Path, home: Path) -> dict[Scope, Path]:
    return {Scope.PROJECT: project_db(project), Scope.GLOBAL: home / GLOBAL_DB}


def memory(text: str, n: int, scope: Scope, at: datetime) -> Memory:
    return Memory(
        id=f"{n:010x}",
        content=text,
        summary=text[:60],
        type=MemoryType.DECISION,
        scope=scope,
        confidence=0.8,
        priority=5,
        pinned=False,
        source=Source(),
        tags=(),
        access_count=0,
        last_accessed=None,
        created=at,
        updated=at,
        status=Status.ACTIVE,
        content_hash=content_hash(text),
    )


def near_duplicate_store(db: Path, scope: Scope, pairs: int, rng: random.Random, start: int = 1) -> None:
    """`pairs` clusters of near-identical memories (written past the gate) and as much noise."""
    db.parent.mkdir(parents=True, exist_ok=True)
    at = utcnow() - timedelta(days=2)
    n = iter(range(start, start + 3 * pairs))
    store = Store.open(db, scope)
    try:
        with store.transaction():
            for _ in range(pairs):
                text = nonce_text(rng, 12)
                for variant in (text, text[:-1] + " in production."):
                    store.insert_memory(memory(variant, next(n), scope, at), "seed", at)
            for _ in range(pairs):
                store.insert_memory(memory(nonce_text(rng, 10), next(n), scope, at), "seed", at)
    finally:
        store.close()


def copy_state(src: Path, dst: Path) -> tuple[Path, Path]:
    """A copy of a (project, home) pair: stores, checkpoints and all."""
    shutil.copytree(src, dst, symlinks=True)
    return dst / "project", dst / "home"


def states(project: Path, home: Path) -> dict[Scope, list[tuple[Any, ...]]]:
    return {scope: query(db, STATE_SQL) for scope, db in store_paths(project, home).items()}


def merges(project: Path, home: Path) -> dict[Scope, int]:
    return {scope: query(db, MERGES_SQL)[0][0] for scope, db in store_paths(project, home).items()}


def journals(project: Path, home: Path) -> dict[Scope, list[tuple[Any, ...]]]:
    return {scope: query(db, JOURNAL_SQL) for scope, db in store_paths(project, home).items()}


def assert_checkpoints_sound(project: Path, home: Path) -> None:
    """Every listed checkpoint is intact; leftovers of a killed one are never listed."""
    for db in store_paths(project, home).values():
        listed = checkpoint.list_checkpoints(db)
        for cp in listed:
            con = sqlite3.connect(cp.path.resolve().as_uri() + "?mode=ro", uri=True)
            try:
                assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            finally:
                con.close()
        folder = checkpoint.checkpoint_dir(db)
        done = {cp.path for cp in listed}
        assert all(p in done or not p.with_suffix(".json").exists() for p in folder.glob(f"{db.stem}-*.db"))


@dataclass(frozen=True)
class Consolidated:
    """Seeded stores before, after one clean consolidation, and after its clean rollback."""

    seeded: Path  # holds project/ and home/ as seeded
    merged: Path  # the same after `cortex consolidate`
    before: dict[Scope, list[tuple[Any, ...]]]
    after: dict[Scope, list[tuple[Any, ...]]]
    after_snapshot: dict[str, Any]
    merges: dict[Scope, int]
    rolled_back: dict[Scope, list[tuple[Any, ...]]]  # the journals after the clean rollback
    seconds: float


@pytest.fixture(scope="module")
def consolidated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Consolidated]:
    base = tmp_path_factory.mktemp("consolidation")
    seeded = base / "seeded"
    project, home = git_project(seeded / "project"), seeded / "home"
    rng = random.Random(SEED)
    for scope, db in store_paths(project, home).items():
        near_duplicate_store(db, scope, PAIRS[scope], rng, start=1 if scope is Scope.PROJECT else 10**6)
    before = states(project, home)
    merged_project, merged_home = copy_state(seeded, base / "merged")
    started = time.monotonic()
    assert run_child(cli_args(merged_project, *CONSOLIDATE), merged_home) == 0
    seconds = time.monotonic() - started  # bounds the random kills' delays, never asserted
    after, counts = states(merged_project, merged_home), merges(merged_project, merged_home)
    assert all(after[s] != before[s] and counts[s] > PAIRS[s] // 2 for s in SCOPES)
    after_snapshot = snapshot(merged_project, merged_home)
    undone_project, undone_home = copy_state(base / "merged", base / "undone")
    assert run_child(cli_args(undone_project, *ROLLBACK), undone_home) == 0  # exits 1 unless exact
    assert states(undone_project, undone_home) == before
    rolled_back = journals(undone_project, undone_home)
    yield Consolidated(seeded, base / "merged", before, after, after_snapshot, counts, rolled_back, seconds)
    shutil.rmtree(base, ignore_errors=True)


def assert_consolidated_once(project: Path, home: Path, clean: Consolidated, what: str) -> None:
    assert states(project, home) == clean.after, what
    assert snapshot(project, home) == clean.after_snapshot, what
    assert merges(project, home) == clean.merges, f"{what}: a cluster merged twice"
    for db in store_paths(project, home).values():
        assert_intact(db)
        assert not list(checkpoint.checkpoint_dir(db).glob("*.tmp")), what
    assert_checkpoints_sound(project, home)


# -- a consolidation -----------------------------------------------------------------------------
# (spec, how many stores had committed their merges when it died); the project store goes first.
CONSOLIDATION_POINTS = (
    ("checkpoint.after_backup", 0),  # a whole backup under its temporary name
    ("checkpoint.after_rename", 0),  # a backup without its sidecar: not a checkpoint yet
    ("consolidate.after_checkpoint", 0),
    ("consolidate.after_merge", 0),  # inside the merge transaction
    (f"consolidate.after_merge:{PAIRS[Scope.PROJECT] // 2}", 0),
    ("consolidate.before_commit", 0),
    ("store.before_commit", 0),
    ("store.after_commit", 1),
    ("consolidate.after_commit", 1),  # the project store merged, the global one not yet
    ("consolidate.after_checkpoint:2", 1),
    ("consolidate.before_commit:2", 1),  # inside the global store's merge transaction
    ("consolidate.after_commit:2", 2),
)


@pytest.mark.parametrize(
    ("spec", "committed"), CONSOLIDATION_POINTS, ids=[s for s, _ in CONSOLIDATION_POINTS]
)
def test_consolidation_killed_at_a_crash_point_is_all_or_nothing_and_reruns_once(
    consolidated: Consolidated, tmp_path: Path, spec: str, committed: int
) -> None:
    project, home = copy_state(consolidated.seeded, tmp_path / "run")
    assert run_child(cli_args(project, *CONSOLIDATE), home, spec) == KILLED, f"{spec} was never reached"
    for db in store_paths(project, home).values():
        assert_intact(db)
    state = states(project, home)
    for i, scope in enumerate(SCOPES):
        wanted = consolidated.after if i < committed else consolidated.before
        assert state[scope] == wanted[scope], f"{spec}: the {scope.value} store is half-consolidated"
    assert_checkpoints_sound(project, home)
    assert run_child(cli_args(project, *CONSOLIDATE), home) == 0
    assert_consolidated_once(project, home, consolidated, spec)


def test_consolidation_killed_at_random_moments_reruns_once(
    consolidated: Consolidated, tmp_path: Path
) -> None:
    """Kills land anywhere (start-up, planning, a backup, inside SQLite); only the outcome counts."""
    rng = random.Random(SEED + 1)
    for run in range(RANDOM_RUNS):
        project, home = copy_state(consolidated.seeded, tmp_path / f"run{run}")
        proc = start_child(cli_args(project, *CONSOLIDATE), home)
        time.sleep(rng.uniform(0.0, consolidated.seconds * 1.05))
        proc.kill()
        proc.wait(timeout=600)
        state = states(project, home)
        for scope in SCOPES:
            assert state[scope] in (consolidated.before[scope], consolidated.after[scope]), f"run {run}"
        assert_checkpoints_sound(project, home)
        assert run_child(cli_args(project, *CONSOLIDATE), home) == 0
        assert_consolidated_once(project, home, consolidated, f"run {run} (seed {SEED + 1})")
        shutil.rmtree(project.parent)


# -- a rollback ----------------------------------------------------------------------------------
# The global store's checkpoint is the newer one: a rollback restores it first.
ROLLBACK_POINTS = (
    "checkpoint.after_rename:1",  # the first safety checkpoint, incomplete
    "restore.after_safety_checkpoint",
    "restore.after_swap",  # the global store restored, not yet journaled nor marked
    "restore.after_journal",
    "restore.after_mark",  # one store rolled back, the other not yet
    "restore.after_swap:2",
    "restore.after_mark:2",  # all done: the rerun finds nothing left to roll back
)


@pytest.mark.parametrize("spec", ROLLBACK_POINTS)
def test_rollback_killed_at_a_crash_point_resumes_and_restores_exactly(
    consolidated: Consolidated, tmp_path: Path, spec: str
) -> None:
    project, home = copy_state(consolidated.merged, tmp_path / "run")
    assert run_child(cli_args(project, *ROLLBACK), home, spec) == KILLED, f"{spec} was never reached"
    state = states(project, home)
    for scope, db in store_paths(project, home).items():
        assert_intact(db)
        assert state[scope] in (consolidated.before[scope], consolidated.after[scope]), spec
    assert_checkpoints_sound(project, home)
    finished = spec == ROLLBACK_POINTS[-1]
    # Exit 0 only when the restore was exact; 1 when every checkpoint was already restored.
    assert run_child(cli_args(project, *ROLLBACK), home) == (1 if finished else 0)
    assert states(project, home) == consolidated.before, spec
    assert journals(project, home) == consolidated.rolled_back, spec
    assert run_child(cli_args(project, *ROLLBACK), home) == 1  # a rollback happens once
    for db in store_paths(project, home).values():
        assert_intact(db)
    assert_checkpoints_sound(project, home)


# -- a migration ---------------------------------------------------------------------------------
# The child adds one more migration after this cortex's last (BASE), as a future release would,
# and opens the store (which migrates it).
BASE = len(sqlite_migrations.MIGRATIONS)
NEXT = BASE + 1
MIGRATE = """
import sys
from pathlib import Path
from cortex.store.sqlite import migrations

def m_stress(conn):
    conn.execute("ALTER TABLE memories ADD COLUMN stress_note TEXT")
    for _ in range(5):
        conn.execute("UPDATE memories SET stress_note = content || coalesce(stress_note, '')")
    conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
    conn.execute("INSERT INTO journal (at, actor, op, payload) VALUES ('now', 'migration', 'm_stress', '{}')")

migrations.MIGRATIONS = (*migrations.MIGRATIONS, m_stress)
migrations.LATEST_VERSION = len(migrations.MIGRATIONS)
from cortex.core.model import Scope
from cortex.store.sqlite.store import Store
Store.open(Path(sys.argv[1]), Scope.PROJECT).close()
"""
# (the store it starts from, spec, the schema version it is left at)
MIGRATION_POINTS = (
    ("seeded", "migrate.before_commit", BASE),  # inside the new migration: rolled back
    ("seeded", "store.before_commit", BASE),
    ("seeded", "migrate.after_commit", NEXT),
    ("new", "migrate.before_commit", 0),  # inside m001 of a new file
    ("new", "migrate.after_commit", 1),  # between m001 and m002
    ("new", "migrate.before_commit:2", 1),
)


def version_and_column(db: Path) -> tuple[int, bool]:
    version = query(db, "PRAGMA user_version")[0][0]
    return version, "stress_note" in {r[1] for r in query(db, "PRAGMA table_info(memories)")}


@pytest.fixture(scope="module")
def seeded_v1(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[str]]:
    db = tmp_path_factory.mktemp("migration") / "seeded.db"
    near_duplicate_store(db, Scope.PROJECT, 200, random.Random(SEED + 2))
    return db, {r[0] for r in query(db, HASHES_SQL)}


def assert_migrated_once(db: Path, hashes: set[str], what: str) -> None:
    assert version_and_column(db) == (NEXT, True), what
    assert query(db, "SELECT count(*) FROM journal WHERE op = 'm_stress'") == [(1,)], what
    assert {r[0] for r in query(db, HASHES_SQL)} == hashes, what
    assert_intact(db)


@pytest.mark.parametrize(
    ("start", "spec", "left_at"), MIGRATION_POINTS, ids=[f"{a}-{b}" for a, b, _ in MIGRATION_POINTS]
)
def test_migration_killed_at_a_crash_point_is_all_or_nothing_and_reruns_once(
    seeded_v1: tuple[Path, set[str]], tmp_path: Path, start: str, spec: str, left_at: int
) -> None:
    db = tmp_path / "store.db"
    template, hashes = seeded_v1
    if start == "seeded":
        shutil.copy2(template, db)
    else:
        hashes = set()
    home = tmp_path / "home"
    assert run_child(["-c", MIGRATE, str(db)], home, spec) == KILLED, f"{spec} was never reached"
    assert_intact(db)
    assert version_and_column(db) == (left_at, left_at == NEXT), spec
    assert run_child(["-c", MIGRATE, str(db)], home) == 0
    assert_migrated_once(db, hashes, spec)


def test_migration_killed_at_random_moments_reruns_once(
    seeded_v1: tuple[Path, set[str]], tmp_path: Path
) -> None:
    template, hashes = seeded_v1
    home = tmp_path / "home"
    clean = tmp_path / "clean.db"
    shutil.copy2(template, clean)
    started = time.monotonic()
    assert run_child(["-c", MIGRATE, str(clean)], home) == 0
    seconds = time.monotonic() - started  # bounds the random kills' delays, never asserted
    rng = random.Random(SEED + 2)
    for run in range(RANDOM_RUNS):
        db = tmp_path / f"run{run}.db"
        shutil.copy2(template, db)
        proc = start_child(["-c", MIGRATE, str(db)], home)
        time.sleep(rng.uniform(0.0, seconds * 1.05))
        proc.kill()
        proc.wait(timeout=600)
        assert_intact(db)
        assert version_and_column(db) in ((BASE, False), (NEXT, True)), f"run {run}"
        assert run_child(["-c", MIGRATE, str(db)], home) == 0
        assert_migrated_once(db, hashes, f"run {run} (seed {SEED + 2})")
