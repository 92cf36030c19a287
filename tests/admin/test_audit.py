"""`cortex audit` finds each kind of damage and health problem; `--fix` repairs the derived ones;
`cortex doctor` fails on a damaged store instead of saying ok."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from cortex.admin.audit import audit
from cortex.app import Cortex
from cortex.backends.port import Choice
from cortex.capture import manual
from cortex.cli.main import cli
from cortex.core.lifecycle.health import junk_kind
from cortex.core.model import Candidate, Edge, EdgeStatus, EdgeType, Layer, MemoryType, Scope, Source
from cortex.core.text import content_hash
from cortex.core.write.apply import new_memory
from cortex.paths import resolve_paths
from tests.support.fakes import FakeEmbedder
from tests.support.secrets_corpus import GITHUB_PAT

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
NOTES = [
    "We use WAL mode so readers never block the writer",
    "The staging deploy runs from the release branch every Thursday",
    "Payment webhooks are retried by the provider for 72 hours",
    "The importer skips rows whose checksum is already in the ledger",
    "Settings read the cache address from app/config.py at startup",
]


@pytest.fixture
def acx(project: Path) -> Iterator[Cortex]:
    fake = FakeEmbedder(dim=32)
    clock = iter(T0 + timedelta(seconds=i) for i in range(1_000_000))
    cx = Cortex(
        resolve_paths(project),
        clock=lambda: next(clock),
        query_embedder=Choice(fake, "fake embedder"),
        bulk_embedder=Choice(fake, "fake embedder"),
    )
    try:
        yield cx
    finally:
        cx.close()


def plant(cx: Cortex, content: str) -> str:
    """A memory written past the gate, as an old version or a concurrent session could."""
    cand = Candidate(content=content, type=MemoryType.CONTEXT, layer=Layer.USER)
    m = new_memory(f"planted{content_hash(content)[:8]}", cand, Scope.PROJECT, Source(), cx.now())
    assert m.content_hash == content_hash(content)
    with cx.writing(Scope.PROJECT) as store:
        store.insert_memory(m, "test", cx.now())
    return m.id


def damaged(cx: Cortex) -> dict[str, object]:
    ids = [manual.remember(cx, text, mem_type="context").memory.id for text in NOTES]
    dup = plant(cx, NOTES[0] + ".")
    secret = plant(cx, f"The deploy bot token is {GITHUB_PAT} for the mirror job")
    store = cx.store(Scope.PROJECT, create=False)
    assert store is not None
    with store.transaction():
        store.delete_vectors([ids[1]])
        store.upsert_edge(
            Edge("missing-a", "missing-b", EdgeType.RELATES_TO, 0.5, EdgeStatus.ACTIVE, cx.now()),
            "test",
            cx.now(),
        )
    con = sqlite3.connect(store.path)
    try:  # five keyword rows gone, as a damaged file would lose them
        rows = [r[0] for r in con.execute("SELECT n FROM memories ORDER BY n LIMIT 5")]
        con.executemany("DELETE FROM memories_fts WHERE rowid = ?", [(r,) for r in rows])
        con.commit()
    finally:
        con.close()
    return {"ids": ids, "dup": dup, "secret": secret}


def test_audit_finds_each_planted_problem_and_fix_repairs_the_derived_ones(acx: Cortex) -> None:
    planted = damaged(acx)
    (found,) = audit(acx)
    assert not found.text_index_ok
    missing = [set(ids) for ids in found.missing_vectors.values() if ids]
    assert missing == [{planted["ids"][1], planted["dup"], planted["secret"]}]  # type: ignore[index]
    assert found.dangling_edges == [("missing-a", "missing-b", "relates_to")]
    assert found.replay_ok
    assert (planted["ids"][0], planted["dup"]) in found.health.duplicates or (  # type: ignore[index]
        planted["dup"],
        planted["ids"][0],  # type: ignore[index]
    ) in found.health.duplicates
    assert found.health.secrets == [planted["secret"]]
    assert len(found.problems) == 3

    (fixed,) = audit(acx, fix=True)
    assert fixed.checkpoint is not None and fixed.problems == []
    assert len(fixed.fixed) == 3
    (again,) = audit(acx)
    assert again.problems == [] and again.replay_ok
    # Content findings are for a person (or `consolidate` / `scrub`): the audit never edits memories.
    assert again.health.secrets == [planted["secret"]] and again.health.duplicates


def test_audit_json_and_exit_status(acx: Cortex, project: Path) -> None:
    damaged(acx)
    acx.close()
    runner = CliRunner()
    first = runner.invoke(cli, ["-C", str(project), "audit", "--json"], env={"CORTEX_EMBEDDER": "none"})
    assert first.exit_code == 1, first.output
    doc = json.loads(first.output)
    (store,) = doc["stores"]
    assert not store["integrity"]["ok"] and store["integrity"]["dangling_edges"]
    assert store["health"]["secrets"] and store["health"]["duplicate_pairs"]


def test_doctor_fails_on_a_damaged_store(acx: Cortex, project: Path) -> None:
    manual.remember(acx, NOTES[0], mem_type="context")
    acx.close()
    runner = CliRunner()
    env = {"CORTEX_EMBEDDER": "none"}
    assert "[ok  ] project store" in runner.invoke(cli, ["-C", str(project), "doctor"], env=env).output
    store = Cortex(resolve_paths(project)).store(Scope.PROJECT, create=False)
    assert store is not None
    with store.transaction():
        store.upsert_edge(Edge("gone-1", "gone-2", EdgeType.RELATES_TO, 0.5, EdgeStatus.ACTIVE, T0), "t", T0)
    path = store.path
    store.close()
    con = sqlite3.connect(path)
    try:
        con.execute("DELETE FROM memories_fts WHERE rowid = (SELECT min(n) FROM memories)")
        con.commit()
    finally:
        con.close()
    out = runner.invoke(cli, ["-C", str(project), "doctor"], env=env)
    assert out.exit_code == 1
    line = next(ln for ln in out.output.splitlines() if "project store" in ln)
    assert line.startswith("[FAIL]") and "edges point at memories the store lacks" in line
    assert "keyword index disagrees" in line
    fixed = runner.invoke(cli, ["-C", str(project), "audit", "--fix"], env=env)
    assert fixed.exit_code == 0, fixed.output
    again = runner.invoke(cli, ["-C", str(project), "doctor"], env=env).output
    assert "[ok  ] project store" in again


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("ok", "boilerplate"),
        ("Thanks!", "boilerplate"),
        ("the cache", "fragment"),
        ("$ ls -la\ntotal 48\ndrwxr-xr-x 2 a a 4096 .", "tool noise"),
        ("We use WAL mode so readers never block the writer", None),
    ],
)
def test_junk_kinds(text: str, kind: str | None) -> None:
    assert junk_kind(text) == kind
