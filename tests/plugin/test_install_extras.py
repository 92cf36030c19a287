"""The plugin's own bootstrap installs what the plugin declares: an MCP server in .mcp.json
needs the `mcp` extra, or Claude Code shows the server as failed on every default install."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

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
