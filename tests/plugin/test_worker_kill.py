"""kill -9 the worker at random points (seeded), rerun it, and compare with one clean run."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cortex.paths import STORE_DIR
from tests.support.runtime import (
    DEMO_TRANSCRIPT,
    REPO,
    decision_session,
    inserts_by_hash,
    queue_files,
    queue_stop,
    snapshot,
    user_record,
    write_transcript,
)
from tests.support.transcript_builders import FIXTURES

SEED = 20261121
KILLS = 40
FIXTURE_SESSIONS = (
    "spotter/short.jsonl",
    "spotter/tool_heavy.jsonl",
    "fasthooks/sample_main_transcript.jsonl",
    "generated/cc-2.1.330-mock-api-session.jsonl",
)
QUIET = {
    "CORTEX_EMBEDDER": "none",
    "CORTEX_CONSOLIDATE_EVERY": "100000",  # merging depends on how often the tick ran
    "CORTEX_CONSOLIDATE_ACTIVE_OVER": "100000",
}


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


def start_worker(project: Path, home: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, **QUIET, "CORTEX_HOME": str(home), "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "cortex.plugin.worker", "--root", str(project)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def wait_for_sessions(project: Path, count: int, proc: subprocess.Popen[bytes]) -> None:
    """Until the worker has logged `count` captured sessions (it logs each after its commit)."""
    log = project / STORE_DIR / "cortex.log"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        text = log.read_text(encoding="utf-8") if log.exists() else ""
        if text.count("cortex.plugin.worker INFO session ") >= count:
            return
        time.sleep(0.002)


def finish(project: Path, home: Path) -> None:
    proc = start_worker(project, home)
    assert proc.wait(timeout=600) == 0
    assert queue_files(project) == []


@pytest.mark.slow
def test_kill_9_at_random_points_then_rerun_extracts_every_line_exactly_once(
    tmp_path: Path, project: Path
) -> None:
    transcripts = sessions(tmp_path / "transcripts")
    assert len(transcripts) >= 2  # the real fixtures join these two when ../shared is present
    clean_project, clean_home = fresh_project(tmp_path / "clean", project, transcripts)
    started = time.monotonic()
    finish(clean_project, clean_home)
    clean_s = time.monotonic() - started
    expected = snapshot(clean_project, clean_home)
    assert expected["project"] and len(expected["project"]["memories"]) >= 8
    assert expected["global"] and len(expected["global"]["memories"]) == 1

    idle = tmp_path / "idle"
    shutil.copytree(project, idle, symlinks=True)
    started = time.monotonic()
    finish(idle, clean_home)  # nothing queued: what starting up and exiting costs
    startup_s = time.monotonic() - started

    rng = random.Random(SEED)
    killed_mid_run = partial = 0
    for run in range(KILLS):
        base = tmp_path / f"run{run}"
        run_project, run_home = fresh_project(base, project, transcripts)
        for attempt in range(1 + (run % 3 == 0)):  # every third run is killed twice
            proc = start_worker(run_project, run_home)
            if run % 2 == 0 and attempt == 0:
                # Right after the k-th session committed: inside the next session's work.
                after = rng.randrange(1, len(transcripts))
                wait_for_sessions(run_project, after, proc)
                time.sleep(rng.uniform(0.0, 0.05))
            else:  # anywhere: start-up, extraction, a transaction, the briefing ...
                time.sleep(rng.uniform(startup_s * 0.5, max(clean_s * 1.05, startup_s)))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                killed_mid_run += 1
            proc.wait(timeout=60)
        if 0 < len(queue_files(run_project)) < len(transcripts):
            partial += 1  # killed between commits: some sessions stored, the rest still queued
        finish(run_project, run_home)
        got = snapshot(run_project, run_home)
        assert got == expected, f"run {run} (seed {SEED}) differs from the clean run"
        counts = inserts_by_hash(run_project / STORE_DIR / "cortex.db")
        assert set(counts.values()) == {1}, f"run {run}: a memory was inserted twice"
        shutil.rmtree(base)
    assert killed_mid_run >= KILLS // 2  # most kills really hit a running worker
    assert partial >= KILLS // 5, f"only {partial} runs were killed between two commits"
    print(f"{killed_mid_run} kills of a running worker, {partial} between two commits")
