"""`--json` on supersede, forget, backfill and export; where `remember` says a memory comes from."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cortex.backends import choose
from cortex.backends.port import Choice
from cortex.cli.main import cli
from tests.support.fakes import FakeEmbedder

WAL = "We use WAL mode so readers never block the writer"
QUEUE = "We chose Postgres advisory locks for the job queue"


def run(project: Path | None, *args: str) -> Result:
    where = ["-C", str(project)] if project is not None else []
    return CliRunner().invoke(cli, [*where, *args], catch_exceptions=False)


def remember_json(project: Path | None, *args: str) -> dict[str, object]:
    result = run(project, "remember", *args, "--json")
    assert result.exit_code == 0, result.output
    memory: dict[str, object] = json.loads(result.stdout)["memory"]
    return memory


def test_supersede_json(project: Path) -> None:
    old, new = remember_json(project, "Deploys run with Fabric"), remember_json(project, "Deploys run in CI")
    result = run(project, "supersede", str(new["id"]), str(old["id"]), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["new"]["id"] == new["id"] and data["new"]["status"] == "active"
    assert data["old"]["id"] == old["id"] and data["old"]["status"] == "superseded"


def test_forget_json(project: Path) -> None:
    memory = remember_json(project, WAL)
    refused = run(project, "forget", str(memory["id"]), "--json")  # no terminal to confirm on
    assert refused.exit_code == 1 and refused.stdout == ""
    result = run(project, "forget", str(memory["id"]), "--json", "--yes")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)  # stdout holds the document and nothing else
    assert data["matched"] == [memory["id"]]
    assert [m["id"] for m in data["archived"]] == [memory["id"]]
    assert data["archived"][0]["status"] == "archived"
    nothing = run(project, "forget", "kubernetes", "helm", "--json", "--yes")
    assert nothing.exit_code == 0 and json.loads(nothing.stdout) == {"matched": [], "archived": []}


def test_backfill_json(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    remember_json(project, QUEUE)  # no model here: stored without a vector
    fake = Choice(FakeEmbedder(), "fake embedder")
    monkeypatch.setattr(choose, "choose_embedder", lambda settings, paths, purpose: fake)
    result = run(project, "backfill", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"embedded": 1, "embedder": "fake embedder", "onnx_export": None}


def test_export_json_summarises_the_file_it_wrote(project: Path, tmp_path: Path) -> None:
    remember_json(project, WAL)
    target = tmp_path / "memory.jsonl"
    result = run(project, "export", "-o", str(target), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["path"] == str(target) and data["scope"] == "all"
    assert data["stores"]["project"]["memories"] == 1 and len(data["stores"]["project"]["digest"]) == 64
    assert target.read_text(encoding="utf-8").count('"kind":"memory"') == 1
    alone = run(project, "export", "--json")  # stdout is the export itself: no room for a summary
    assert alone.exit_code == 2 and "-o FILE" in alone.stderr


# -- where a remembered memory comes from ----------------------------------------------------------
def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True, timeout=60)
    return done.stdout.strip()


def test_remember_records_the_branch_and_the_commit(project: Path) -> None:
    git(project, "checkout", "-q", "-b", "feature/locks")
    source = remember_json(project, QUEUE)["source"]
    assert isinstance(source, dict)
    assert source["branch"] == "feature/locks" and source["commit"] == git(project, "rev-parse", "HEAD")
    shown = run(project, "get", str(remember_json(project, WAL)["id"]))
    assert "branch feature/locks" in shown.stdout
    global_source = remember_json(project, "I prefer tabs", "--global")["source"]  # holds on every branch
    assert isinstance(global_source, dict) and global_source["branch"] is None


def test_the_first_store_outside_git_says_which_folder_is_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    monkeypatch.chdir(folder)
    first = run(None, "remember", WAL)
    assert first.exit_code == 0, first.output
    assert first.stderr.count("\n") == 1 and str(folder / ".memory") in first.stderr
    assert "not in a git repository" in first.stderr and "-C DIR" in first.stderr
    assert (folder / ".memory" / "cortex.db").exists()
    again = run(None, "remember", QUEUE)
    assert again.exit_code == 0 and again.stderr == ""  # only the first time


def test_no_notice_in_a_git_repository_or_for_reads(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    assert run(None, "remember", WAL).stderr == ""
    loose = project.parent / "loose"
    loose.mkdir()
    monkeypatch.chdir(loose)
    assert run(None, "recall", "WAL").stderr == "" and not (loose / ".memory").exists()
