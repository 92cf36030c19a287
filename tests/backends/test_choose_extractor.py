"""Which LLM extractor runs, and why in words: `llm_extractor`, keys, the `claude` executable, the caps."""

from __future__ import annotations

import stat
from dataclasses import replace
from pathlib import Path

import pytest

from cortex.backends import calls, spend
from cortex.backends.choose import choose_extractor, extractor_status, llm_extraction_possible
from cortex.backends.claude_cli import ClaudeCliLlm
from cortex.config import ExtractorName, Settings, load_settings
from cortex.errors import ConfigError
from cortex.paths import resolve_paths

DAY = "2026-03-01"
NO_CLAUDE = {"PATH": "/nonexistent", "HOME": "/nonexistent"}


@pytest.fixture
def claude(tmp_path: Path) -> Path:
    path = tmp_path / "bin" / "claude"
    path.parent.mkdir()
    path.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def cli_settings(claude: Path, **more: object) -> Settings:
    return replace(Settings(llm_extractor=ExtractorName.CLAUDE_CLI, claude_cli_path=str(claude)), **more)


def test_the_setting_is_validated_and_read_from_the_environment(project: Path) -> None:
    paths = resolve_paths(project)
    assert load_settings(paths, env={}).llm_extractor is ExtractorName.API  # today's behaviour
    got = load_settings(paths, env={"CORTEX_LLM_EXTRACTOR": "Claude-CLI", "CORTEX_LLM_DAILY_CALLS": "7"})
    assert got.llm_extractor is ExtractorName.CLAUDE_CLI and got.llm_daily_calls == 7
    with pytest.raises(ConfigError) as err:
        load_settings(paths, env={"CORTEX_LLM_EXTRACTOR": "claude"})
    assert "api, claude-cli, off" in err.value.message and "claude-cli" in err.value.message
    with pytest.raises(ConfigError):
        load_settings(paths, env={"CORTEX_LLM_DAILY_CALLS": "-1"})
    (paths.store_dir).mkdir(parents=True, exist_ok=True)
    (paths.store_dir / "config.toml").write_text('llm_extractor = "claude_cli"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_settings(paths, env={})
    assert "config.toml:1" in err.value.message and "did you mean 'claude-cli'" in err.value.message


def test_the_default_is_the_api_layer_when_a_key_is_set(project: Path) -> None:
    paths = resolve_paths(project)
    off = extractor_status(Settings(), paths, day=DAY, env={})
    assert (
        not off.active and off.extractor is ExtractorName.API and "ANTHROPIC_API_KEY is not set" in off.note
    )
    pytest.importorskip("anthropic", reason="the hosted extra is not installed")
    on = extractor_status(Settings(), paths, day=DAY, env={"ANTHROPIC_API_KEY": "k"})
    assert on.active and on.extractor is ExtractorName.API and "via the Anthropic API" in on.note


def test_claude_cli_is_on_when_the_executable_is_found_and_needs_no_key(project: Path, claude: Path) -> None:
    paths = resolve_paths(project)
    status = extractor_status(cli_settings(claude), paths, day=DAY, env=NO_CLAUDE)
    assert status.active and status.extractor is ExtractorName.CLAUDE_CLI
    assert status.binary == str(claude) and status.calls_today == 0
    assert "via your own Claude Code" in status.note and "0 of 50 calls today" in status.note
    choice = choose_extractor(cli_settings(claude), paths, day=DAY, env=NO_CLAUDE)
    assert isinstance(choice.backend, ClaudeCliLlm) and choice.backend.binary == claude
    assert choice.backend.workdir == paths.home / "claude-cli"
    on_path = extractor_status(
        Settings(llm_extractor=ExtractorName.CLAUDE_CLI), paths, day=DAY, env={"PATH": str(claude.parent)}
    )
    assert on_path.active and on_path.binary == str(claude)


def test_claude_cli_without_the_executable_says_so(project: Path, tmp_path: Path) -> None:
    paths = resolve_paths(project)
    status = extractor_status(Settings(llm_extractor=ExtractorName.CLAUDE_CLI), paths, day=DAY, env=NO_CLAUDE)
    assert not status.active and status.extractor is ExtractorName.CLAUDE_CLI
    assert "not on PATH" in status.note and "claude_cli_path" in status.fix
    bad = cli_settings(tmp_path / "missing")
    assert "is not an executable file" in extractor_status(bad, paths, day=DAY, env=NO_CLAUDE).note
    assert choose_extractor(bad, paths, day=DAY, env=NO_CLAUDE).backend is None


def test_the_call_cap_turns_claude_cli_off_for_the_day(
    project: Path, claude: Path, cortex_home: Path
) -> None:
    paths = resolve_paths(project)
    for _ in range(3):
        calls.take_call(cortex_home, DAY, cap=3)
    status = extractor_status(cli_settings(claude, llm_daily_calls=3), paths, day=DAY, env=NO_CLAUDE)
    assert not status.active and "daily call cap reached (3 of 3" in status.note
    assert "llm_daily_calls" in status.fix and status.calls_today == 3
    tomorrow = extractor_status(
        cli_settings(claude, llm_daily_calls=3), paths, day="2026-03-02", env=NO_CLAUDE
    )
    assert tomorrow.active
    # The dollar cap belongs to the API extractor: a spent dollar cap does not stop claude -p.
    held = spend.reserve_spend(cortex_home, DAY, 10.0, cap_usd=10.0)
    assert held is not None
    spend.settle_spend(cortex_home, held, usd=10.0)
    assert extractor_status(cli_settings(claude), paths, day=DAY, env=NO_CLAUDE).active


def test_an_unreadable_call_ledger_stops_claude_cli(project: Path, claude: Path, cortex_home: Path) -> None:
    calls.ledger_path(cortex_home).write_text("{", encoding="utf-8")
    status = extractor_status(cli_settings(claude), resolve_paths(project), day=DAY, env=NO_CLAUDE)
    assert not status.active and "not a cortex call ledger" in status.note and "delete" in status.fix


@pytest.mark.parametrize(
    ("settings", "why"),
    [
        ({"llm_extractor": ExtractorName.OFF}, "llm_extractor = off"),
        ({"llm_extraction": False}, "llm_extraction = false"),
        ({"llm_extraction": False, "llm_extractor": ExtractorName.CLAUDE_CLI}, "llm_extraction = false"),
    ],
)
def test_off_in_config_means_off_whatever_is_installed(
    project: Path, claude: Path, settings: dict[str, object], why: str
) -> None:
    s = replace(Settings(claude_cli_path=str(claude)), **settings)
    env = {"ANTHROPIC_API_KEY": "k"}
    status = extractor_status(s, resolve_paths(project), day=DAY, env=env)
    assert not status.active and why in status.note
    assert choose_extractor(s, resolve_paths(project), day=DAY, env=env).backend is None
    assert not llm_extraction_possible(s, env)


def test_the_capture_path_imports_the_layer_only_when_an_extractor_may_run() -> None:
    assert not llm_extraction_possible(Settings(), {})
    assert llm_extraction_possible(Settings(), {"ANTHROPIC_API_KEY": "k"})
    assert llm_extraction_possible(Settings(llm_extractor=ExtractorName.CLAUDE_CLI), {})
    assert not llm_extraction_possible(Settings(llm_extractor=ExtractorName.OFF), {"ANTHROPIC_API_KEY": "k"})
