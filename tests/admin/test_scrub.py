"""`cortex scrub`: secrets an older version stored are redacted in place, nothing is merged."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from cortex.app import Cortex
from cortex.cli.main import cli
from cortex.core.model import Candidate, Layer, MemoryType, Scope, Source
from cortex.core.write.apply import new_memory
from cortex.paths import resolve_paths
from tests.support.redaction_corpus import secret_plantings

PLANTED = [p for p in secret_plantings() if p.way in ("plain", "prose")][:12]


def run(project: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["-C", str(project), *args], catch_exceptions=False)


def _old_store(project: Path) -> list[str]:
    """Memories written as an older version would have: secrets in text, tags and branch."""
    cx = Cortex(resolve_paths(project))
    ids = []
    try:
        store = cx.write_store(Scope.PROJECT)
        with store.transaction():
            for i, p in enumerate(PLANTED):
                cand = Candidate(f"deploy note: {p.text}", MemoryType.CONTEXT, Layer.USER, tags=(p.secret,))
                m = new_memory(f"{i:010x}", cand, Scope.PROJECT, Source(branch=f"fix/{p.secret}"), cx.now())
                store.insert_memory(m, cx.actor, cx.now())
                ids.append(m.id)
            # two notes that differ only by their secret
            for j, p in enumerate(PLANTED[::2][:2]):
                cand = Candidate(f"the staging token is {p.secret}", MemoryType.CONTEXT, Layer.USER)
                m = new_memory(f"{100 + j:010x}", cand, Scope.PROJECT, Source(), cx.now())
                store.insert_memory(m, cx.actor, cx.now())
                ids.append(m.id)
    finally:
        cx.close()
    return ids


def test_scrub_redacts_stored_secrets_and_keeps_every_note(project: Path) -> None:
    ids = _old_store(project)
    dry = run(project, "scrub", "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.stdout)["changed"] == len(ids)
    result = run(project, "scrub", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["changed"] == len(ids)
    project_report = doc["stores"][0]
    assert project_report["scope"] == "project" and project_report["text_index_rebuilt"] is True
    assert {c["id"] for c in project_report["changed"]} == set(ids)
    cx = Cortex(resolve_paths(project))
    try:
        store = cx.write_store(Scope.PROJECT)
        memories = {m.id: m for m in store.all_memories()}
        assert set(ids) <= set(memories)  # nothing merged or lost
        assert len({memories[i].content for i in ids}) == len(ids)
        for m in memories.values():
            text = " ".join([m.content, m.summary, *m.tags, m.source.branch or ""])
            assert not any(p.secret in text for p in PLANTED)
    finally:
        cx.close()
    again = run(project, "scrub", "--json")
    assert json.loads(again.stdout)["changed"] == 0  # idempotent
    for p in PLANTED[:4]:
        found = run(project, "recall", p.secret[:24])
        assert p.secret not in found.output


def _disk(project: Path) -> bytes:
    """The store's files as they lie on disk: the database, its WAL and shared memory."""
    return b"".join(p.read_bytes() for p in sorted((project / ".memory").glob("cortex.db*")) if p.is_file())


def test_scrub_takes_the_secret_out_of_the_journal_and_the_files_and_history_still_replays(
    project: Path,
) -> None:
    ids = _old_store(project)
    with_vectors = run(project, "recall", "deploy note")  # the keyword index holds the old terms too
    assert with_vectors.exit_code == 0
    before = _disk(project)
    assert all(p.secret.encode() in before for p in PLANTED)  # memories, keyword index and journal
    assert json.loads(run(project, "audit", "--json").stdout)["stores"][0]["integrity"]["journal_replay_ok"]

    doc = json.loads(run(project, "scrub", "--json").stdout)["stores"][0]
    # every planted note was inserted with its secret: each insert record is rewritten
    assert doc["journal_records_scrubbed"] >= len(ids) and doc["journal_records_with_secrets"] == 0
    assert doc["file_compacted"] is True

    after = _disk(project)
    assert [p.kind for p in PLANTED if p.secret.encode() in after] == []
    rules = project / ".claude" / "rules" / "cortex-memory.md"
    assert not rules.exists() or not any(p.secret in rules.read_text() for p in PLANTED)
    cx = Cortex(resolve_paths(project))
    try:
        store = cx.write_store(Scope.PROJECT)
        assert set(ids) <= {m.id for m in store.all_memories()}  # no note lost
        rows = store.journal_rows()
        assert not any(p.secret in json.dumps(r["payload"]) for r in rows for p in PLANTED)
        assert [r["payload"] for r in rows if r["op"] == "scrub" and r["memory_id"] is None] == [
            {"journal_records_redacted": doc["journal_records_scrubbed"]}
        ]
    finally:
        cx.close()
    verify = run(project, "rebuild", "--verify", "--json")
    assert verify.exit_code == 0, verify.output
    assert all(r["history_ok"] and r["same"] for r in json.loads(verify.stdout))
    audit = json.loads(run(project, "audit", "--json").stdout)["stores"][0]
    assert audit["integrity"]["journal_replay_ok"] is True and audit["health"]["secrets"] == []
    again = json.loads(run(project, "scrub", "--json").stdout)["stores"][0]
    assert again["journal_records_scrubbed"] == 0 and again["changed"] == []  # nothing left to do
