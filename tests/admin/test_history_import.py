"""`cortex history import`: past sessions from Claude Code's transcript folder, through the real CLI.

The acceptance test copies the shared real sessions into a fake Claude Code config folder
(`CLAUDE_CONFIG_DIR`), imports them, and compares what the store holds with what the worker
stores when the Stop hook queues the same transcripts; a second import adds nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cortex.app import Cortex
from cortex.capture.queue import QueueEntry, write_entry
from cortex.cli.main import cli
from cortex.config import Settings
from cortex.paths import STORE_DIR, WORKER_LOCK, Paths, ensure_store_dir
from cortex.plugin import worker
from cortex.shell.claude_home import encode_project_folder, transcript_folders
from cortex.shell.files import file_lock
from tests.support.runtime import DEMO_TRANSCRIPT

SESSIONS = Path(__file__).resolve().parents[2] / ".." / "shared" / "benchmarks" / "sessions"
needs_sessions = pytest.mark.skipif(
    not SESSIONS.is_dir(), reason=f"the shared real sessions are not at {SESSIONS}"
)
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]


@pytest.fixture(autouse=True)
def keyword_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORTEX_EMBEDDER", "none")


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run([*GIT, "init", "-q", "-b", "main", str(path)], check=True)
    subprocess.run([*GIT, "-C", str(path), "commit", "-q", "--allow-empty", "-m", "init"], check=True)
    return path


def session_id(transcript: Path) -> str:
    with transcript.open("rb") as fh:
        for raw in fh:
            sid = json.loads(raw).get("sessionId")
            if isinstance(sid, str) and sid:
                return sid
    raise AssertionError(f"no sessionId in {transcript}")


def place(config: Path, folder: Path, transcript: Path, sid: str | None = None) -> Path:
    """Copy a transcript where Claude Code keeps the sessions started in `folder`."""
    target = config / "projects" / encode_project_folder(folder) / f"{sid or session_id(transcript)}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(transcript, target)
    return target


def history(project: Path, config: Path, *args: str, home: Path | None = None) -> Result:
    env = {"CLAUDE_CONFIG_DIR": str(config), **({"CORTEX_HOME": str(home)} if home else {})}
    return CliRunner().invoke(
        cli, ["-C", str(project), "history", "import", *args], env=env, catch_exceptions=False
    )


def stored(project: Path, home: Path) -> Counter[tuple[str, str, str, str]]:
    """(store, type, status, content) of every memory in both stores."""
    out: Counter[tuple[str, str, str, str]] = Counter()
    for name, db in (("project", project / STORE_DIR / "cortex.db"), ("global", home / "cortex-global.db")):
        if db.exists():
            with sqlite3.connect(db) as conn:
                out.update((name, *row) for row in conn.execute("SELECT type, status, content FROM memories"))
    return out


def cursors(project: Path) -> dict[str, int]:
    with sqlite3.connect(project / STORE_DIR / "cortex.db") as conn:
        return dict(conn.execute("SELECT session_id, byte_offset FROM cursors"))


@needs_sessions
def test_importing_the_real_sessions_stores_what_the_stop_hook_worker_stores(tmp_path: Path) -> None:
    transcripts = sorted(SESSIONS.glob("*/transcript.jsonl"))
    assert len(transcripts) >= 5
    config = tmp_path / "claude"
    imported, home_a = make_repo(tmp_path / "imported"), tmp_path / "home-a"
    hooked, home_b = make_repo(tmp_path / "hooked"), tmp_path / "home-b"
    placed = [place(config, imported, t) for t in transcripts]

    first = history(imported, config, "--json", home=home_a)
    assert first.exit_code == 0, first.output
    doc = json.loads(first.stdout)
    assert doc["to_read"] == len(placed) and len(doc["sessions"]) == len(placed)
    assert f"[{len(placed)}/{len(placed)}]" in first.stderr  # progress on stderr

    # The Stop hook's path: one queue entry per session, drained by the worker.
    cx = Cortex(Paths(hooked, home_b), Settings(embedder="none"))
    try:
        store_dir = ensure_store_dir(cx.paths)
        for path in placed:
            write_entry(store_dir, QueueEntry("Stop", path.stem, str(path), str(hooked)))
        report = worker.run(hooked, once=True, cx=cx, lag_wait_s=0)
    finally:
        cx.close()
    assert len(report.sessions) == len(placed) and report.failed == 0

    by_import, by_hook = stored(imported, home_a), stored(hooked, home_b)
    assert sum(by_import.values()) > 50
    assert by_import == by_hook
    assert cursors(imported) == cursors(hooked) == {p.stem: p.stat().st_size for p in placed}

    again = history(imported, config, "--json", home=home_a)
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["to_read"] == 0 and json.loads(again.stdout)["sessions"] == []
    assert stored(imported, home_a) == by_import


def test_a_session_the_stop_hook_captured_is_not_read_again(project: Path, tmp_path: Path) -> None:
    config = tmp_path / "claude"
    path = place(config, project, DEMO_TRANSCRIPT, "5e551011-0000-4000-8000-00000000abcd")
    cx = Cortex(Paths(project, Path(os.environ["CORTEX_HOME"])))
    try:
        write_entry(ensure_store_dir(cx.paths), QueueEntry("Stop", path.stem, str(path), str(project)))
        worker.run(project, once=True, cx=cx, lag_wait_s=0)
    finally:
        cx.close()
    before = stored(project, Path(os.environ["CORTEX_HOME"]))
    assert before
    dry = history(project, config, "--dry-run")
    assert dry.exit_code == 0 and "already captured" in dry.stdout and "would read 0 of 1" in dry.stdout
    done = history(project, config)
    assert done.exit_code == 0 and "nothing new" in done.stdout
    assert stored(project, Path(os.environ["CORTEX_HOME"])) == before
    with path.open("a", encoding="utf-8") as fh:  # the session went on after the hook ran
        fh.write(DEMO_TRANSCRIPT.read_text("utf-8").splitlines()[0] + "\n")
    assert "would read 1 of 1" in history(project, config, "--dry-run").stdout


def test_dry_run_says_what_it_would_read_and_stores_nothing(project: Path, tmp_path: Path) -> None:
    config = tmp_path / "claude"
    place(config, project, DEMO_TRANSCRIPT, "5e551011-0000-4000-8000-00000000abcd")
    result = history(project, config, "--dry-run")
    assert result.exit_code == 0, result.output
    assert f"folder: {config / 'projects' / encode_project_folder(project)}" in result.stdout
    assert "5e551011-0000-4000-8000-00000000abcd" in result.stdout and "would read 1 of 1" in result.stdout
    assert not (project / STORE_DIR).exists()
    doc = json.loads(history(project, config, "--dry-run", "--json").stdout)
    assert doc["dry_run"] is True and doc["to_read"] == 1 and doc["sessions"] == []


def test_since_leaves_older_sessions_out(project: Path, tmp_path: Path) -> None:
    config = tmp_path / "claude"
    old = place(config, project, DEMO_TRANSCRIPT, "00000000-0000-4000-8000-000000000001")
    place(config, project, DEMO_TRANSCRIPT, "00000000-0000-4000-8000-000000000002")
    os.utime(old, (1_600_000_000, 1_600_000_000))  # 2020
    doc: dict[str, Any] = json.loads(history(project, config, "--since", "2024-01-01", "--json").stdout)
    assert [s["session_id"] for s in doc["sessions"]] == ["00000000-0000-4000-8000-000000000002"]
    assert doc["skipped_before_since"] == 1


def test_no_sessions_for_this_project_says_where_it_looked(project: Path, tmp_path: Path) -> None:
    result = history(project, tmp_path / "claude")
    assert result.exit_code == 0
    assert (
        "no Claude Code sessions of" in result.stderr
        and str(tmp_path / "claude" / "projects") in result.stderr
    )
    assert "read 0 of 0 transcripts" in result.stdout


def test_sessions_started_in_a_subdirectory_count_only_when_they_ran_inside(
    project: Path, tmp_path: Path
) -> None:
    config = tmp_path / "claude"
    sub = project / "pkg"
    inside = config / "projects" / encode_project_folder(sub)
    inside.mkdir(parents=True)
    (inside / "s1.jsonl").write_text(json.dumps({"type": "user", "cwd": str(sub)}) + "\n", "utf-8")
    sibling = project.parent / f"{project.name}-old"  # encodes with the same prefix
    beside = config / "projects" / encode_project_folder(sibling)
    beside.mkdir(parents=True)
    (beside / "s2.jsonl").write_text(json.dumps({"type": "user", "cwd": str(sibling)}) + "\n", "utf-8")
    assert transcript_folders(config, project) == [inside]


def test_the_import_waits_for_no_running_worker_forever(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cortex.admin import history as hist

    monkeypatch.setattr(hist, "LOCK_WAIT_S", 0.2)
    config = tmp_path / "claude"
    place(config, project, DEMO_TRANSCRIPT, "5e551011-0000-4000-8000-00000000abcd")
    ensure_store_dir(Paths(project, tmp_path))
    with file_lock(project / STORE_DIR / WORKER_LOCK, blocking=False):
        result = history(project, config)
    assert result.exit_code == 1 and "run `cortex history import` again" in result.stderr
