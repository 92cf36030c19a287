"""Nine processes on one project at once: nothing lost, nothing twice, never "database is locked".

Three Claude Code sessions append turns and fire the Stop hook (which starts detached workers),
two `cortex remember` loops, a `cortex recall` loop, a lifecycle tick + `rebuild --verify` loop
and a `cortex consolidate` loop all run together against one project store seeded with
near-duplicates (so consolidation really merges and checkpoints while others write).
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path

from benchmarks.hooks import _wait_idle
from cortex.app import utcnow
from cortex.core.model import Scope
from cortex.paths import STORE_DIR
from cortex.store.sqlite.store import Store
from tests.support.runtime import REPO, inserts_by_hash, queue_files
from tests.support.stress import child_env, cortex_cli, integrity, journal_gaps, query, read_records

SECONDS = 10.0
# Each actor runs for SECONDS and at least MIN_OPS operations, so the counts asserted below do
# not depend on how fast a loaded machine gets through them.
MIN_OPS = {"session": 3, "remember": 10, "recall": 1, "lifecycle": 2, "consolidate": 1}
ACTORS = (
    ("session", "session-a"),
    ("session", "session-b"),
    ("session", "session-c"),
    ("remember", "remember-1"),
    ("remember", "remember-2"),
    ("recall", "recall"),
    ("lifecycle", "lifecycle"),
    ("consolidate", "consolidate"),
)
NEAR_DUPLICATES = (
    "The billing webhook retries failed charges three times with exponential backoff",
    "The search indexer rebuilds the product catalogue every night at two in the morning",
    "The deploy script tags the docker image with the short git commit hash",
)


def seed_near_duplicates(project: Path, make_memory: object) -> None:
    """Pairs of near-identical memories written past the gate, for consolidation to merge."""
    store = Store.open(project / STORE_DIR / "cortex.db", Scope.PROJECT)
    now = utcnow() - timedelta(days=1)
    try:
        with store.transaction():
            for text in NEAR_DUPLICATES:
                for variant in (text, text + " in production"):
                    store.insert_memory(make_memory(variant, created=now, updated=now), "seed", now)  # type: ignore[operator]
    finally:
        store.close()


def test_eight_actors_at_once_lose_nothing_and_never_lock(
    project: Path, cortex_home: Path, tmp_path: Path, make_memory: object
) -> None:
    env = child_env(cortex_home, CORTEX_LOG_LEVEL="INFO")
    assert cortex_cli(project, "remember", "The store runs in WAL mode", env=env).returncode == 0
    seed_near_duplicates(project, make_memory)
    out = tmp_path / "records"
    out.mkdir()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.support.stress",
                actor,
                "--project",
                str(project),
                "--out",
                str(out),
                "--seconds",
                str(SECONDS),
                "--seed",
                str(seed),
                "--name",
                name,
                "--min-ops",
                str(MIN_OPS[actor]),
            ],
            env=env,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for seed, (actor, name) in enumerate(ACTORS)
    ]
    outputs = [p.communicate(timeout=300)[0].decode("utf-8", "replace") for p in procs]
    assert [p.returncode for p in procs] == [0] * len(ACTORS), outputs
    records = read_records(out)
    failed = [r for r in records if not r["ok"] or "locked" in r.get("output", "").lower()]
    assert failed == []
    _wait_idle(project, timeout_s=240)  # the detached workers drain what the sessions queued
    assert queue_files(project) == []
    by_cmd = Counter(r["cmd"] for r in records)
    assert min(by_cmd[c] for c in ("Stop", "remember", "recall", "lifecycle", "consolidate", "rebuild")) >= 1
    assert by_cmd["remember"] >= 2 * MIN_OPS["remember"] and by_cmd["Stop"] >= 3 * MIN_OPS["session"], by_cmd
    print(f"operations acknowledged by {len(ACTORS)} actors: {dict(by_cmd)}")

    db = project / STORE_DIR / "cortex.db"
    inserts = inserts_by_hash(db)
    # Every acknowledged `cortex remember`: stored once, still there with its text.
    for r in (r for r in records if r["cmd"] == "remember"):
        assert r["action"] == "stored", r
        rows = query(db, "SELECT content, content_hash, status FROM memories WHERE id = ?", (r["id"],))
        assert len(rows) == 1 and rows[0][0] == r["text"] and rows[0][2] == "active", r
        assert inserts[rows[0][1]] == 1
    # Every turn a Stop hook acknowledged: extracted exactly once.
    for r in (r for r in records if r["cmd"] == "Stop"):
        rows = query(db, "SELECT content_hash FROM memories WHERE content LIKE ?", (f"%{r['tag']}%",))
        assert len(rows) == 1 and inserts[rows[0][0]] == 1, r
    sizes = {p.stem: p.stat().st_size for p in (project.parent / "transcripts").glob("*.jsonl")}
    cursors = dict(query(db, "SELECT session_id, byte_offset FROM cursors"))
    assert cursors == sizes

    merged = query(db, "SELECT count(*) FROM journal WHERE op = 'merge' AND memory_id IS NULL")[0][0]
    assert merged == len(NEAR_DUPLICATES)  # each seeded pair merged once, not once per run
    assert list((db.parent / "checkpoints").glob("*consolidate.db"))
    assert journal_gaps(db) == []
    assert integrity(db) == ["ok"]
    log = (project / STORE_DIR / "cortex.log").read_text(encoding="utf-8")
    assert "locked" not in log.lower() and " ERROR " not in log
    verify = cortex_cli(project, "rebuild", "--verify", env=env)
    assert verify.returncode == 0 and "(same)" in verify.stdout, verify.stdout + verify.stderr
