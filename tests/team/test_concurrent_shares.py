"""Eight processes over two clones store and share at once: nothing lost, nothing twice, the
team journal gap-free (a short run here; tests/stress/test_team_stress.py runs 60 s)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.support.postgres import postgres_dsn  # noqa: F401  (fixture)
from tests.support.team import ConcurrentRun, make_team, share_concurrently, team_store_dsn  # noqa: F401

SECONDS = 6.0
PROCESSES = 8


def check(run: ConcurrentRun) -> None:
    """0 lost, 0 duplicated, gap-free: what every concurrent sharing run must show."""
    assert run.errors == []
    assert len(run.shared) >= PROCESSES * 5
    wanted = set(run.shared) - run.unshared
    active = Counter(m.id for m in run.team_active)
    assert set(active) == wanted  # every acknowledged share is there, every unshare withdrawn
    assert max(active.values()) == 1
    texts = Counter(m.content for m in run.team_all)
    assert max(texts.values()) == 1  # no share written twice, under any id
    assert {m.content for m in run.team_active} == {run.shared[i] for i in wanted}
    assert {m.id: m.status.value for m in run.team_all if m.id in run.unshared} == dict.fromkeys(
        run.unshared, "archived"
    )
    assert run.journal_seqs == list(range(1, len(run.journal_seqs) + 1))


def test_eight_processes_share_at_once(tmp_path: Path, team_store_dsn: str) -> None:  # noqa: F811
    team = make_team(tmp_path, team_store_dsn)
    check(share_concurrently(team, PROCESSES, SECONDS))


@pytest.fixture(autouse=True)
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORTEX_EMBEDDER", "none")
