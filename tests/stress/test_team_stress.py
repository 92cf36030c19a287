"""Team memory under load: 8 processes across two clones store and share for 60 s against a
real PostgreSQL: 0 lost, 0 duplicated, the team journal gap-free."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.postgres import postgres_dsn  # noqa: F401  (fixture)
from tests.support.team import make_team, share_concurrently
from tests.team.test_concurrent_shares import PROCESSES, check

SECONDS = 60.0


@pytest.mark.slow
def test_eight_processes_share_for_a_minute(
    tmp_path: Path,
    postgres_dsn: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("CORTEX_EMBEDDER", "none")
    run = share_concurrently(make_team(tmp_path, postgres_dsn), PROCESSES, SECONDS)
    check(run)
    with capsys.disabled():
        print(
            f"\nteam stress: {len(run.shared)} shared, {len(run.unshared)} unshared, "
            f"{len(run.team_active)} active in the team store, journal 1..{len(run.journal_seqs)}"
        )
