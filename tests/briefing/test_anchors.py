"""Code anchors against a real git repository: edits, renames and deletions mark exactly the
memories whose code they touched, in recall (text and --json), the briefing and the audit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cortex.admin.audit import audit
from cortex.app import Cortex
from cortex.briefing.deliver import render_current
from cortex.capture.codeindex import index_code
from cortex.capture.manual import remember
from cortex.core.briefing.compose import BriefingPart
from cortex.core.model import Scope, Source
from cortex.core.output.documents import recall_to_dict
from cortex.core.recall.decide import RecallRequest
from cortex.lifecycle.staleness import STALE_CONFIDENCE_FACTOR, after_turn
from cortex.recall.search import recall, render_result
from tests.conftest import git

CONFIG = '''"""Settings of the app."""


class Settings:
    """Where the app finds its services."""

    cache_url = "REDIS_URL"


def load_settings(path):
    """Read settings from a file, else defaults."""
    return Settings()
'''
DB = '''def connect(url):
    """Open a connection, retrying three times."""
    return url
'''
OLD = '''def legacy_payload(data):
    """Turn a v1 payload into a v2 one."""
    return data
'''
UTIL = """def slugify(text):
    return text.lower()
"""
NOTES = {
    "settings": "Settings in app/config.py reads the cache from REDIS_URL",
    "loader": "load_settings in app/config.py falls back to defaults when the file is missing",
    "db": "connect in app/db.py retries three times before it gives up",
    "legacy": "legacy_payload in app/old.py turns v1 payloads into v2 ones",
    "util": "app/util.py holds the string helpers such as slug making",
    "plain": "we deploy on Fridays only after the staging soak",
}


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def anchored(cx: Cortex, project: Path) -> dict[str, str]:
    """Four files committed, a note about each (and one about none); returns note key -> id."""
    for rel, text in (
        ("app/config.py", CONFIG),
        ("app/db.py", DB),
        ("app/old.py", OLD),
        ("app/util.py", UTIL),
    ):
        write(project, rel, text)
    git(project, "add", "app")
    git(project, "commit", "-q", "-m", "the app")
    return {key: remember(cx, text).memory.id for key, text in NOTES.items()}


def change_code(project: Path) -> dict[str, str]:
    """Edit Settings, delete app/old.py, rename app/util.py: one commit each; returns their shas."""
    write(project, "app/config.py", CONFIG.replace("REDIS_URL", "VALKEY_URL"))
    git(project, "commit", "-q", "-am", "valkey")
    edited = git(project, "rev-parse", "HEAD").strip()
    git(project, "rm", "-q", "app/old.py")
    git(project, "commit", "-q", "-m", "no more v1")
    deleted = git(project, "rev-parse", "HEAD").strip()
    git(project, "mv", "app/util.py", "app/text.py")
    git(project, "commit", "-q", "-m", "rename")
    renamed = git(project, "rev-parse", "HEAD").strip()
    return {"edited": edited, "deleted": deleted, "renamed": renamed}


def recalled_marks(cx: Cortex, *queries: str) -> dict[str, str | None]:
    """Hit id -> its `stale` field in `recall --json`, over a recall of each query."""
    out: dict[str, str | None] = {}
    for query in queries:
        doc = recall_to_dict(recall(cx, RecallRequest(query, limit=10), record=False))
        out.update((h["memory"]["id"], h["stale"]) for h in doc["hits"])
    return out


def test_anchors_record_the_symbols_and_files_a_note_names(cx: Cortex, anchored: dict[str, str]) -> None:
    store = cx.store(Scope.PROJECT, create=False)
    assert store is not None
    found = store.read_anchors()
    labels = {key: sorted(a.label for a in found.get(mid, [])) for key, mid in anchored.items()}
    assert labels == {
        "settings": ["app/config.py:Settings"],
        "loader": ["app/config.py:load_settings"],
        "db": ["app/db.py:connect"],
        "legacy": ["app/old.py:legacy_payload"],
        "util": ["app/util.py"],
        "plain": [],
    }


def test_nothing_is_marked_until_a_commit_changes_the_code(cx: Cortex, anchored: dict[str, str]) -> None:
    write(cx.paths.root, "app/config.py", CONFIG.replace("REDIS_URL", "VALKEY_URL"))  # not committed
    marks = recalled_marks(cx, *NOTES.values())
    assert set(anchored.values()) <= set(marks)
    assert all(mark is None for mark in marks.values())


def test_edits_renames_and_deletions_mark_exactly_the_affected_memories(
    cx: Cortex, project: Path, anchored: dict[str, str]
) -> None:
    shas = change_code(project)
    ids = anchored
    marks = recalled_marks(cx, *NOTES.values())
    assert set(ids.values()) <= set(marks)
    assert marks[ids["settings"]] is not None
    assert re.fullmatch(
        rf"may be stale: `app/config\.py:Settings` changed in {shas['edited'][:7]} \(.* after this note\)",
        marks[ids["settings"]] or "",
    )
    assert (marks[ids["legacy"]] or "").startswith(
        f"stale: `app/old.py:legacy_payload` deleted in {shas['deleted'][:7]} ("
    )
    assert (marks[ids["util"]] or "").startswith(
        f"stale: `app/util.py` renamed to `app/text.py` in {shas['renamed'][:7]}"
    )
    for untouched in ("loader", "db", "plain"):
        assert marks[ids[untouched]] is None, untouched

    text = render_result(recall(cx, RecallRequest("Settings REDIS_URL cache", limit=5), record=False))
    assert f"_{marks[ids['settings']]}_" in text

    full = render_current(cx).parts[BriefingPart.FULL].text
    entry = {mid: line for line in full.splitlines() for mid in ids.values() if line.startswith(f"- {mid} ")}
    assert set(entry) == set(ids.values())
    assert "(may be stale: `app/config.py:Settings` changed in" in entry[ids["settings"]]
    assert "(stale: `app/old.py:legacy_payload` deleted in" in entry[ids["legacy"]]
    assert "(stale: `app/util.py` renamed to `app/text.py` in" in entry[ids["util"]]
    for untouched in ("loader", "db", "plain"):
        assert "stale" not in entry[ids[untouched]], untouched
    moment = render_current(cx).parts[BriefingPart.MOMENT].text
    assert "Code changed since 3 note(s) were written:" in moment
    stable = render_current(cx).parts[BriefingPart.STABLE].text
    assert "stale" not in stable  # the rules file reads the same at any HEAD


def test_the_worker_demotes_once_and_index_code_refreshes_in_place(
    cx: Cortex, project: Path, anchored: dict[str, str]
) -> None:
    store = cx.store(Scope.PROJECT, create=False)
    assert store is not None
    assert after_turn(cx, {}) == []  # nothing changed since the notes were anchored
    before = store.get_many(anchored.values())
    change_code(project)
    demoted = after_turn(cx, {})
    assert sorted(demoted) == sorted(anchored[k] for k in ("settings", "legacy", "util"))
    after = store.get_many(anchored.values())
    for mid in demoted:
        assert after[mid].confidence == round(before[mid].confidence * STALE_CONFIDENCE_FACTOR, 4)
    assert after_turn(cx, {}) == []  # the same HEAD: checked already
    (audited,) = audit(cx)
    assert audited.replay_ok and not audited.problems  # the demotion is journaled like any update
    git(project, "commit", "-q", "--allow-empty", "-m", "later")
    assert after_turn(cx, {}) == []  # a new HEAD, but each change demotes once

    report = index_code(cx, "app/config.py")
    assert "app/config.py:Settings" in report.stored
    code = store.tagged("app/config.py:Settings", ("code",))[0]
    marks = recalled_marks(cx, "class Settings cache_url VALKEY_URL")
    assert code.id in marks and marks[code.id] is None
    write(project, "app/config.py", CONFIG.replace("REDIS_URL", "MEMCACHED_URL"))
    git(project, "commit", "-q", "-am", "memcached")
    marks = recalled_marks(cx, "class Settings cache_url VALKEY_URL")
    assert (marks.get(code.id) or "").startswith("may be stale: `app/config.py:Settings` changed in")
    index_code(cx, "app/config.py")  # refreshed in place: the same memory, anchored anew
    refreshed = store.tagged("app/config.py:Settings", ("code",))[0]
    assert refreshed.id == code.id and "MEMCACHED_URL" in refreshed.content
    marks = recalled_marks(cx, "class Settings cache_url MEMCACHED_URL")
    assert code.id in marks and marks[code.id] is None


def test_audit_finds_a_stale_anchor(cx: Cortex, project: Path, anchored: dict[str, str]) -> None:
    (clean,) = audit(cx)
    assert clean.health.stale == {}
    change_code(project)
    (found,) = audit(cx)
    assert set(found.health.stale) == {anchored[k] for k in ("settings", "legacy", "util")}
    assert found.health.stale[anchored["settings"]].startswith("may be stale: `app/config.py:Settings`")
    assert found.health.rate(len(found.health.stale)) == round(3 / found.health.memories, 4)


def test_recall_marks_a_memory_whose_files_are_all_gone_as_the_briefing_does(
    cx: Cortex, project: Path
) -> None:
    write(project, "docs/runbook.md", "# runbook\n")
    git(project, "add", "docs")
    git(project, "commit", "-q", "-m", "runbook")
    (project / "docs" / "runbook.md").unlink()  # gone before the note: nothing to anchor
    gone = remember(cx, "the runbook covers the restore drill", source=Source(files=("docs/runbook.md",)))
    kept = remember(cx, "the readme covers the restore drill too", source=Source(files=("README.md",)))
    assert cx.store(Scope.PROJECT, create=False).read_anchors([gone.memory.id]) == {}  # type: ignore[union-attr]
    marks = recalled_marks(cx, "restore drill runbook readme")
    assert marks[kept.memory.id] is None and marks[gone.memory.id] is None  # still at HEAD
    git(project, "commit", "-q", "-am", "no runbook")
    marks = recalled_marks(cx, "restore drill runbook readme")
    assert marks == {gone.memory.id: "stale: file gone", kept.memory.id: None}
    assert render_current(cx).stale == {gone.memory.id}


def test_the_worker_anchors_what_a_turn_captured(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support.runtime import (
        SESSION,
        assistant_record,
        capture,
        open_store,
        user_record,
        write_transcript,
    )

    monkeypatch.setenv("CORTEX_EMBEDDER", "none")
    write(project, "app/config.py", CONFIG)
    git(project, "add", "app")
    git(project, "commit", "-q", "-m", "config")
    note = "[MEMORY: gotcha] Settings in app/config.py reads the cache URL from REDIS_URL at import time."
    records = [
        user_record("Where does the cache URL come from?", uuid="u1", sessionId=SESSION),
        assistant_record("msg_1", {"type": "text", "text": note}, uuid="a1", sessionId=SESSION),
    ]
    capture(project, write_transcript(project.parent / "t.jsonl", records))
    store = open_store(project / ".memory" / "cortex.db", Scope.PROJECT)
    try:
        (memory,) = [m for m in store.list_memories() if "REDIS_URL" in m.content]
        assert [a.label for a in store.read_anchors([memory.id])[memory.id]] == ["app/config.py:Settings"]
    finally:
        store.close()
