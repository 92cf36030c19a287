"""`cortex project-file` and `cortex import-projection` end to end, on a real project store."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from cortex.app import Cortex
from cortex.cli.main import cli
from cortex.core.model import EdgeType, Scope, Status
from cortex.paths import resolve_paths

WAL = "We use WAL mode so readers never block the writer"
QUEUE = "We chose Postgres advisory locks for the job queue"
LAYOUT = "Tests live under tests/ and mirror the package layout"
FABRIC = "Deploys run with Fabric from a developer laptop"
CACHE = "The CI cache must be cleared after bumping the lockfile"
DOCS = "Every public function has a docstring that says why"


def run(project: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["-C", str(project), *args], catch_exceptions=False)


def run_json(project: Path, *args: str) -> Any:
    result = run(project, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def remember(project: Path, text: str, kind: str, *more: str) -> str:
    memory_id: str = run_json(project, "remember", text, "-t", kind, *more)["memory"]["id"]
    return memory_id


def entry(memory_id: str, text: str) -> str:
    return f"### {memory_id}\n\n{text}\n"


def stored(project: Path) -> dict[str, Any]:
    with Cortex(resolve_paths(project)) as cx:
        store = cx.store(Scope.PROJECT, create=False)
        assert store is not None
        return {m.id: m for m in store.all_memories()}


def test_the_projection_round_trips(project: Path) -> None:
    wal, queue = remember(project, WAL, "decision"), remember(project, QUEUE, "decision")
    fabric, layout = remember(project, FABRIC, "architecture"), remember(project, LAYOUT, "pattern")
    written = run_json(project, "project-file")
    path = project / "docs" / "memory.md"
    assert written == {
        "path": str(path),
        "changed": True,
        "entries": [
            {"id": wal, "memory": wal, "type": "decision"},
            {"id": queue, "memory": queue, "type": "decision"},
            {"id": fabric, "memory": fabric, "type": "architecture"},
            {"id": layout, "memory": layout, "type": "pattern"},
        ],
    }
    original = path.read_text(encoding="utf-8")
    # By hand: change one entry, remove one, add one a teammate wrote (their clone's id) and
    # one written from scratch (`### new`).
    teammate = "0123456789"
    edited = (
        original.replace(WAL, WAL + " (and checkpoint on idle)")
        .replace(entry(queue, QUEUE) + "\n", "")
        .replace("## Gotchas\n", f"## Gotchas\n\n{entry(teammate, CACHE)}\n{entry('new', DOCS)}")
    )
    assert edited.count("###") == original.count("###") + 1
    path.write_text(edited, encoding="utf-8")

    done = run_json(project, "import-projection")
    assert done["unchanged"] == 2 and done["forgotten"] == [queue] and done["retyped"] == []
    assert [(s["old"], s["line"]) for s in done["superseded"]] == [(wal, 9)]
    teammates = done["added"][0]  # kept its id: every clone that imports the file agrees on it
    assert (teammates["id"], teammates["action"], teammates["type"]) == (teammate, "stored", "gotcha")
    new_id = done["added"][1]["id"]
    assert re.fullmatch(r"[0-9a-f]{10}", new_id) and done["added"][1]["action"] == "stored"

    rewritten = run_json(project, "project-file")
    assert rewritten["changed"] is True  # only the `### new` header takes its id
    assert path.read_text(encoding="utf-8") == edited.replace("### new\n", f"### {new_id}\n")

    memories = stored(project)
    successor = done["superseded"][0]["new"]
    assert memories[wal].status == Status.SUPERSEDED  # never lose a fact: the old text is kept
    assert memories[successor].content == WAL + " (and checkpoint on idle)"
    assert memories[queue].status == Status.ARCHIVED
    with Cortex(resolve_paths(project)) as cx:
        store = cx.store(Scope.PROJECT, create=False)
        assert store is not None
        edges = store.edges([wal])
    assert [e.source for e in edges if e.target == wal and e.type == EdgeType.SUPERSEDES] == [successor]


def test_a_second_import_adds_nothing(project: Path) -> None:
    remember(project, WAL, "decision")
    run_json(project, "project-file")
    path = project / "docs" / "memory.md"
    text = path.read_text(encoding="utf-8").replace("## Gotchas\n", f"## Gotchas\n\n{entry('new', CACHE)}")
    path.write_text(text.replace(WAL, WAL + " at all times"), encoding="utf-8")
    first = run_json(project, "import-projection")
    assert len(first["added"]) == 1 and len(first["superseded"]) == 1
    before = stored(project)
    second = run_json(project, "import-projection")
    assert second == {**second, "added": [], "superseded": [], "forgotten": [], "retyped": []}
    assert second["unchanged"] == 2
    assert stored(project) == before


def test_private_progress_and_global_memories_are_never_written(project: Path) -> None:
    shared = remember(project, WAL, "decision")
    remember(project, "The staging password rotates every Monday", "gotcha", "--tags", "ops,private")
    remember(project, "Half way through the parser refactor", "progress")
    remember(project, "I prefer short commit subjects", "preference")
    remember(project, "Always pin CI images by digest", "pattern", "--global")
    archived = remember(project, QUEUE, "decision")
    assert run(project, "forget", archived, "--yes").exit_code == 0
    written = run_json(project, "project-file")
    assert [e["id"] for e in written["entries"]] == [shared]
    text = (project / "docs" / "memory.md").read_text(encoding="utf-8")
    for absent in ("staging password", "parser refactor", "commit subjects", "pin CI images", QUEUE):
        assert absent not in text
    # The memories the file never showed are not "removed" by importing it.
    assert run_json(project, "import-projection")["forgotten"] == []


def test_a_memory_remembered_since_the_file_was_written_is_kept(project: Path) -> None:
    remember(project, WAL, "decision")
    run_json(project, "project-file")
    later = remember(project, QUEUE, "decision")
    assert run_json(project, "import-projection")["forgotten"] == []
    assert stored(project)[later].status == Status.ACTIVE
    assert [e["id"] for e in run_json(project, "project-file")["entries"]][-1] == later


def test_a_small_edit_still_supersedes(project: Path) -> None:
    wal = remember(project, WAL, "decision")
    run_json(project, "project-file")
    path = project / "docs" / "memory.md"
    path.write_text(path.read_text(encoding="utf-8").replace("writer", "writers"), encoding="utf-8")
    done = run_json(project, "import-projection")
    new = done["superseded"][0]["new"]
    assert new != wal and stored(project)[wal].status == Status.SUPERSEDED


def test_added_text_passes_the_redaction_gate(project: Path) -> None:
    run_json(project, "project-file")
    path = project / "docs" / "memory.md"
    secret = "AKIAIOSFODNN7EXAMPLE"
    note = f"The deploy key is {secret} <private>ask Sam</private> and lives in the vault"
    path.write_text(path.read_text(encoding="utf-8") + f"\n{entry('new', note)}", encoding="utf-8")
    added = run_json(project, "import-projection")["added"]
    content = stored(project)[added[0]["id"]].content
    assert secret not in content and "Sam" not in content and "vault" in content


def test_a_malformed_file_names_the_line_and_changes_nothing(project: Path) -> None:
    wal = remember(project, WAL, "decision")
    run_json(project, "project-file")
    path = project / "docs" / "memory.md"
    good = path.read_text(encoding="utf-8")
    broken = good.replace(WAL, WAL + " always") + f"\n{entry('new', CACHE)}\n## Ideas\n"
    path.write_text(broken, encoding="utf-8")
    before = stored(project)
    result = run(project, "import-projection")
    line = broken.splitlines().index("## Ideas") + 1
    assert result.exit_code == 1
    assert (
        f"{path}:{line}: unknown section 'Ideas'" in result.stderr and "nothing was imported" in result.stderr
    )
    assert stored(project) == before and before[wal].status == Status.ACTIVE
    path.write_text(good.replace(WAL, "\x00\x01\x02\x03\x04\x05\x06\x07"), encoding="utf-8")
    binary = run(project, "import-projection")
    assert binary.exit_code == 1 and f"{path}:9:" in binary.stderr and "binary" in binary.stderr
    missing = run(project, "import-projection", "--path", str(project / "nope.md"))
    assert missing.exit_code == 1 and "no projection file" in missing.stderr


def test_dry_run_and_json_documents(project: Path) -> None:
    wal = remember(project, WAL, "decision")
    other = project / "team.md"
    assert run_json(project, "project-file", "--path", str(other))["path"] == str(other)
    unchanged = run_json(project, "project-file", "--path", str(other))
    assert unchanged["changed"] is False
    other.write_text(other.read_text(encoding="utf-8").replace(WAL, QUEUE), encoding="utf-8")
    dry = run_json(project, "import-projection", "--path", str(other), "--dry-run")
    assert dry == {
        "path": str(other),
        "dry_run": True,
        "unchanged": 0,
        "added": [],
        "superseded": [{"line": 9, "old": wal, "new": None}],
        "forgotten": [],
        "retyped": [],
        "notes": [],
    }
    assert stored(project)[wal].status == Status.ACTIVE
    text = run(project, "import-projection", "--path", str(other))
    assert text.exit_code == 0 and "1 superseded" in text.stdout and f"supersedes {wal}" in text.stdout
