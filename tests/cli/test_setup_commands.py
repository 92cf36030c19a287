"""`cortex init`, `cortex reset` and `cortex upgrade` through the real CLI, on real SQLite stores."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cortex.cli.main import cli
from cortex.paths import RULES_FILE, STORE_DIR, WORKER_LOCK
from cortex.shell.files import file_lock
from cortex.store.sqlite import migrations
from cortex.store.sqlite.connection import Connection

WAL = "We use WAL mode so readers never block the writer"
QUEUE = "We chose Postgres advisory locks for the job queue"
TABS = "The user prefers tabs over spaces"
EXCLUDE_ENTRY = "/.claude/rules/cortex-memory.md"


@pytest.fixture(autouse=True)
def claude_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Claude Code config folder; no model in these tests unless one asks for it."""
    folder = tmp_path / "claude-config"
    folder.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(folder))
    monkeypatch.delenv("CLAUDE_PLUGIN_ROOT", raising=False)
    monkeypatch.setenv("CORTEX_EMBEDDER", "none")
    return folder


def run(project: Path, *args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["-C", str(project), *args], input=stdin, catch_exceptions=False)


def run_json(project: Path, *args: str) -> Any:
    result = run(project, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def steps(doc: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {s["name"]: s for s in doc["steps"]}


def exclude_file(project: Path) -> Path:
    return project / ".git" / "info" / "exclude"


# -- init ---------------------------------------------------------------------------------------
def test_init_sets_a_project_up_and_a_second_run_changes_nothing(project: Path) -> None:
    first = steps(run_json(project, "init"))
    assert first["store"]["state"] == "created" and (project / STORE_DIR / "cortex.db").is_file()
    assert first["model"]["state"] == "skipped" and "embedder = none" in first["model"]["detail"]
    assert first["rules-file exclusion"]["state"] == "created"
    assert EXCLUDE_ENTRY in exclude_file(project).read_text("utf-8").splitlines()
    assert first["plugin"]["state"] == "missing" and "/plugin install" in first["plugin"]["fix"]
    exclude_before = exclude_file(project).read_text("utf-8")
    second = steps(run_json(project, "init"))
    assert {name: s["state"] for name, s in second.items()} == {
        "store": "present",
        "model": "skipped",
        "rules-file exclusion": "present",
        "plugin": "missing",
    }
    assert exclude_file(project).read_text("utf-8") == exclude_before
    assert run(project, "status").exit_code == 0


def test_init_prints_each_step_and_its_fix(project: Path) -> None:
    result = run(project, "init")
    assert result.exit_code == 0, result.output
    assert "+ store: created" in result.stdout
    assert "! plugin: missing" in result.stdout and "fix: in Claude Code" in result.stdout


def test_init_finds_the_installed_plugin(project: Path, claude_config: Path) -> None:
    record = claude_config / "plugins" / "installed_plugins.json"
    record.parent.mkdir()
    entry = [{"scope": "user", "installPath": "/x", "version": "0.1.0"}]
    record.write_text(json.dumps({"version": 2, "plugins": {"cortex@cortex-marketplace": entry}}), "utf-8")
    plugin = steps(run_json(project, "init"))["plugin"]
    assert plugin["state"] == "present" and "cortex@cortex-marketplace" in plugin["detail"]


def test_init_outside_git_skips_the_exclusion(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    done = steps(run_json(folder, "init"))
    assert done["rules-file exclusion"]["state"] == "skipped"
    assert "not a git repository" in done["rules-file exclusion"]["detail"]
    assert done["store"]["state"] == "created"


def test_init_names_the_fix_for_a_missing_model(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CORTEX_EMBEDDER", "local")
    monkeypatch.setenv("CORTEX_MODEL_PATH", str(tmp_path / "no-model-here"))
    model = steps(run_json(project, "init"))["model"]
    assert model["state"] == "missing" and model["fix"]


@pytest.mark.usefixtures("real_model")
def test_init_finds_the_exported_model(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORTEX_EMBEDDER", "local")
    model = steps(run_json(project, "init"))["model"]
    assert model["state"] == "present" and "ONNX model at" in model["detail"]


# -- reset --------------------------------------------------------------------------------------
def remember(project: Path, text: str, *extra: str) -> None:
    result = run(project, "remember", text, *extra)
    assert result.exit_code == 0, result.output


def recall(project: Path, query: str) -> str:
    result = run(project, "recall", query)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A person at the keyboard: reset asks (the answers come from the runner's input)."""
    monkeypatch.setattr("cortex.cli.setup.stdin_is_a_terminal", lambda: True)


def test_reset_without_a_terminal_needs_yes(project: Path) -> None:
    remember(project, WAL)
    result = run(project, "reset")
    assert result.exit_code == 1 and "rerun with --yes" in result.stderr
    assert WAL in recall(project, "WAL mode readers")


@pytest.mark.usefixtures("terminal")
def test_reset_asks_and_a_no_keeps_everything(project: Path) -> None:
    remember(project, WAL)
    result = run(project, "reset", stdin="n\n")
    assert result.exit_code == 1
    assert "1 active memories in the project store" in result.stderr
    assert WAL in recall(project, "WAL mode readers")


@pytest.mark.usefixtures("terminal")
def test_reset_keeps_a_checkpoint_that_restores_everything(project: Path) -> None:
    remember(project, WAL)
    remember(project, QUEUE)
    rules = project / RULES_FILE
    rules.parent.mkdir(parents=True)
    rules.write_text("# my own rules\n<!-- cortex:begin -->\nold briefing\n<!-- cortex:end -->\n", "utf-8")
    result = run(project, "reset", stdin="y\n")
    assert result.exit_code == 0, result.output
    assert "2 active memories removed; checkpoint kept at" in result.stdout
    assert "cortex restore NAME" in result.stdout
    assert not (project / STORE_DIR / "cortex.db").exists()
    assert rules.read_text("utf-8") == "# my own rules\n"  # the user's text stays
    assert WAL not in recall(project, "WAL mode readers")
    [checkpoint] = (project / STORE_DIR / "checkpoints").glob("*-before_reset.db")
    restored = run(project, "restore", checkpoint.stem, "--yes")
    assert restored.exit_code == 0, restored.output
    assert WAL in recall(project, "WAL mode readers") and QUEUE in recall(project, "advisory locks")


def test_reset_json_with_yes_and_global(project: Path) -> None:
    remember(project, WAL)
    remember(project, TABS, "--global")
    doc = run_json(project, "reset", "--yes", "--global")
    by_scope = {s["scope"]: s for s in doc["stores"]}
    assert by_scope["project"]["memories"] == 1 and by_scope["global"]["memories"] == 1
    for s in by_scope.values():
        assert Path(s["checkpoint"]).is_file() and not Path(s["path"]).exists()
    assert TABS not in recall(project, "tabs spaces")


def test_reset_of_an_empty_project_removes_nothing(project: Path) -> None:
    doc = run_json(project, "reset", "--yes")
    assert doc == {
        "stores": [
            {
                "scope": "project",
                "path": str(project / STORE_DIR / "cortex.db"),
                "memories": 0,
                "checkpoint": None,
            }
        ],
        "removed": [],
    }


def test_reset_refuses_while_a_worker_captures(project: Path) -> None:
    remember(project, WAL)
    with file_lock(project / STORE_DIR / WORKER_LOCK, blocking=False):
        result = run(project, "reset", "--yes")
    assert result.exit_code == 1 and "worker is capturing" in result.stderr
    assert WAL in recall(project, "WAL mode readers")


# -- upgrade ------------------------------------------------------------------------------------
def test_upgrade_with_no_store_and_with_a_current_one(project: Path) -> None:
    doc = run_json(project, "upgrade")
    assert doc["changed"] is False and all(s["before"] is None for s in doc["stores"])
    remember(project, WAL)
    doc = run_json(project, "upgrade")
    project_store = doc["stores"][0]
    assert project_store["before"] == project_store["after"] == migrations.LATEST_VERSION
    assert project_store["checkpoint"] is None and doc["changed"] is False
    assert "up to date" in run(project, "upgrade").stdout


def test_upgrade_initialises_an_empty_store_file(project: Path) -> None:
    db = project / STORE_DIR / "cortex.db"
    db.parent.mkdir()
    sqlite3.connect(db).close()  # an empty SQLite file: schema 0
    doc = run_json(project, "upgrade")
    store = doc["stores"][0]
    assert (store["before"], store["after"], store["checkpoint"]) == (0, migrations.LATEST_VERSION, None)


def m_next(conn: Connection) -> None:
    """A next schema version: a new table beside the data."""
    conn.execute("CREATE TABLE upgrade_probe (k TEXT PRIMARY KEY)")


def test_upgrade_checkpoints_before_migrating_and_the_checkpoint_restores_exactly(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remember(project, WAL)
    old = migrations.LATEST_VERSION
    monkeypatch.setattr(migrations, "MIGRATIONS", (*migrations.MIGRATIONS, m_next))
    monkeypatch.setattr(migrations, "LATEST_VERSION", old + 1)
    result = run(project, "upgrade")
    assert result.exit_code == 0, result.output
    assert f"project store: schema {old} -> {old + 1}" in result.stdout
    [checkpoint] = (project / STORE_DIR / "checkpoints").glob("*-before_upgrade.db")
    assert str(checkpoint) in result.stdout
    with sqlite3.connect(checkpoint) as conn:  # the checkpoint holds the store as it was
        assert conn.execute("PRAGMA user_version").fetchone()[0] == old
    with sqlite3.connect(project / STORE_DIR / "cortex.db") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == old + 1
    restored = run(project, "restore", checkpoint.stem, "--yes")
    assert restored.exit_code == 0, restored.output
    assert "DIFFER" not in restored.output
    assert WAL in recall(project, "WAL mode readers")


def test_upgrade_refuses_a_store_of_a_newer_cortex(project: Path) -> None:
    remember(project, WAL)
    with sqlite3.connect(project / STORE_DIR / "cortex.db") as conn:
        conn.execute(f"PRAGMA user_version = {migrations.LATEST_VERSION + 5}")
    result = run(project, "upgrade")
    assert result.exit_code == 1 and "newer cortex" in result.stderr
    assert not (project / STORE_DIR / "checkpoints").exists()


def test_the_commands_are_listed_in_help(project: Path) -> None:
    out = subprocess.run(
        ["git", "-C", str(project), "status"], capture_output=True, text=True, check=True
    ).stdout
    assert "cortex-memory.md" not in out
    help_text = CliRunner().invoke(cli, ["--help"]).stdout
    for name in ("init", "reset", "upgrade"):
        assert f"  {name}" in help_text
