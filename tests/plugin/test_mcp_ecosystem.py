"""The real Claude Code CLI (npm, pinned) starts cortex's MCP server from the installed plugin."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.plugin.test_plugin_ecosystem import PLUGIN_PARTS, claude, claude_env, run  # noqa: F401
from tests.support.runtime import REPO

pytestmark = pytest.mark.ecosystem

SERVER = "plugin:cortex:cortex"


def test_claude_code_connects_to_the_plugins_mcp_server_and_sees_its_tools(
    claude: Path,  # noqa: F811
    claude_env: dict[str, str],  # noqa: F811
    project: Path,
    tmp_path: Path,
) -> None:
    source = tmp_path / "cortex-plugin"
    for part in (*PLUGIN_PARTS, ".mcp.json"):
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, source / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, source / part)
    added = run(claude, "plugin", "marketplace", "add", str(source), env=claude_env)
    assert added.returncode == 0, added.stdout + added.stderr
    installed = run(claude, "plugin", "install", "cortex@cortex-marketplace", env=claude_env)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    log = tmp_path / "debug.log"
    listed = run(claude, "--debug-file", str(log), "mcp", "list", env=claude_env, cwd=project)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    line = next((ln for ln in listed.stdout.splitlines() if ln.startswith(f"{SERVER}:")), "")
    assert "hooks/launch.py cli mcp" in line and "Connected" in line, listed.stdout
    text = log.read_text(encoding="utf-8")
    assert f'MCP server "{SERVER}": Successfully connected' in text
    capabilities = [ln for ln in text.splitlines() if f'"{SERVER}": Connection established' in ln]
    assert capabilities and '"hasTools":true' in capabilities[0] and '"name":"cortex"' in capabilities[0]
