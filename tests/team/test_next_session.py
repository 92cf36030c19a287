"""A teammate's share reaches the next session's briefing: with a team store configured,
SessionStart answers from the cache and queues a render that merges the team store."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cortex.briefing.deliver import refresh_briefing
from cortex.briefing.session_start import plan_session_start, team_configured
from cortex.capture.manual import remember
from cortex.plugin import hooks
from cortex.team.share import share
from tests.support.runtime import run_hook
from tests.support.team import make_team

DECISION = "The job queue uses PostgreSQL advisory locks instead of Redis: one less service to run"
LOCAL = "Gotcha: the staging database rejects connections without sslmode=require"


def start(root: Path) -> dict[str, str]:
    return {"session_id": "s2", "transcript_path": "", "cwd": str(root), "hook_event_name": "SessionStart"}


def test_the_next_session_gets_what_a_teammate_shared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "team-sqlite"
    folder.mkdir()
    ada, bob = make_team(tmp_path, f"sqlite://{folder}")
    monkeypatch.setenv("CORTEX_EMBEDDER", "none")
    with bob.cortex() as cx:
        remember(cx, LOCAL, mem_type="gotcha")
        refresh_briefing(cx)  # bob's cached briefing, rendered before ada shares anything
    with ada.cortex() as cx:
        decision = remember(cx, DECISION, mem_type="decision").memory
        assert share(cx, decision.id).delivered
    env = {**os.environ, **bob.env()}
    assert plan_session_start(start(bob.root), env).refresh is False  # type: ignore[union-attr]  # fresh
    monkeypatch.setattr("cortex.briefing.session_start.TEAM_STALE_S", 0.0)  # as if rendered long ago
    before = (bob.root / ".claude/rules/cortex-memory.md").read_text(encoding="utf-8")
    run_hook("SessionStart", start(bob.root), env)  # this session: the cache, as it was
    assert "sslmode" in before and decision.id not in before
    assert hooks.wait_for_workers(120)
    rules = (bob.root / ".claude/rules/cortex-memory.md").read_text(encoding="utf-8")
    assert decision.id in rules and "by Ada <ada@example.invalid>" in rules


def test_without_a_team_store_session_start_queues_nothing(tmp_path: Path, cx_project: Path) -> None:
    plan = plan_session_start(start(cx_project), {"CORTEX_HOME": str(tmp_path)})
    assert plan is not None and plan.refresh is False


@pytest.fixture
def cx_project(project: Path, cortex_home: Path) -> Path:
    from cortex.app import Cortex
    from cortex.paths import resolve_paths

    with Cortex(resolve_paths(project)) as cx:
        remember(cx, LOCAL, mem_type="gotcha")
        refresh_briefing(cx)
    return project


def test_team_configured_reads_the_variable_or_either_config_file(tmp_path: Path, project: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert not team_configured(project, {"CORTEX_HOME": str(home)})
    assert team_configured(project, {"CORTEX_HOME": str(home), "CORTEX_TEAM_DSN": "postgresql://db/x"})
    assert not team_configured(project, {"CORTEX_HOME": str(home), "CORTEX_TEAM_DSN": " "})
    (home / "config.toml").write_text('# team_dsn = "off"\nteam_dsn = ""\n', encoding="utf-8")
    assert not team_configured(project, {"CORTEX_HOME": str(home)})
    (project / ".memory").mkdir()
    (project / ".memory" / "config.toml").write_text("[cortex]\n  team_dsn = 'postgresql://db/x'\n")
    assert team_configured(project, {"CORTEX_HOME": str(home)})
