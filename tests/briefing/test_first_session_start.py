"""SessionStart always delivers: with no cached briefing, the hook renders one (or its global part).

Every case runs through the real hook entry (`cortex.plugin.hooks.main`, and once as a new
process through `hooks/launch.py`), on real stores; the render it queues runs as the real
detached process and leaves a cache the next session reads.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cortex.app import Cortex
from cortex.briefing import first_render, session_start
from cortex.briefing.deliver import refresh_briefing
from cortex.capture.manual import remember
from cortex.cli.main import cli
from cortex.core.model import Scope, Source
from cortex.paths import RULES_FILE, STORE_DIR, Paths
from cortex.plugin import hooks
from cortex.shell.briefing_files import read_cache
from cortex.store.memory_rows import COLUMNS, memory_to_row, row_to_memory
from cortex.store.sqlite import hook_read
from tests.support.runtime import DEMO_TRANSCRIPT, LAUNCH, REPO, run_hook
from tests.test_architecture import HOOK_FORBIDDEN, top_level

WAL = "We chose SQLite WAL mode because several sessions write at once"
TABS = "The user prefers tabs over spaces in every project"
PROGRESS = "Progress: half of the job runner moved to advisory locks"


@pytest.fixture(autouse=True)
def quiet_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No model in spawned processes; the hooks take the project from the payload."""
    monkeypatch.setenv("CORTEX_EMBEDDER", "none")
    monkeypatch.delenv("CLAUDE_PLUGIN_DATA", raising=False)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    monkeypatch.delenv("CORTEX_PYTHON", raising=False)


def start(project: Path, cwd: Path | None = None) -> str | None:
    """Run the SessionStart hook; the context it added (None when none), after its render ran."""
    payload = {"session_id": "s-next", "cwd": str(cwd or project), "source": "startup"}
    out = run_hook("SessionStart", payload)
    assert hooks.wait_for_workers(120), "the queued briefing render did not finish"
    if not out.strip():
        return None
    doc = json.loads(out)
    assert doc["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    text = doc["hookSpecificOutput"]["additionalContext"]
    assert isinstance(text, str) and 0 < len(text) <= 9_500
    return text


def caches(project: Path) -> list[Path]:
    folder = project / STORE_DIR / "briefing"
    return sorted(p for p in folder.glob("*.json") if p.name != "stable.json") if folder.is_dir() else []


def first_turn(project: Path, tmp_path: Path) -> None:
    """One turn of the session: the Stop hook queues it and the worker captures and re-renders."""
    transcript = tmp_path / "turn.jsonl"
    transcript.write_text(DEMO_TRANSCRIPT.read_text("utf-8"), "utf-8")
    payload = {"session_id": "s-next", "transcript_path": str(transcript), "cwd": str(project)}
    run_hook("Stop", {**payload, "hook_event_name": "Stop", "last_assistant_message": ""})
    assert hooks.wait_for_workers(120), "the worker did not finish"


def test_a_new_project_with_only_global_memories_gets_them(cx: Cortex, project: Path, tmp_path: Path) -> None:
    remember(cx, TABS, mem_type="preference", scope=Scope.GLOBAL)
    assert not (project / STORE_DIR / "cortex.db").exists()
    text = start(project)
    assert text is not None and TABS in text and "part=full" in text
    assert not (project / STORE_DIR).exists() and hooks.SPAWNED == []  # the hook wrote nothing
    # After the first turn the worker has cached the briefing: the rules file carries the
    # stable part (global preferences included), so the next session gets no second copy.
    first_turn(project, tmp_path)
    assert caches(project)
    assert TABS in (project / RULES_FILE).read_text("utf-8")
    again = start(project)
    assert again is None or (again.startswith("<!-- cortex:briefing part=moment") and TABS not in again)


def test_right_after_cortex_import_the_imported_memories_arrive(
    cx: Cortex, project: Path, tmp_path: Path
) -> None:
    remember(cx, WAL, mem_type="decision")
    remember(cx, PROGRESS, mem_type="progress")
    dump = tmp_path / "export.jsonl"
    runner = CliRunner()
    assert runner.invoke(cli, ["-C", str(project), "export", "-o", str(dump)]).exit_code == 0
    other = tmp_path / "other"
    other.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(other)], check=True)
    done = runner.invoke(cli, ["-C", str(other), "import", str(dump)])
    assert done.exit_code == 0, done.output
    assert not caches(other)
    text = start(other)
    assert text is not None and WAL in text and PROGRESS in text and "part=full" in text
    assert not caches(other)  # rendered in the hook, cached by the worker after the first turn


def test_a_new_branch_gets_its_moment_part(cx: Cortex, project: Path) -> None:
    remember(cx, WAL, mem_type="decision")
    remember(cx, PROGRESS, mem_type="progress")
    refresh_briefing(cx)
    subprocess.run(["git", "-C", str(project), "checkout", "-q", "-b", "feat/new"], check=True)
    assert read_cache(cx.paths.briefing_dir, "feat/new", "") is None
    text = start(project)
    # The rules file carries the stable part; the hook renders this branch's moment part.
    assert text is not None and "part=moment" in text and "on branch feat/new" in text
    assert PROGRESS in text and WAL not in text


def test_the_first_session_after_turning_the_file_channel_off(cx: Cortex, project: Path) -> None:
    remember(cx, WAL, mem_type="decision")
    refresh_briefing(cx)
    assert WAL in (project / RULES_FILE).read_text("utf-8")
    # The user turns the file channel off; no worker has run since, so every cache still says
    # the rules file carries the stable part.
    (project / STORE_DIR / "config.toml").write_text("briefing_file = false\n", "utf-8")
    for cache in caches(project):
        cache.unlink()
    text = start(project)
    assert text is not None and WAL in text and "part=full" in text
    # The worker's next render honours the setting: the block goes, the next session still
    # gets the full briefing (now from the cache).
    with Cortex(cx.paths) as fresh:
        refresh_briefing(fresh)
    assert not (project / RULES_FILE).exists() and caches(project)
    again = start(project)
    assert again is not None and WAL in again and "part=full" in again


def test_a_store_too_big_for_the_hook_gets_the_global_and_cached_stable_parts(
    cx: Cortex, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remember(cx, WAL, mem_type="decision")
    remember(cx, TABS, mem_type="preference", scope=Scope.GLOBAL)
    refresh_briefing(cx)
    (project / RULES_FILE).unlink()
    subprocess.run(["git", "-C", str(project), "checkout", "-q", "-b", "feat/big"], check=True)
    remember(cx, "We keep one queue table per tenant", mem_type="decision")  # not in any cache yet
    monkeypatch.setattr(session_start, "INLINE_MAX_MEMORIES", 1)
    text = start(project)
    assert text is not None
    assert WAL in text and TABS in text  # main's cached stable part (it holds the preference)
    assert text.count(TABS) == 1  # the global part leaves out what the stable part shows
    assert "one queue table per tenant" not in text  # the project part was not rendered here
    assert read_cache(cx.paths.briefing_dir, "feat/big", "") is not None  # the render was queued


def test_no_memories_anywhere_adds_nothing_and_queues_nothing(project: Path) -> None:
    assert start(project) is None
    assert not (project / STORE_DIR).exists()
    assert hooks.SPAWNED == []


def test_the_hook_process_renders_without_heavy_imports(cx: Cortex, project: Path) -> None:
    remember(cx, WAL, mem_type="decision")
    code = (
        "import io, json, sys\n"
        "from cortex.plugin import hooks\n"
        "out = io.StringIO()\n"
        "hooks.main('SessionStart', io.BytesIO(sys.argv[1].encode()), out)\n"
        "hooks.wait_for_workers(120)\n"
        "print(json.dumps({'out': out.getvalue(), 'loaded': sorted(sys.modules)}))\n"
    )
    payload = json.dumps({"source": "startup", "cwd": str(project), "session_id": "s"})
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code, payload], capture_output=True, text=True, check=True, env=env, cwd=REPO
    )
    result = json.loads(done.stdout)
    assert WAL in json.loads(result["out"])["hookSpecificOutput"]["additionalContext"]
    loaded = set(result["loaded"])
    assert not top_level(loaded) & set(HOOK_FORBIDDEN), sorted(top_level(loaded) & set(HOOK_FORBIDDEN))
    assert "cortex.app" not in loaded and "cortex.store.sqlite.connection" not in loaded


def test_the_launcher_delivers_a_first_briefing(cx: Cortex, project: Path) -> None:
    remember(cx, WAL, mem_type="decision")
    payload = json.dumps({"source": "startup", "cwd": str(project), "session_id": "s"})
    done = subprocess.run(
        [sys.executable, "-S", str(LAUNCH), "SessionStart"],
        input=payload,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ},
        cwd=project,
        timeout=60,
    )
    assert WAL in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


def test_the_hook_read_columns_are_the_codec_columns_a_briefing_reads() -> None:
    # The codec's columns start with them; after them come only columns of later schemas.
    assert COLUMNS.startswith(hook_read.BRIEFING_COLUMNS + ", ")
    assert COLUMNS[len(hook_read.BRIEFING_COLUMNS) :] == ", source_time, source_record"


def test_the_hook_renders_a_store_no_process_has_migrated_yet(cx: Cortex, project: Path) -> None:
    remember(cx, WAL, mem_type="decision", tags=("db", "wal"))
    db = Paths(project, cx.paths.home).project_db
    with sqlite3.connect(db) as conn:  # as a store of schema 4 has it
        conn.execute("ALTER TABLE memories DROP COLUMN source_time")
        conn.execute("ALTER TABLE memories DROP COLUMN source_record")
        conn.execute("PRAGMA user_version = 4")
    rows = hook_read.read_briefed_rows(db)
    assert [first_render.row_to_memory(r).content for r in rows] == [WAL]


def test_the_hook_decoder_reads_rows_as_the_store_does(cx: Cortex, project: Path) -> None:
    remember(cx, WAL, mem_type="decision", tags=("db", "wal"))
    remember(cx, TABS, mem_type="preference", pin=True)
    db = Paths(project, cx.paths.home).project_db
    with sqlite3.connect(db) as conn:
        rows: list[Any] = list(conn.execute(f"SELECT {COLUMNS} FROM memories"))
    assert rows and [first_render.row_to_memory(r) for r in rows] == [row_to_memory(r) for r in rows]
    # A captured note has a time it was said, which the briefing does not read.
    said = datetime(2026, 6, 24, 22, 33, 28, tzinfo=UTC)
    stored = replace(row_to_memory(rows[0]), source=Source(session_id="s1", said_at=said, record="u7"))
    row = memory_to_row(stored)
    assert row_to_memory(row) == stored
    assert first_render.row_to_memory(row) == replace(stored, source=Source(session_id="s1"))


def test_a_big_project_store_alone_is_left_to_the_queued_render(
    cx: Cortex, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remember(cx, WAL, mem_type="decision")
    remember(cx, PROGRESS, mem_type="progress")
    refresh_briefing(cx)
    subprocess.run(["git", "-C", str(project), "checkout", "-q", "-b", "feat/big"], check=True)
    monkeypatch.setattr(session_start, "INLINE_MAX_MEMORIES", 1)
    assert start(project) is None  # the rules file carries the stable part; nothing renders here
    assert read_cache(cx.paths.briefing_dir, "feat/big", "") is not None
    monkeypatch.setattr(session_start, "INLINE_MAX_MEMORIES", 500)
    text = start(project)  # the next session reads the cache the render left
    assert text is not None and PROGRESS in text and "on branch feat/big" in text


def test_the_hook_count_stops_at_its_cap(cx: Cortex, project: Path) -> None:
    for i in range(5):
        remember(cx, f"{WAL} (note {i} of five)", mem_type="decision")
    remember(cx, "def f(): return 1", mem_type="code")  # raw code is never briefed
    db = Paths(project, cx.paths.home).project_db
    assert hook_read.count_briefed(db) == 5
    assert hook_read.count_briefed(db, cap=3) == 3  # enough to know the store is over the cap
    assert hook_read.count_briefed(db, cap=9) == 5
