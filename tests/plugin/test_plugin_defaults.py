"""What the plugin does by default: its bootstrap installs what the plugin declares (an MCP
server in .mcp.json needs the `mcp` extra, or Claude Code shows the server as failed on every
default install), and the demo never calls a model service."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from cortex.config import load_settings
from cortex.paths import resolve_paths
from cortex.plugin.demo import default_env
from cortex.plugin.install import DEFAULT_EXTRAS

ROOT = Path(__file__).resolve().parents[2]


def test_the_default_install_carries_the_extras_the_plugin_declares() -> None:
    extras = {e.strip() for e in DEFAULT_EXTRAS.split(",")}
    declared = json.loads((ROOT / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]
    assert any("mcp" in server["args"] for server in declared.values())
    assert "mcp" in extras
    known = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    assert extras <= set(known)


def test_the_demo_never_calls_a_model_service(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-" + "x" * 20)
    monkeypatch.setenv("CORTEX_LLM_EXTRACTOR", "claude-cli")
    env = default_env()
    assert "ANTHROPIC_API_KEY" not in env and "CORTEX_LLM_EXTRACTOR" not in env
    assert load_settings(resolve_paths(ROOT), env).llm_extraction is False
