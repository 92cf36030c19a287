"""The team store goes away mid-run and comes back (its own PostgreSQL server, or the SQLite
stand-in's folder): hooks still answer, recall answers from the local stores and says so,
shares wait in the project store and arrive once the worker runs with the server back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cortex.admin.team_check import team_check
from cortex.briefing.deliver import refresh_briefing, render_current
from cortex.capture.manual import remember
from cortex.cli.main import cli
from cortex.core.briefing.compose import BriefingPart
from cortex.core.model import Scope
from cortex.core.output.documents import recall_to_dict
from cortex.core.recall.decide import RecallRequest
from cortex.recall.search import recall, render_result
from cortex.team.push import pending_count
from cortex.team.share import share
from tests.support.runtime import REPO, queue_stop, run_hook, write_transcript
from tests.support.team import TEAM_BACKENDS, Developer, Switchable, make_team

FIRST = "The job queue uses PostgreSQL advisory locks instead of Redis: one less service to run"
SECOND = "Gotcha: the payment webhook must answer within 5 seconds or the provider retries it"


@pytest.fixture(autouse=True)
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORTEX_EMBEDDER", "none")


@pytest.fixture(params=TEAM_BACKENDS)
def switchable(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Switchable]:
    store = Switchable(str(request.param), tmp_path / "team-server")
    try:
        yield store
    finally:
        store.close()


def briefing(dev: Developer) -> str:
    with dev.cortex() as cx:
        return render_current(cx).parts[BriefingPart.FULL].text


def context_of(out: str) -> str:
    return str(json.loads(out)["hookSpecificOutput"]["additionalContext"]) if out else ""


def pending(dev: Developer) -> int:
    with dev.cortex() as cx:
        key = cx.team().key
        assert key is not None
        return pending_count(cx.write_store(Scope.PROJECT), key)


def run_worker(dev: Developer) -> subprocess.CompletedProcess[str]:
    """The detached worker as the Stop hook starts it: a process of its own."""
    env = {**os.environ, **dev.env(), "PYTHONPATH": str(REPO), "CORTEX_EMBEDDER": "none"}
    return subprocess.run(
        [sys.executable, "-m", "cortex.plugin.worker", "--root", str(dev.root), "--once"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def session(dev: Developer) -> Path:
    turn: list[dict[str, Any]] = [
        {"type": "user", "uuid": "u1", "sessionId": "s1", "message": {"role": "user", "content": "hi"}},
    ]
    return write_transcript(dev.root.parent / f"{dev.name}.jsonl", turn)


def test_the_team_store_stopped_mid_run(
    tmp_path: Path, switchable: Switchable, monkeypatch: pytest.MonkeyPatch
) -> None:
    ada, bob = make_team(tmp_path, switchable.dsn)
    with ada.cortex() as cx:
        first = remember(cx, FIRST, mem_type="decision").memory
        assert share(cx, first.id).delivered
        refresh_briefing(cx)  # the cached briefing SessionStart reads
    assert first.id in briefing(bob)

    switchable.stop()

    with ada.cortex() as cx:
        second = remember(cx, SECOND, mem_type="gotcha").memory
        waiting = share(cx, second.id)
        assert not waiting.delivered and "unreachable" in waiting.push.error
    # Hooks run with the team store configured and gone: they answer from this machine.
    monkeypatch.setenv("CORTEX_HOME", str(ada.home))
    monkeypatch.setenv("CORTEX_TEAM_DSN", ada.dsn)
    monkeypatch.setenv("CORTEX_USER_PROMPT_SUBMIT", "1")
    start = {"session_id": "s2", "transcript_path": "", "cwd": str(ada.root), "source": "startup"}
    start["hook_event_name"] = "SessionStart"
    assert first.id in context_of(run_hook("SessionStart", start)) or first.id in (
        ada.root / ".claude/rules/cortex-memory.md"
    ).read_text(encoding="utf-8")
    prompt = {
        "session_id": "s2",
        "transcript_path": "",
        "cwd": str(ada.root),
        "prompt": "payment webhook retries",
    }
    prompt["hook_event_name"] = "UserPromptSubmit"
    assert second.id in context_of(run_hook("UserPromptSubmit", prompt))
    queue_stop(ada.root, session(ada), session="s1")
    done = run_worker(ada)
    assert done.returncode == 0, done.stderr
    assert pending(ada) > 0  # still waiting in the project store

    with bob.cortex() as cx:  # recall answers from the local stores, and says so
        result = recall(cx, RecallRequest(text="job queue advisory locks"))
        assert result.team == "unreachable" and result.hits == ()
        assert any("results from the local stores only" in n for n in result.notes)
        assert "results from the local stores only" in render_result(result)
        assert recall_to_dict(result)["team"] == "unreachable"
    out = CliRunner().invoke(
        cli,
        ["-C", str(bob.root), "recall", "--json", "job queue"],
        env={**bob.env(), "CORTEX_EMBEDDER": "none"},
    )
    assert out.exit_code == 0 and json.loads(out.output)["team"] == "unreachable"

    switchable.start()

    queue_stop(ada.root, session(ada), session="s1")
    done = run_worker(ada)
    assert done.returncode == 0, done.stderr
    assert pending(ada) == 0, done.stderr
    text = briefing(bob)
    assert first.id in text and second.id in text  # the pending share arrived


def test_a_long_lived_context_tries_the_team_store_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Switchable("sqlite", tmp_path / "team-server")
    ada, _ = make_team(tmp_path, store.dsn)
    store.stop()
    with ada.cortex() as cx:
        assert cx.team_store() is None and "unreachable" in cx.team().note
        line = team_check(cx)
        assert line.state == "warn" and "unreachable" in line.detail and cx.team().key in line.detail
        store.start()
        assert cx.team_store() is None  # not on every call: once a while
        monkeypatch.setattr("cortex.app.TEAM_RETRY_S", 0.0)
        assert cx.team_store() is not None
        cx.drop_team("gone mid-recall")
        assert cx.team_store() is not None  # and again after a failure


def test_a_long_lived_context_notices_the_team_store_went_away(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Switchable("sqlite", tmp_path / "team-server")
    ada, _ = make_team(tmp_path, store.dsn)
    with ada.cortex() as cx:
        assert cx.team_store() is not None
        store.stop()
        monkeypatch.setattr("cortex.app.TEAM_RECHECK_S", 0.0)
        assert cx.team_store() is None and "unreachable" in cx.team().note
        result = recall(cx, RecallRequest(text="job queue"))
        assert result.team == "unreachable"
