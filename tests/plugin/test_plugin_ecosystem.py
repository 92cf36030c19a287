"""The real Claude Code CLI (npm, pinned) validates the plugin and runs its SessionStart hook offline."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cortex.app import Cortex
from cortex.briefing.deliver import refresh_briefing
from cortex.capture.manual import remember
from tests.support.runtime import REPO

pytestmark = pytest.mark.ecosystem

CLAUDE_VERSION = "2.1.330"
PACKAGE = f"@anthropic-ai/claude-code@{CLAUDE_VERSION}"
NPM_PREFIX = REPO / ".cache" / "npm"  # git-ignored
HOOK_EVENTS = {"SessionStart", "Stop", "PreCompact", "SessionEnd", "UserPromptSubmit"}
SKILLS = ["cortex:consolidate", "cortex:forget", "cortex:index-code", "cortex:recall", "cortex:remember"]
OFFLINE_SIGNS = (
    "ENOTFOUND",
    "EAI_AGAIN",
    "ETIMEDOUT",
    "ECONNREFUSED",
    "ECONNRESET",
    "network",
    "getaddrinfo",
)
# What the plugin needs at run time; the repository root also holds .venv and caches.
PLUGIN_PARTS = (".claude-plugin", "hooks", "skills", "cortex", "pyproject.toml")


def _claude_bin() -> Path:
    return NPM_PREFIX / "node_modules" / ".bin" / "claude"


def _version(binary: Path) -> str:
    try:
        done = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except OSError:
        return ""
    return done.stdout.strip()


@pytest.fixture(scope="session")
def claude() -> Path:
    """The pinned Claude Code CLI, installed once into .cache/npm (skipped only when npm is unreachable)."""
    binary = _claude_bin()
    if _version(binary).startswith(CLAUDE_VERSION):
        return binary
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: cannot fetch the Claude Code CLI")
    NPM_PREFIX.mkdir(parents=True, exist_ok=True)
    cmd = [
        npm,
        "install",
        "--prefix",
        str(NPM_PREFIX),
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        PACKAGE,
    ]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    except subprocess.TimeoutExpired:
        pytest.skip("npm install of the Claude Code CLI timed out (registry unreachable?)")
    if done.returncode != 0:
        output = done.stdout + done.stderr
        if any(sign in output for sign in OFFLINE_SIGNS):
            pytest.skip(f"the npm registry is unreachable: {output.strip().splitlines()[-1]}")
        pytest.fail(f"npm install {PACKAGE} failed:\n{output[-3000:]}")
    assert _version(binary).startswith(CLAUDE_VERSION), _version(binary)
    return binary


@pytest.fixture
def claude_env(tmp_path: Path, cortex_home: Path) -> dict[str, str]:
    """A throwaway HOME, and `python3` pinned to this interpreter (the hooks run `python3`)."""
    home = tmp_path / "home"
    home.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "ANTHROPIC"))}
    env.update(
        HOME=str(home),
        PATH=str(bin_dir) + os.pathsep + env.get("PATH", ""),
        CORTEX_HOME=str(cortex_home),
        CORTEX_EMBEDDER="none",
        CORTEX_PYTHON=sys.executable,  # a full environment exists: no background install starts
        DISABLE_AUTOUPDATER="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
    )
    return env


def run(
    claude: Path, *args: str, env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(claude), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=180, check=False
    )


def test_validate_strict_passes(claude: Path, claude_env: dict[str, str]) -> None:
    for target in (
        REPO,
        REPO / ".claude-plugin" / "plugin.json",
        REPO / ".claude-plugin" / "marketplace.json",
    ):
        done = run(claude, "plugin", "validate", "--strict", str(target), env=claude_env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Validation passed" in done.stdout


def test_validate_json_lists_the_hooks_and_the_five_skills(claude: Path, claude_env: dict[str, str]) -> None:
    done = run(
        claude,
        "plugin",
        "validate",
        "--strict",
        "--json",
        str(REPO / ".claude-plugin" / "plugin.json"),
        env=claude_env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    assert report["success"] is True and report["strict"] is True
    assert report["manifest"]["errors"] == [] and report["manifest"]["warnings"] == []
    assert all(not c["errors"] and not c["warnings"] for c in report["contents"])
    provides = report["provides"]
    assert {h["event"] for h in provides["hooks"]} == HOOK_EVENTS
    assert all("hooks/launch.py" in h["command"] for h in provides["hooks"])
    assert sorted(provides["skills"]) == SKILLS


@pytest.fixture
def remembered_project(project: Path, cortex_home: Path) -> Path:
    """A git project whose store holds memories and whose briefing has been rendered."""
    with Cortex.for_cwd(project) as cx:
        remember(cx, "We chose Postgres advisory locks for the job queue over Redis", mem_type="decision")
        remember(cx, "Half-way through moving the job runner to advisory locks", mem_type="progress")
        refresh_briefing(cx)
    assert (project / ".claude" / "rules" / "cortex-memory.md").exists()
    return project


def session_start_lines(log: Path) -> list[str]:
    return [ln for ln in log.read_text(encoding="utf-8").splitlines() if "SessionStart" in ln]


def test_init_only_runs_the_session_start_hook_with_the_briefing(
    claude: Path, claude_env: dict[str, str], remembered_project: Path, tmp_path: Path
) -> None:
    log = tmp_path / "debug.log"
    done = run(
        claude,
        "--init-only",
        "--plugin-dir",
        str(REPO),
        "--debug-file",
        str(log),
        env=claude_env,
        cwd=remembered_project,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    text = log.read_text(encoding="utf-8")
    assert "Loaded 5 skills from plugin cortex" in text
    provided = [ln for ln in session_start_lines(log) if "provided additionalContext" in ln]
    assert provided and "hooks/launch.py" in provided[0], "\n".join(session_start_lines(log))
    assert "Half-way through moving the job runner" in text  # the moment part reached the session


def test_marketplace_add_install_then_a_session_gets_the_briefing(
    claude: Path, claude_env: dict[str, str], remembered_project: Path, tmp_path: Path
) -> None:
    source = tmp_path / "cortex-plugin"
    for part in PLUGIN_PARTS:
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, source / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, source / part)
    added = run(claude, "plugin", "marketplace", "add", str(source), env=claude_env)
    assert added.returncode == 0, added.stdout + added.stderr
    installed = run(claude, "plugin", "install", "cortex@cortex-marketplace", env=claude_env)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    listed = json.loads(run(claude, "plugin", "list", "--json", env=claude_env).stdout)
    [plugin] = [p for p in listed if p["id"] == "cortex@cortex-marketplace"]
    assert plugin["enabled"] and Path(plugin["installPath"], "hooks", "launch.py").exists()
    log = tmp_path / "debug.log"
    done = run(claude, "--init-only", "--debug-file", str(log), env=claude_env, cwd=remembered_project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert any("provided additionalContext" in ln for ln in session_start_lines(log)), "\n".join(
        session_start_lines(log)
    )
