"""kill -9 the worker at every crash point, rerun it, and compare with one run never killed.

Each scenario arms one failpoint (or several, one per run) and asserts the worker really died
there (-SIGKILL): so every step boundary of a capture is crashed at deterministically, however
loaded the machine. After each kill the store passes SQLite's integrity check with a gap-free
journal and keeps everything committed before the kill; a rerun without failpoint then ends
with the same memories, edges and cursors as the clean run, each memory inserted exactly once
and the queue empty. A short seeded run of kills at random moments checks the same outcome and
never where the kills landed.
"""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.crash import (
    KILLED,
    SESSION_COUNT,
    assert_intact,
    committed_hashes,
    fresh_project,
    git_project,
    project_db,
    run_child,
    sessions,
    start_child,
    worker_args,
)
from tests.support.runtime import inserts_by_hash, queue_files, snapshot

N = SESSION_COUNT  # one chunk per session: per-session points are hit N times a run
# A spec per run: `name` is its first hit, `name:K` its K-th; a tuple kills one run per spec.
WORKER_POINTS: tuple[str | tuple[str, ...], ...] = (
    "migrate.before_commit",  # the project store's schema, on first open
    "migrate.after_commit",
    "capture.after_extract",
    f"capture.after_extract:{N}",
    "capture.after_global_commit",  # the `mixed` session: global written, project not yet
    "capture.after_chunk_commit",
    f"capture.after_chunk_commit:{N}",
    "worker.before_queue_delete",
    f"worker.before_queue_delete:{N}",
    "worker.after_queue_delete:2",
    "worker.before_lifecycle",
    "lifecycle.after_count",
    "worker.before_briefing",
    "worker.after_briefing",
    "store.before_commit",
    "store.before_commit:4",
    "store.after_commit:3",
    f"store.after_commit:{N + 3}",
    # killed twice before the run that finishes
    ("capture.after_chunk_commit:2", "capture.after_extract"),
    ("worker.before_queue_delete:3", "store.before_commit:2", "worker.before_lifecycle"),
)
RANDOM_RUNS = 8
SEED = 20261121

pytestmark = pytest.mark.slow  # dozens of worker processes


@dataclass(frozen=True)
class Clean:
    """The template project, the sessions every run queues, and what one unkilled run stores."""

    template: Path
    transcripts: list[tuple[str, Path]]
    expected: dict[str, Any]
    seconds: float


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clean]:
    base = tmp_path_factory.mktemp("worker-kill")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CORTEX_HOME", str(base / "hook-home"))  # the in-process Stop hooks' home
        template = git_project(base / "template")
        transcripts = sessions(base / "transcripts")
        project, home = fresh_project(base / "clean", template, transcripts)
        started = time.monotonic()
        assert run_child(worker_args(project), home) == 0
        seconds = time.monotonic() - started  # bounds the random kills' delays, never asserted
        assert queue_files(project) == []
        expected = snapshot(project, home)
    yield Clean(template, transcripts, expected, seconds)
    shutil.rmtree(base, ignore_errors=True)


def test_the_clean_run_stores_project_and_global_memories(clean: Clean) -> None:
    assert clean.expected["project"] and len(clean.expected["project"]["memories"]) >= 8
    assert clean.expected["global"] and len(clean.expected["global"]["memories"]) == 1


def assert_same_as_clean(project: Path, home: Path, clean: Clean, committed: set[str], what: str) -> None:
    assert queue_files(project) == [], what
    assert snapshot(project, home) == clean.expected, f"{what}: differs from the clean run"
    db = project_db(project)
    assert set(inserts_by_hash(db).values()) == {1}, f"{what}: a memory was inserted twice"
    assert_intact(db)
    assert committed <= committed_hashes(db), f"{what}: lost a memory committed before a kill"


@pytest.mark.parametrize("specs", WORKER_POINTS, ids=lambda s: "+".join(s) if isinstance(s, tuple) else s)
def test_kill_9_at_a_crash_point_then_rerun_extracts_every_line_exactly_once(
    clean: Clean, tmp_path: Path, specs: str | tuple[str, ...]
) -> None:
    project, home = fresh_project(tmp_path, clean.template, clean.transcripts)
    db = project_db(project)
    committed: set[str] = set()
    for spec in (specs,) if isinstance(specs, str) else specs:
        assert run_child(worker_args(project), home, spec) == KILLED, f"{spec} was never reached"
        assert_intact(db)
        after = committed_hashes(db)
        assert committed <= after, f"{spec}: lost a memory committed before the kill"
        committed = after
    assert run_child(worker_args(project), home) == 0
    assert_same_as_clean(project, home, clean, committed, str(specs))


def test_kill_9_at_random_moments_then_rerun_extracts_every_line_exactly_once(
    clean: Clean, tmp_path: Path
) -> None:
    """Kills land anywhere (start-up, inside SQLite, between steps); only the outcome counts."""
    rng = random.Random(SEED)
    for run in range(RANDOM_RUNS):
        base = tmp_path / f"run{run}"
        project, home = fresh_project(base, clean.template, clean.transcripts)
        proc = start_child(worker_args(project), home)
        time.sleep(rng.uniform(0.0, clean.seconds * 1.05))
        proc.kill()  # SIGKILL, or nothing when it already finished
        proc.wait(timeout=600)
        db = project_db(project)
        assert_intact(db)
        committed = committed_hashes(db)
        assert run_child(worker_args(project), home) == 0
        assert_same_as_clean(project, home, clean, committed, f"run {run} (seed {SEED})")
        shutil.rmtree(base)
