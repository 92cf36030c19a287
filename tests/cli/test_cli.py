"""The `cortex` command end to end (in process): outputs, JSON, exit codes and complete help."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from cortex.cli.main import cli
from cortex.version import __version__

WAL = "We use WAL mode so readers never block the writer"
QUEUE = "We chose Postgres advisory locks for the job queue"


def run(project: Path, *args: str, stdin: str | bytes | None = None) -> Result:
    """`cortex -C PROJECT ARGS` in process, stdout and stderr kept apart."""
    return CliRunner().invoke(cli, ["-C", str(project), *args], input=stdin, catch_exceptions=False)


def remember_id(project: Path, *args: str) -> str:
    result = run(project, "remember", *args, "--json")
    assert result.exit_code == 0, result.output
    memory_id: str = json.loads(result.stdout)["memory"]["id"]
    return memory_id


def test_remember_then_recall(project: Path) -> None:
    stored = run(project, "remember", QUEUE, "--type", "decision", "--tags", "db, queue")
    assert stored.exit_code == 0, stored.output
    assert re.match(r"Stored [0-9a-f]{10} \[decision\] in the project store\.", stored.stdout)
    assert "cortex backfill" in stored.stdout  # no model export in this CORTEX_HOME: keyword-only
    found = run(project, "recall", "advisory", "locks")
    assert found.exit_code == 0, found.output
    assert "keyword-only" in found.stdout and QUEUE in found.stdout
    assert "not instructions" in found.stdout  # memory text is presented as data


def test_remember_reads_stdin(project: Path) -> None:
    result = run(project, "remember", "-", "--json", stdin=WAL + "\n")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["memory"]["content"] == WAL


def test_remember_twice_says_already_remembered(project: Path) -> None:
    first = remember_id(project, WAL)
    again = run(project, "remember", WAL)
    assert again.exit_code == 0 and f"Already remembered as {first}" in again.stdout


def test_remember_global(project: Path, cortex_home: Path) -> None:
    result = run(project, "remember", "I prefer tabs over spaces", "--global")
    assert result.exit_code == 0 and "global store" in result.stdout
    assert (cortex_home / "cortex-global.db").exists() and not (project / ".memory" / "cortex.db").exists()


def test_recall_json_shape(project: Path) -> None:
    memory_id = remember_id(project, QUEUE, "--type", "decision")
    result = run(project, "recall", "advisory locks", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["mode"] == "keyword-only" and data["abstained"] is False
    assert [h["memory"]["id"] for h in data["hits"]] == [memory_id]
    assert data["hits"][0]["store"] == "project" and data["hits"][0]["memory"]["type"] == "decision"


def test_recall_nothing_relevant(project: Path) -> None:
    remember_id(project, QUEUE)
    result = run(project, "recall", "kubernetes helm charts")
    assert result.exit_code == 0 and "Nothing relevant in memory" in result.stdout


def test_recall_in_a_project_without_memory_creates_nothing(project: Path) -> None:
    result = run(project, "recall", "anything")
    assert result.exit_code == 0 and "Nothing relevant in memory" in result.stdout
    assert not (project / ".memory").exists()


def test_get_by_prefix_and_json(project: Path) -> None:
    memory_id = remember_id(project, WAL)
    shown = run(project, "get", memory_id[:6])
    assert shown.exit_code == 0 and WAL in shown.stdout and memory_id in shown.stdout
    data = json.loads(run(project, "get", memory_id, "--json").stdout)
    assert data["memory"]["content"] == WAL and data["store"] == "project" and data["edges"] == []


def test_forget_needs_confirmation_off_a_terminal(project: Path) -> None:
    memory_id = remember_id(project, WAL)
    refused = run(project, "forget", memory_id)
    assert refused.exit_code == 1 and "--yes" in refused.stderr
    assert json.loads(run(project, "get", memory_id, "--json").stdout)["memory"]["status"] == "active"
    done = run(project, "forget", memory_id, "--yes")
    assert done.exit_code == 0 and "Archived 1 memory." in done.stdout
    assert json.loads(run(project, "get", memory_id, "--json").stdout)["memory"]["status"] == "archived"


def test_forget_by_query(project: Path) -> None:
    remember_id(project, WAL)
    queue_id = remember_id(project, QUEUE)
    result = run(project, "forget", "advisory", "locks", "--limit", "1", "--yes")
    assert result.exit_code == 0 and queue_id in result.stdout and "Archived 1 memory." in result.stdout


def test_supersede_and_traverse(project: Path) -> None:
    old = remember_id(project, "Deploys run with Fabric scripts")
    new = remember_id(project, "Deploys run with GitHub Actions")
    result = run(project, "supersede", new, old)
    assert result.exit_code == 0 and f"{old} is now superseded by {new}." in result.stdout
    walk = run(project, "traverse", new)
    assert walk.exit_code == 0 and "supersedes" in walk.stdout and old in walk.stdout
    data = json.loads(run(project, "traverse", old, "--json", "--direction", "in").stdout)
    assert data["levels"][0]["nodes"][0]["id"] == new
    alias = run(project, "traverse", new, "--type", "Replaces", "--json")  # an alias of supersedes
    assert alias.exit_code == 0 and json.loads(alias.stdout)["levels"][0]["nodes"][0]["id"] == old
    other = json.loads(run(project, "traverse", new, "--type", "related", "--json").stdout)
    assert {n["edge"] for level in other["levels"] for n in level["nodes"]} <= {"relates_to"}
    wrong = run(project, "traverse", new, "--type", "cousin_of")
    assert wrong.exit_code == 2 and "relates_to" in wrong.stderr


def test_status_before_and_after_a_write(project: Path) -> None:
    empty = run(project, "status")
    assert empty.exit_code == 0 and "nothing stored yet" in empty.stdout
    remember_id(project, WAL)
    data = json.loads(run(project, "status", "--json").stdout)
    project_store = data["stores"]["project"]
    assert project_store["by_status"] == {"active": 1} and project_store["pending_embeddings"] == 1
    assert data["stores"]["global"]["missing"] is True


def test_doctor_reports_every_area(project: Path) -> None:
    result = run(project, "doctor", "--json")
    names = {c["name"] for c in json.loads(result.stdout)}
    assert {"python", "vector search", "embedding model", "project store", "global store"} <= names
    text = run(project, "doctor")
    assert text.exit_code == result.exit_code == 0, text.output  # warnings only on a healthy install
    assert "[ok  ] vector search" in text.stdout


@pytest.mark.slow
@pytest.mark.usefixtures("real_model")
def test_backfill_embeds_what_was_stored_without_a_model(project: Path) -> None:
    remember_id(project, WAL)  # the export is visible: this one is embedded at once
    run(project, "remember", QUEUE)
    before = json.loads(run(project, "status", "--json").stdout)["stores"]["project"]
    assert before["pending_embeddings"] == 0
    result = run(project, "backfill")
    assert result.exit_code == 0, result.output
    assert "Embedded 0 memories" in result.stdout and "via ONNX" in result.stdout


def test_version() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0 and __version__ in result.stdout


# -- usage errors exit 2 ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["nope"],
        ["remember"],
        ["recall"],
        ["recall", "   "],
        ["recall", "x", "--limit", "0"],
        ["recall", "x", "--scope", "everywhere"],
        ["remember", "x", "--type", "opinion"],
        ["remember", "x", "--priority", "11"],
        ["traverse", "abc", "--depth", "9"],
        ["get"],
    ],
)
def test_usage_errors_exit_2(project: Path, args: list[str]) -> None:
    result = run(project, *args)
    assert result.exit_code == 2, result.output
    assert "Usage:" in result.stderr or "Error:" in result.stderr
    assert result.stdout == ""


def test_a_missing_project_directory_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["-C", str(tmp_path / "nowhere"), "status"])
    assert result.exit_code == 2 and "does not exist" in result.stderr


# -- help is complete ---------------------------------------------------------------------------


def commands() -> list[str]:
    return sorted(cli.commands)


def test_root_help_lists_every_command_with_an_untruncated_summary() -> None:
    result = CliRunner().invoke(cli, ["--help"], terminal_width=80)
    assert result.exit_code == 0
    listing = result.stdout.split("Commands:", 1)[1]
    for name in commands():
        line = next((ln for ln in listing.splitlines() if ln.strip().startswith(name + " ")), "")
        assert line, f"{name} missing from `cortex --help`"
        assert not line.rstrip().endswith("..."), f"summary of {name} is cut off: {line.strip()}"


@pytest.mark.parametrize("name", commands())
def test_every_command_documents_itself_and_each_option(name: str) -> None:
    command = cli.commands[name]
    assert command.help and len(command.help.split()) >= 5, f"`cortex {name}` needs a real description"
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            assert param.help, f"`cortex {name} {param.opts[0]}` has no help text"
        if isinstance(param, click.Argument):
            meta = param.make_metavar(click.Context(command))
            assert meta.split(".")[0].strip("[]") in command.help, f"`cortex {name}` never explains {meta}"
    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0 and "Usage: cli " not in result.stdout


def test_user_changes_reach_a_delivered_briefing_at_once(project: Path) -> None:
    from cortex.app import Cortex
    from cortex.briefing.deliver import refresh_briefing
    from cortex.paths import resolve_paths

    queue_id = remember_id(project, QUEUE, "--type", "decision")
    with Cortex(resolve_paths(project)) as cx:  # the plugin's worker delivered a briefing once
        refresh_briefing(cx)
        rules = cx.paths.rules_file
    assert QUEUE in rules.read_text()
    assert run(project, "remember", WAL, "--type", "architecture").exit_code == 0
    assert WAL in rules.read_text()
    assert run(project, "forget", queue_id, "--yes").exit_code == 0
    assert QUEUE not in rules.read_text() and WAL in rules.read_text()


def test_a_cli_only_project_gets_no_briefing_files(project: Path) -> None:
    remember_id(project, QUEUE)
    assert not (project / ".claude").exists()
