"""SIGKILL at seeded random points of the worker, a consolidation and a migration.

After every kill the store opens, passes `PRAGMA integrity_check`, has a gap-free journal and
keeps every memory committed before the kill; the next run then finishes the interrupted work
exactly once (compared with a clean run that was never killed).
"""

from __future__ import annotations

import functools
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from cortex.app import utcnow
from cortex.core.model import Scope
from cortex.paths import STORE_DIR
from cortex.store.sqlite import checkpoint
from cortex.store.sqlite.store import Store
from tests.plugin.test_worker_kill import fresh_project, sessions, start_worker, wait_for_sessions
from tests.support.runtime import inserts_by_hash, snapshot
from tests.support.stress import child_env, integrity, journal_gaps, nonce_text, query

SEED = 7_2026
RUNS = 20
HASHES_SQL = "SELECT content_hash FROM memories"
STATE_SQL = "SELECT content_hash, status, type FROM memories ORDER BY content_hash, status"


def kill_at_random(
    start: Callable[[], subprocess.Popen[bytes]], rng: random.Random, low_s: float, high_s: float
) -> bool:
    """Start a process, SIGKILL it after a random delay; True when it was still running."""
    proc = start()
    time.sleep(rng.uniform(low_s, high_s))
    alive = proc.poll() is None
    if alive:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    return alive


def timed(start: Callable[[], subprocess.Popen[bytes]]) -> float:
    began = time.monotonic()
    assert start().wait(timeout=600) == 0
    return time.monotonic() - began


def committed_hashes(db: Path) -> set[str]:
    """Content hashes in the store (none when it was killed before its schema committed)."""
    if not db.exists() or not query(db, "SELECT 1 FROM sqlite_master WHERE name = 'memories'"):
        return set()
    return {r[0] for r in query(db, HASHES_SQL)}


def assert_sound(db: Path, committed: set[str]) -> None:
    """Opens, is intact, journal without holes, nothing committed before the kill is gone."""
    Store.open(db, Scope.PROJECT).close()
    assert integrity(db) == ["ok"]
    assert journal_gaps(db) == []
    assert committed <= {r[0] for r in query(db, HASHES_SQL)}


# -- the worker ----------------------------------------------------------------------------------
def test_worker_killed_anywhere_keeps_the_store_sound_and_reruns_once(project: Path, tmp_path: Path) -> None:
    transcripts = sessions(tmp_path / "transcripts")
    clean_project, clean_home = fresh_project(tmp_path / "clean", project, transcripts)
    clean_s = timed(lambda: start_worker(clean_project, clean_home))
    expected = snapshot(clean_project, clean_home)
    rng = random.Random(SEED)
    hits = 0
    for run in range(RUNS):
        base = tmp_path / f"run{run}"
        run_project, run_home = fresh_project(base, project, transcripts)
        db = run_project / STORE_DIR / "cortex.db"

        def start() -> subprocess.Popen[bytes]:
            proc = start_worker(run_project, run_home)  # noqa: B023
            if run % 2:  # noqa: B023  (half the kills land right after some session committed)
                wait_for_sessions(run_project, rng.randrange(1, len(transcripts)), proc)  # noqa: B023
            return proc

        hits += kill_at_random(start, rng, 0.0, clean_s * (0.1 if run % 2 else 1.0))
        committed = committed_hashes(db)
        if db.exists():
            assert_sound(db, committed)
        assert start_worker(run_project, run_home).wait(timeout=600) == 0
        assert snapshot(run_project, run_home) == expected, f"run {run} (seed {SEED})"
        assert set(inserts_by_hash(db).values()) == {1}
        assert_sound(db, committed)
        shutil.rmtree(base)
    assert hits >= RUNS // 2


# -- a consolidation -----------------------------------------------------------------------------
def near_duplicate_store(project: Path, make_memory: Any, pairs: int = 120) -> Path:
    """A store with `pairs` clusters of near-identical memories (past the write gate) and noise."""
    rng = random.Random(SEED)
    db = project / STORE_DIR / "cortex.db"
    db.parent.mkdir(exist_ok=True)
    store = Store.open(db, Scope.PROJECT)
    at = utcnow() - timedelta(days=2)
    try:
        with store.transaction():
            for _ in range(pairs):
                text = nonce_text(rng, 12)
                for variant in (text, text[:-1] + " in production."):
                    store.insert_memory(make_memory(variant, created=at, updated=at), "seed", at)
            for _ in range(pairs):
                store.insert_memory(make_memory(nonce_text(rng, 10), created=at, updated=at), "seed", at)
    finally:
        store.close()
    return db


def consolidation(project: Path, home: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "cortex", "-C", str(project), "consolidate", "--yes", "--json"],
        env=child_env(home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def after_checkpoint(project: Path, home: Path) -> subprocess.Popen[bytes]:
    """A consolidation, returned once it has written a complete checkpoint (or ended)."""
    proc = consolidation(project, home)
    folder = checkpoint.checkpoint_dir(project / STORE_DIR / "cortex.db")
    while proc.poll() is None and not list(folder.glob("*.json")):
        time.sleep(0.001)
    return proc


def test_consolidation_killed_anywhere_is_all_or_nothing_and_reruns_once(
    project: Path, tmp_path: Path, cortex_home: Path, make_memory: Any
) -> None:
    template = tmp_path / "template"
    shutil.copytree(project, template, symlinks=True)
    before = (lambda db: (query(db, STATE_SQL), {r[0] for r in query(db, HASHES_SQL)}))(
        near_duplicate_store(template, make_memory)
    )
    clean = tmp_path / "clean"
    shutil.copytree(template, clean, symlinks=True)
    clean_s = timed(lambda: consolidation(clean, cortex_home))
    clean_db = clean / STORE_DIR / "cortex.db"
    after = query(clean_db, STATE_SQL)
    merges = query(clean_db, "SELECT count(*) FROM journal WHERE op = 'merge'")[0][0]
    assert after != before[0] and merges > 100
    rng = random.Random(SEED + 1)
    hits = between = 0
    for run in range(RUNS):
        work = tmp_path / f"run{run}"
        shutil.copytree(template, work, symlinks=True)
        db = work / STORE_DIR / "cortex.db"
        if run % 2:  # right after its checkpoint is complete: inside the merge transaction
            start = functools.partial(after_checkpoint, work, cortex_home)
            hits += kill_at_random(start, rng, 0.0, 0.05)
        else:  # anywhere: start-up, planning, the checkpoint, the merges, the commit
            start = functools.partial(consolidation, work, cortex_home)
            hits += kill_at_random(start, rng, 0.2, clean_s * 1.05)
        assert_sound(db, before[1])
        state = query(db, STATE_SQL)
        assert state in (before[0], after), f"run {run}: a half-applied consolidation"
        for cp in checkpoint.list_checkpoints(db):  # only complete checkpoints are listed
            assert integrity(cp.path) == ["ok"]
        between += state == before[0] and bool(checkpoint.list_checkpoints(db))
        assert consolidation(work, cortex_home).wait(timeout=600) == 0
        assert query(db, STATE_SQL) == after
        assert query(db, "SELECT count(*) FROM journal WHERE op = 'merge'")[0][0] == merges
        assert_sound(db, before[1])
        shutil.rmtree(work)
    assert hits >= RUNS // 2
    print(f"{hits} kills of a running consolidation, {between} after its checkpoint, before its commit")


# -- a migration ---------------------------------------------------------------------------------
# cortex has one schema version so far: the child adds a slow second migration, as a future
# release would, and the kill lands anywhere in opening the store.
MIGRATE = """
import sys
from pathlib import Path
from cortex.store.sqlite import migrations

def m002_stress(conn):
    conn.execute("ALTER TABLE memories ADD COLUMN stress_note TEXT")
    for _ in range(20):
        conn.execute("UPDATE memories SET stress_note = content || coalesce(stress_note, '')")
    conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
    conn.execute("INSERT INTO journal (at, actor, op, payload) VALUES ('now', 'migration', 'm002', '{}')")

migrations.MIGRATIONS = (*migrations.MIGRATIONS, m002_stress)
migrations.LATEST_VERSION = len(migrations.MIGRATIONS)
from cortex.core.model import Scope
from cortex.store.sqlite.store import Store
Store.open(Path(sys.argv[1]), Scope.PROJECT).close()
"""


def migration(db: Path, home: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", MIGRATE, str(db)],
        env=child_env(home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_migration_killed_anywhere_is_all_or_nothing_and_reruns_once(
    project: Path, tmp_path: Path, cortex_home: Path, make_memory: Any
) -> None:
    template = near_duplicate_store(project, make_memory, pairs=800)
    hashes = {r[0] for r in query(template, HASHES_SQL)}
    clean = tmp_path / "clean.db"
    shutil.copy2(template, clean)
    clean_s = timed(lambda: migration(clean, cortex_home))
    assert query(clean, "PRAGMA user_version") == [(2,)]
    rng = random.Random(SEED + 2)
    hits = upgraded = 0
    for run in range(RUNS):
        db = tmp_path / f"run{run}.db"
        shutil.copy2(template, db)
        hits += kill_at_random(lambda: migration(db, cortex_home), rng, 0.1, clean_s * 1.05)  # noqa: B023
        assert integrity(db) == ["ok"] and journal_gaps(db) == []
        version = query(db, "PRAGMA user_version")[0][0]
        columns = {r[1] for r in query(db, "PRAGMA table_info(memories)")}
        assert (version, "stress_note" in columns) in ((1, False), (2, True)), f"run {run}"
        upgraded += version == 2
        assert migration(db, cortex_home).wait(timeout=600) == 0
        assert query(db, "PRAGMA user_version") == [(2,)]
        assert query(db, "SELECT count(*) FROM journal WHERE op = 'm002'") == [(1,)]
        assert {r[0] for r in query(db, HASHES_SQL)} == hashes and integrity(db) == ["ok"]
        for suffix in ("", "-wal", "-shm"):
            db.with_name(db.name + suffix).unlink(missing_ok=True)
    assert hits >= RUNS // 2
    print(f"{hits} kills of a running migration; {upgraded} had already committed it")
