"""A damaged environment: corrupt or foreign store files, a full disk, a read-only project, a
broken model. Hooks still exit 0 (within their 10 s timeout) with nothing but their JSON on
stdout, the CLI names the problem and the fix, nothing is overwritten, and a checkpoint can be
restored over a corrupt store with `cortex restore`.

(`tests/test_bad_input.py` covers the CLI and `cortex doctor` on the same damaged stores.)
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path

import pytest

from benchmarks.hooks import _wait_idle
from cortex.core.model import Scope
from cortex.paths import STORE_DIR
from cortex.plugin import hooks
from cortex.store.sqlite.store import Store
from tests.cli.test_bad_input import random_bytes, sqlite_of_another_program
from tests.support.runtime import (
    LAUNCH,
    decision_session,
    memory_count,
    queue_files,
    read_only,
    run_hook,
    stop_payload,
    write_transcript,
)
from tests.support.stress import child_env, cortex_cli, integrity

HOOK_TIMEOUT_S = 10  # hooks.json gives each hook this long
QUEUE = "We chose Postgres advisory locks for the job queue"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def hook_process(
    event: str, payload: Mapping[str, object], env: dict[str, str]
) -> subprocess.CompletedProcess[bytes]:
    """One hook exactly as Claude Code runs it (`python3 -S launch.py EVENT`, JSON on stdin)."""
    return subprocess.run(
        [sys.executable, "-S", str(LAUNCH), event],
        input=json.dumps(payload).encode("utf-8"),
        capture_output=True,
        env=env,
        timeout=HOOK_TIMEOUT_S,
        check=False,
    )


def every_hook(project: Path, transcript: Path, env: dict[str, str]) -> None:
    """Run all five hooks; each exits 0 and prints nothing or one JSON object."""
    stop = stop_payload(project, transcript)
    for event, payload in (
        ("SessionStart", {"session_id": "s", "cwd": str(project), "source": "startup"}),
        ("UserPromptSubmit", {"session_id": "s", "cwd": str(project), "prompt": "advisory locks job queue"}),
        ("Stop", stop),
        ("PreCompact", {**stop, "hook_event_name": "PreCompact", "trigger": "auto"}),
        ("SessionEnd", {**stop, "hook_event_name": "SessionEnd", "reason": "exit"}),
    ):
        done = hook_process(event, payload, env)
        assert done.returncode == 0, (event, done.stderr)
        out = done.stdout.decode("utf-8")
        assert out == "" or isinstance(json.loads(out), dict), (event, out)


def settle(project: Path, env: dict[str, str], says: str) -> str:
    """Let the workers the hooks started (or one started here) meet the store; the log after."""
    log = project / STORE_DIR / "cortex.log"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if not hooks.worker_running(project):
            cmd = [sys.executable, "-m", "cortex.plugin.worker", "--root", str(project)]
            subprocess.run(cmd, env=env, capture_output=True, timeout=60, check=False)
        text = log.read_text(encoding="utf-8") if log.exists() else ""
        if says in text:
            return text
        time.sleep(0.1)
    raise AssertionError(f"the worker never logged {says!r}")


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])


def populated(project: Path, env: dict[str, str]) -> Path:
    """A project store with two memories, checkpointed into its main file (no -wal left)."""
    for text in (QUEUE, "The store runs SQLite in WAL mode"):
        assert cortex_cli(project, "remember", text, env=env).returncode == 0
    db = project / STORE_DIR / "cortex.db"
    store = Store.open(db, Scope.PROJECT)
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    return db


@pytest.mark.parametrize(
    ("spoil", "says"),
    [
        (truncate, "corrupt"),
        (random_bytes, "not an SQLite database"),
        (sqlite_of_another_program, "another program"),
    ],
    ids=["truncated", "random-bytes", "foreign-sqlite"],
)  # fmt: skip
def test_hooks_and_worker_on_a_bad_store_exit_0_and_touch_nothing(
    project: Path, cortex_home: Path, tmp_path: Path, spoil: Callable[[Path], None], says: str
) -> None:
    env = child_env(cortex_home, CORTEX_USER_PROMPT_SUBMIT="1")
    db = populated(project, env) if spoil is truncate else project / STORE_DIR / "cortex.db"
    db.parent.mkdir(exist_ok=True)
    spoil(db)
    before = sha(db)
    transcript = write_transcript(tmp_path / "t.jsonl", decision_session())
    every_hook(project, transcript, env)
    log = settle(project, env, says)
    assert "fix:" in log and sha(db) == before
    assert queue_files(project)  # the work is kept for after the fix
    failed = cortex_cli(project, "remember", "one more fact", env=env)
    assert failed.returncode == 1 and says in failed.stderr and "fix:" in failed.stderr
    assert sha(db) == before


def test_restore_replaces_a_corrupt_store_and_keeps_the_damaged_file(
    project: Path, cortex_home: Path
) -> None:
    env = child_env(cortex_home)
    db = populated(project, env)
    store = Store.open(db, Scope.PROJECT)
    taken = store.write_checkpoint(reason="manual", run="r1", at=datetime.now(UTC))
    store.close()
    truncate(db)
    damaged = db.read_bytes()
    broken = cortex_cli(project, "recall", "advisory locks", env=env)
    assert broken.returncode == 1 and "cortex restore" in broken.stderr
    listed = cortex_cli(project, "restore", "--list", env=env)
    assert listed.returncode == 0 and taken.name in listed.stdout
    restored = cortex_cli(project, "restore", taken.name, "--yes", env=env)
    assert restored.returncode == 0, restored.stderr
    assert "(exact)" in restored.stdout and "moved aside" in restored.stdout
    kept = [p for p in db.parent.glob("cortex.db.damaged-*") if not p.name.endswith(("-wal", "-shm"))]
    assert len(kept) == 1 and kept[0].read_bytes() == damaged  # set aside, never overwritten
    assert integrity(db) == ["ok"] and memory_count(db) == 2
    recall = cortex_cli(project, "recall", "advisory locks", env=env)
    assert recall.returncode == 0 and QUEUE in recall.stdout


FULL_DISK = r"""
import json, os, subprocess, sys
from pathlib import Path
template, mount, launch = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], check=True)
project = mount / "project"
subprocess.run(["cp", "-a", str(template), str(project)], check=True)
fd = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT)
try:
    while True:
        os.write(fd, b"\0" * 4096)
except OSError:
    os.close(fd)
db = project / ".memory" / "cortex.db"
before = db.read_bytes()
run = lambda cmd, stdin=b"": subprocess.run(cmd, input=stdin, capture_output=True, timeout=60)
stop = json.dumps({"session_id": "s", "transcript_path": str(mount / "t.jsonl"), "cwd": str(project)})
start = json.dumps({"session_id": "s", "cwd": str(project), "source": "startup"})
events = (("Stop", stop), ("SessionStart", start))
hooks = [run([sys.executable, "-S", launch, e], p.encode()) for e, p in events]
remember = run([sys.executable, "-m", "cortex", "-C", str(project), "remember", "a fact about the disk"])
status = run([sys.executable, "-m", "cortex", "-C", str(project), "status", "--json"])
unchanged = db.read_bytes() == before
os.remove(mount / "filler")
again = run([sys.executable, "-m", "cortex", "-C", str(project), "remember", "a fact about the disk"])
print(json.dumps({
    "hooks": [(h.returncode, h.stdout.decode()) for h in hooks],
    "remember": [remember.returncode, remember.stderr.decode()],
    "status": [status.returncode, status.stderr.decode()],
    "unchanged": unchanged,
    "again": [again.returncode, again.stderr.decode()],
}))
"""


def test_a_full_disk_fails_writes_cleanly_and_keeps_the_store(
    project: Path, cortex_home: Path, tmp_path: Path
) -> None:
    unshare = shutil.which("unshare")
    probe = subprocess.run([unshare, "-rm", "true"], capture_output=True) if unshare else None
    if unshare is None or probe is None or probe.returncode != 0:
        pytest.skip("a full disk is simulated with a 4 MB tmpfs, which needs `unshare -rm` (user namespaces)")
    env = child_env(cortex_home)
    populated(project, env)
    mount = tmp_path / "small-disk"
    mount.mkdir()
    done = subprocess.run(
        [unshare, "-rm", sys.executable, "-c", FULL_DISK, str(project), str(mount), str(LAUNCH)],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["hooks"] == [[0, ""], [0, got["hooks"][1][1]]]
    assert got["hooks"][1][1] == "" or isinstance(json.loads(got["hooks"][1][1]), dict)
    code, err = got["remember"]
    assert code == 1 and "disk" in err and "full" in err and "fix: free some disk space" in err, err
    assert got["status"][0] == 0 and got["unchanged"], got["status"]  # reads still work
    assert got["again"][0] == 0, got["again"]  # space freed: writes work again


def test_a_read_only_project_keeps_hooks_quiet_and_the_store_unchanged(
    project: Path, cortex_home: Path, tmp_path: Path
) -> None:
    env = child_env(cortex_home, CORTEX_USER_PROMPT_SUBMIT="1")
    db = populated(project, env)
    transcript = write_transcript(tmp_path / "t.jsonl", decision_session())
    before = sha(db)
    with read_only(project, db.parent):
        assert run_hook("Stop", stop_payload(project, transcript)) == ""
        start = run_hook("SessionStart", {"session_id": "s", "cwd": str(project), "source": "startup"})
        assert start == "" or isinstance(json.loads(start), dict)
        assert not hooks.SPAWNED or hooks.wait_for_workers(60)
    assert sha(db) == before and memory_count(db) == 2


def test_a_broken_model_still_captures_and_names_the_fix(
    project: Path, cortex_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tmp_path / "broken-model"
    model.mkdir()
    (model / "config.json").write_text("{not json", encoding="utf-8")
    (model / "model.safetensors").write_bytes(os.urandom(4096))
    (model / "tokenizer.json").write_bytes(b"\x00garbage")
    monkeypatch.setenv("CORTEX_MODEL_PATH", str(model))
    env = child_env(cortex_home, CORTEX_EMBEDDER="local", CORTEX_MODEL_PATH=str(model))
    transcript = write_transcript(tmp_path / "t.jsonl", decision_session())
    every_hook(project, transcript, env)
    _wait_idle(project, timeout_s=120)  # the worker the hooks started: it stores, embeds nothing
    db = project / STORE_DIR / "cortex.db"
    assert memory_count(db) >= 2 and integrity(db) == ["ok"]  # stored, waiting for vectors
    doctor = cortex_cli(project, "doctor", env=env)
    assert doctor.returncode == 1 and "[FAIL] embedding model" in doctor.stdout and "fix:" in doctor.stdout
    recall = cortex_cli(project, "recall", "advisory locks", env=env)
    assert recall.returncode == 0 and "keyword-only" in recall.stdout and "advisory" in recall.stdout
