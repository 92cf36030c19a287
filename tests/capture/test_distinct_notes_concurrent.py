"""80 distinct notes that differ only in numbers, written by 8 processes at once, leave 80 memories."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cortex.app import Cortex
from cortex.core.model import Scope, Status
from cortex.paths import resolve_paths
from tests.support.stress import child_env

WORKERS = 8
NOTES = 10

CHILD = r"""
import json, sys, time
from pathlib import Path
from cortex.app import Cortex
from cortex.capture import manual

project, worker, go = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
cx = Cortex.for_cwd(project)
while not go.exists():  # a start line: every process is up before the first write
    time.sleep(0.01)
for n in range(1, NOTES + 1):
    text = f"worker {worker} note {n}: unique fact number {worker}-{n} about shard {worker}{n:02d}"
    out = manual.remember(cx, text, mem_type="context")
    print(json.dumps({"text": text, "action": out.action.value, "id": out.memory.id}), flush=True)
cx.close()
""".replace("NOTES", str(NOTES))


def note(worker: int, n: int) -> str:
    return f"worker {worker} note {n}: unique fact number {worker}-{n} about shard {worker}{n:02d}"


@pytest.mark.slow
def test_eight_processes_writing_distinct_notes_leave_every_note(project: Path, tmp_path: Path) -> None:
    env = child_env(tmp_path / "home")
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, str(project), str(w), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for w in range(1, WORKERS + 1)
    ]
    go.touch()
    replies = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        replies.extend(json.loads(line) for line in out.splitlines())
    assert len(replies) == WORKERS * NOTES
    assert {r["action"] for r in replies} == {"stored"}, [r for r in replies if r["action"] != "stored"]
    cx = Cortex(resolve_paths(project))
    try:
        store = cx.store(Scope.PROJECT, create=False)
        assert store is not None
        stored = [m for m in store.all_memories() if m.status is Status.ACTIVE]
        expected = {note(w, n) for w in range(1, WORKERS + 1) for n in range(1, NOTES + 1)}
        assert len(stored) == WORKERS * NOTES
        assert {m.content for m in stored} == expected
    finally:
        cx.close()


def test_the_same_notes_written_one_by_one_leave_every_note(project: Path) -> None:
    from cortex.capture import manual

    cx = Cortex(resolve_paths(project))
    try:
        for w in range(1, WORKERS + 1):
            for n in range(1, NOTES + 1):
                manual.remember(cx, note(w, n), mem_type="context")
        store = cx.store(Scope.PROJECT, create=False)
        assert store is not None
        assert store.count_active() == WORKERS * NOTES
    finally:
        cx.close()
