"""A transcript read again under a new cursor changes nothing: Claude Code 1.0 copies a resumed
session's history into the new session's file (uuids kept), and `cortex history import` reads
sessions the Stop hook captured live. Run through the Stop hook and the worker on the real
sessions of the shared set: before the store kept which records it had read, a re-read added
notes (a1: five manifest notes), revived replaced states (a2), retired current notes (a4, b2,
b3) and re-confirmed links."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from cortex.plugin import worker
from tests.support.runtime import queue_stop, snapshot
from tests.support.transcript_builders import FIXTURES

SESSIONS = FIXTURES.parent.parent / "benchmarks" / "sessions"
REAL = sorted(SESSIONS.glob("*/transcript.jsonl")) if SESSIONS.is_dir() else []


@pytest.fixture(autouse=True)
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORTEX_EMBEDDER", "none")


def replay(project: Path, transcript: Path, session: str) -> worker.WorkerReport:
    queue_stop(project, transcript, session)
    report = worker.run(project, lag_wait_s=0.0)
    assert report.failed == 0
    return report


def without_cursors(state: dict[str, Any]) -> dict[str, Any]:
    return {
        scope: None if held is None else {k: v for k, v in held.items() if k != "cursors"}
        for scope, held in state.items()
    }


@pytest.mark.skipif(not REAL, reason=f"the shared real sessions are not at {SESSIONS}")
@pytest.mark.parametrize("source", REAL, ids=lambda p: p.parent.name)
def test_a_real_session_read_again_under_a_new_cursor_changes_nothing(
    source: Path, project: Path, cortex_home: Path, tmp_path: Path
) -> None:
    transcript = tmp_path / "transcript.jsonl"
    shutil.copy(source, transcript)
    first = replay(project, transcript, "live")
    assert first.actions().get("stored", 0) > 0
    before = snapshot(project, cortex_home)
    again = replay(project, transcript, "imported")  # another session id: a cursor of its own
    assert again.actions() == {}
    after = snapshot(project, cortex_home)
    assert after["project"]["cursors"] != before["project"]["cursors"]
    assert without_cursors(after) == without_cursors(before)
