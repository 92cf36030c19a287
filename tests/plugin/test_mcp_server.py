"""cortex's MCP server, driven by the official SDK's client over stdio against the real process."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters

from cortex.cli.main import cli
from tests.support.runtime import LAUNCH, REPO

WAL = "We use SQLite WAL mode so readers never block the writer"
QUEUE = "We chose Postgres advisory locks for the job queue over Redis"
SECRET = "The staging deploy key is sk-ant-api03-" + "x" * 90


@pytest.fixture(autouse=True)
def keyword_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same (keyword-only) recall in the server process and in the CLI it is compared with."""
    monkeypatch.setenv("CORTEX_EMBEDDER", "none")


def params(project: Path, *, via_launcher: bool = False) -> StdioServerParameters:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "CORTEX_EMBEDDER": "none",
        "CLAUDE_PROJECT_DIR": str(project),
    }
    if via_launcher:  # as the plugin's .mcp.json starts it
        return StdioServerParameters(
            command=sys.executable,
            args=[str(LAUNCH), "cli", "mcp"],
            env={**env, "CORTEX_PYTHON": sys.executable},
        )
    return StdioServerParameters(
        command=sys.executable, args=["-m", "cortex", "mcp"], env=env, cwd=str(project)
    )


def with_client(project: Path, body: Callable[[Client], Awaitable[Any]], **kw: bool) -> Any:
    async def main() -> Any:
        async with Client(params(project, **kw), read_timeout_seconds=120) as client:
            return await body(client)

    return anyio.run(main)


def text_of(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def cli_out(project: Path, *args: str) -> str:
    done = CliRunner().invoke(cli, ["-C", str(project), *args], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return done.stdout


def test_the_server_lists_the_five_tools(project: Path) -> None:
    async def body(client: Client) -> list[str]:
        return sorted(t.name for t in (await client.list_tools()).tools)

    assert with_client(project, body) == ["forget", "get", "recall", "remember", "traverse"]


def test_tools_answer_as_the_cli_does(project: Path) -> None:
    cli_out(project, "remember", QUEUE, "--type", "decision")

    async def body(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {}
        stored = await client.call_tool("remember", {"text": WAL, "memory_type": "decision"})
        out["remember"] = text_of(stored)
        out["recall"] = text_of(await client.call_tool("recall", {"query": "advisory locks job queue"}))
        out["nothing"] = text_of(await client.call_tool("recall", {"query": "kubernetes helm chart values"}))
        out["again"] = text_of(await client.call_tool("recall", {"query": "advisory locks job queue"}))
        return out

    got = with_client(project, body)
    assert got["remember"].startswith("Stored") and "decision" in got["remember"]
    assert WAL in cli_out(project, "recall", "WAL mode readers")  # the server wrote the real store
    assert got["recall"] == cli_out(project, "recall", "advisory locks job queue").rstrip("\n")
    assert got["nothing"] == cli_out(project, "recall", "kubernetes helm chart values").rstrip("\n")
    assert "Nothing relevant in memory" in got["nothing"]
    assert got["again"] == got["recall"]  # one process, many calls


def test_remember_redacts_and_get_forget_traverse_work(project: Path) -> None:
    async def body(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["remember"] = text_of(await client.call_tool("remember", {"text": SECRET}))
        out["queue"] = text_of(await client.call_tool("remember", {"text": QUEUE, "memory_type": "decision"}))
        return out

    got = with_client(project, body)
    doc = json.loads(cli_out(project, "recall", "staging deploy key", "--json"))
    stored = " ".join(r["memory"]["content"] for r in doc["hits"])
    assert "sk-ant-api03" not in stored and "staging deploy key" in stored
    memory_id = json.loads(cli_out(project, "recall", "advisory locks", "--json"))["hits"][0]["memory"]["id"]
    assert memory_id in got["queue"]

    async def more(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["get"] = text_of(await client.call_tool("get", {"memory_id": memory_id}))
        trav = await client.call_tool("traverse", {"memory_id": memory_id})
        out["traverse"] = trav.structured_content or json.loads(text_of(trav))
        out["forget"] = text_of(await client.call_tool("forget", {"memory_id": memory_id}))
        missing = await client.call_tool("get", {"memory_id": "ffffffffff"})
        out["missing"] = (missing.is_error, text_of(missing))
        return out

    got = with_client(project, more)
    assert QUEUE in got["get"] and memory_id in got["get"]
    assert got["traverse"]["start"]["id"] == memory_id
    assert got["forget"] == f"Archived 1 memory: {memory_id}."
    assert json.loads(cli_out(project, "get", memory_id, "--json"))["memory"]["status"] == "archived"
    is_error, message = got["missing"]
    assert is_error and "no memory with id" in message and "fix:" in message


def test_bad_arguments_come_back_as_tool_errors_with_the_fix(project: Path) -> None:
    async def body(client: Client) -> list[tuple[bool, str]]:
        calls = [
            ("recall", {"query": "anything", "scope": "everywhere"}),
            ("recall", {"query": "anything", "types": ["decisions"]}),
            ("remember", {"text": "x", "memory_type": "opinion"}),
            ("traverse", {"memory_id": "ffffffffff", "types": ["bogus"]}),
        ]
        out = []
        for name, args in calls:
            result = await client.call_tool(name, args)
            out.append((result.is_error, text_of(result)))
        return out

    for is_error, message in with_client(project, body):
        assert is_error and "fix:" in message, message


def test_the_plugin_starts_it_through_the_launcher(project: Path) -> None:
    declared = json.loads((REPO / ".mcp.json").read_text("utf-8"))["mcpServers"]["cortex"]
    assert declared["args"][-2:] == ["cli", "mcp"] and declared["args"][0].endswith("hooks/launch.py")

    async def body(client: Client) -> str:
        await client.call_tool("remember", {"text": WAL})
        return text_of(await client.call_tool("recall", {"query": "WAL mode readers"}))

    assert WAL in with_client(project, body, via_launcher=True)


def test_without_the_mcp_package_the_command_names_the_extra(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)  # as if `mcp` were not installed
    done = CliRunner().invoke(cli, ["-C", str(project), "mcp"])
    assert done.exit_code == 1
    assert "needs the `mcp` package" in done.stderr and "cortex-memory[mcp]" in done.stderr
