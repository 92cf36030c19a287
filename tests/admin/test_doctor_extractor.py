"""`cortex doctor` says which extractor is on and why, in its text and in its --json document."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cortex.backends import calls

REPO = Path(__file__).resolve().parents[2]


def doctor(project: Path, env: dict[str, str], *, as_json: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "cortex", "-C", str(project), "doctor", *(["--json"] if as_json else [])],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "CORTEX_EMBEDDER": "none", **env},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


def extractor_check(project: Path, env: dict[str, str]) -> tuple[dict[str, object], str]:
    checks = {c["name"]: c for c in json.loads(doctor(project, env).stdout)}
    return checks["extractor"], str(checks["backends"]["detail"])


@pytest.fixture
def claude(tmp_path: Path) -> Path:
    path = tmp_path / "bin" / "claude"
    path.parent.mkdir()
    path.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def test_the_default_names_the_api_extractor_and_the_key_free_alternative(project: Path) -> None:
    check, summary = extractor_check(project, {})
    assert check["extractor"] == "api" and check["active"] is False and check["state"] == "ok"
    assert "ANTHROPIC_API_KEY is not set" in str(check["detail"])
    assert 'llm_extractor = "claude-cli"' in str(check["detail"])
    assert summary.startswith("extractor heuristic,")


def test_claude_cli_on_says_which_binary_and_how_many_calls(project: Path, claude: Path) -> None:
    env = {"CORTEX_LLM_EXTRACTOR": "claude-cli", "CORTEX_CLAUDE_CLI_PATH": str(claude)}
    check, summary = extractor_check(project, env)
    assert check["extractor"] == "claude-cli" and check["active"] is True and check["state"] == "ok"
    detail = str(check["detail"])
    assert detail.startswith("LLM layer on: claude-haiku-5-5 via your own Claude Code, headless")
    assert str(claude) in detail and "needs no API key" in detail and "0 of 50 calls today" in detail
    assert summary.startswith("extractor llm (claude -p) + heuristic") and "offline" not in summary
    text = doctor(project, env, as_json=False).stdout
    assert "[ok  ] extractor: LLM layer on: claude-haiku-5-5 via your own Claude Code" in text
    assert 'llm_extractor = "claude-cli"' in text and "CORTEX_LLM_EXTRACTOR" in text  # the settings list


def test_claude_cli_without_claude_warns_with_the_fix(project: Path, tmp_path: Path) -> None:
    env = {"CORTEX_LLM_EXTRACTOR": "claude-cli", "PATH": str(tmp_path / "empty") + os.pathsep + "/usr/bin"}
    env["HOME"] = str(tmp_path)
    check, summary = extractor_check(project, {**env, "CORTEX_CLAUDE_CLI_PATH": str(tmp_path / "gone")})
    assert check["extractor"] == "claude-cli" and check["active"] is False and check["state"] == "warn"
    assert "is not an executable file" in str(check["detail"]) and "claude_cli_path" in str(check["fix"])
    assert "offline: nothing leaves this machine" in summary


def test_claude_cli_over_its_call_cap_warns(project: Path, claude: Path, cortex_home: Path) -> None:
    from datetime import UTC, datetime

    today = datetime.now(UTC).date().isoformat()
    for _ in range(2):
        calls.take_call(cortex_home, today, cap=2)
    env = {
        "CORTEX_LLM_EXTRACTOR": "claude-cli",
        "CORTEX_CLAUDE_CLI_PATH": str(claude),
        "CORTEX_LLM_DAILY_CALLS": "2",
    }
    check, _ = extractor_check(project, env)
    assert check["state"] == "warn" and "daily call cap reached (2 of 2" in str(check["detail"])
    assert "llm_daily_calls" in str(check["fix"])


def test_off_says_so(project: Path) -> None:
    check, _ = extractor_check(project, {"CORTEX_LLM_EXTRACTOR": "off", "ANTHROPIC_API_KEY": "sk-ant-x"})
    assert check["extractor"] == "off" and check["active"] is False and check["state"] == "ok"
    assert "llm_extractor = off" in str(check["detail"])
