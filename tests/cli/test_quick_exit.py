"""A cold `cortex recall` loads its model while it searches, and ends without the interpreter's
teardown: nothing it prints is lost, exit codes keep their meaning, errors still surface."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from cortex.app import Cortex
from cortex.backends import choose
from cortex.backends.port import Choice
from cortex.cli.main import QUICK_EXIT, cli
from cortex.errors import ModelError

REPO = Path(__file__).resolve().parents[2]


def run_cortex(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cortex", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "CORTEX_EMBEDDER": "none"},
        timeout=120,
        check=False,
    )


@pytest.fixture
def notes(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CORTEX_EMBEDDER", "none")  # as in the child processes: keyword search
    runner = CliRunner()
    for i in range(40):
        text = f"Release checklist item {i}: the staging deploy needs migration number {1000 + i} first"
        done = runner.invoke(cli, ["-C", str(project), "remember", text])
        assert done.exit_code == 0, done.output
    return project


def test_a_quick_exit_loses_no_output(notes: Path) -> None:
    through_exit = run_cortex("-C", str(notes), "recall", "staging deploy migration", "-n", "40", "--json")
    assert through_exit.returncode == 0, through_exit.stderr
    in_process = CliRunner().invoke(
        cli, ["-C", str(notes), "recall", "staging deploy migration", "-n", "40", "--json"]
    )
    assert in_process.exit_code == 0
    # The whole document arrived (it parses) and holds the same results (scores carry the clock).
    child, here = json.loads(through_exit.stdout), json.loads(in_process.stdout)
    assert len(child["hits"]) == 40
    assert [h["memory"]["id"] for h in child["hits"]] == [h["memory"]["id"] for h in here["hits"]]


def test_a_failing_quick_command_keeps_its_exit_code_and_message(notes: Path) -> None:
    missing = run_cortex("-C", str(notes), "get", "ffffffffff")
    assert missing.returncode == 1
    assert "cortex: error:" in missing.stderr
    usage = run_cortex("-C", str(notes), "recall", "-n", "0", "x")
    assert usage.returncode == 2
    assert "Invalid value" in usage.stderr


def test_only_read_only_commands_end_early() -> None:
    assert {"recall", "get", "traverse"} == QUICK_EXIT
    assert not QUICK_EXIT & {"remember", "forget", "supersede", "import", "consolidate", "hook", "mcp"}


def test_the_embedder_loads_on_a_thread_and_is_handed_over(
    cx: Cortex, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded_on: list[str] = []
    chosen: Choice = Choice(None, "a stand-in")

    def fake_choose(settings: object, paths: object, purpose: object) -> Choice:
        loaded_on.append(threading.current_thread().name)
        return chosen

    monkeypatch.setattr(choose, "query_embedder_is_cheap", lambda settings, paths: True)
    monkeypatch.setattr(choose, "choose_embedder", fake_choose)
    cx.start_loading_query_embedder()
    cx.start_loading_query_embedder()  # a second call starts nothing more
    assert cx.query_embedder() is chosen
    assert cx.query_embedder() is chosen
    assert loaded_on == ["cortex-load-embedder"]


def test_a_load_that_fails_on_the_thread_fails_in_the_caller(
    cx: Cortex, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(settings: object, paths: object, purpose: object) -> Choice:
        raise ModelError("the export is corrupt", fix="run `cortex init`")

    monkeypatch.setattr(choose, "query_embedder_is_cheap", lambda settings, paths: True)
    monkeypatch.setattr(choose, "choose_embedder", broken)
    cx.start_loading_query_embedder()
    with pytest.raises(ModelError, match="corrupt"):
        cx.query_embedder()


def test_a_slow_load_is_not_started_early(cx: Cortex, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(choose, "query_embedder_is_cheap", lambda settings, paths: False)

    def load(*args: object) -> Choice:
        calls.append("loaded")
        return Choice(None, "x")

    monkeypatch.setattr(choose, "choose_embedder", load)
    cx.start_loading_query_embedder()
    assert calls == []  # nothing loads until a query needs it, in the caller's own thread
    cx.query_embedder()
    assert calls == ["loaded"]
