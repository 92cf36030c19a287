"""`cortex doctor` says which splitter reads each language, and how to get tree-sitter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cortex.admin import backend_checks
from cortex.backends import treesitter
from cortex.cli.main import cli


def test_doctor_lists_the_splitter_per_language(project: Path) -> None:
    out = CliRunner().invoke(cli, ["-C", str(project), "doctor", "--json"])
    checks = {c["name"]: c for c in json.loads(out.stdout)}
    detail = checks["code symbols"]["detail"]
    assert checks["code symbols"]["state"] == "ok"
    assert detail.startswith("tree-sitter for c, cpp, go, java, javascript, python, ruby, rust, typescript;")
    assert detail.endswith("regex splitter for csharp, kotlin, lua, php, scala, shell, sql, swift")


def test_without_grammars_doctor_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(treesitter, "installed_grammars", dict)
    check = backend_checks._symbols()
    assert (check.state, check.detail) == (
        "ok",
        "regex splitter for every language (no tree-sitter grammar installed)",
    )
    assert "cortex-memory[code]" in check.fix
