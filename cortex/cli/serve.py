"""`cortex mcp`: serve cortex's tools over MCP (stdio) for Claude Code."""

from __future__ import annotations

import os
from pathlib import Path

import click

from cortex.cli._context import cortex_of


@click.command("mcp")
@click.pass_context
def mcp_cmd(ctx: click.Context) -> None:
    """Serve the memory tools over MCP (stdio).

    Tools: recall, remember, get, forget and traverse.

    Claude Code starts this from the plugin's .mcp.json; the tools answer as the commands of
    the same names do. The project is CLAUDE_PROJECT_DIR when set (else -C or the current
    folder). Needs the `mcp` extra: pip install 'cortex-memory[mcp]'.
    """
    from cortex.app import Cortex
    from cortex.paths import resolve_paths
    from cortex.plugin.mcp_server import serve

    cx = cortex_of(ctx)
    project_dir = os.environ.get("CLAUDE_PROJECT_DIR", "").strip()
    if project_dir and Path(project_dir).is_dir():
        cx = Cortex(resolve_paths(Path(project_dir)))
    serve(cx)
