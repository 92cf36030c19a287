"""The journal only grows: writes, consolidations, rollbacks and restores never delete a record,
and replaying the whole history (restores included) gives the live state's digest."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cortex.app import Cortex
from cortex.capture import manual
from cortex.cli.main import cli
from cortex.config import Settings
from cortex.core.model import Memory, Scope
from cortex.core.replay import replay
from cortex.errors import NotFound
from cortex.lifecycle import recovery
from cortex.lifecycle import upkeep as lifecycle
from cortex.paths import resolve_paths
from tests.conftest import git

T0 = datetime(2025, 6, 1, 9, 0, tzinfo=UTC)
WAL = "We use WAL mode for the SQLite store because several sessions write at the same time"
RETYPINGS = ("", ".", "!", " indeed", " as agreed", " (see the notes)", " for now", " too")
OPS = ("write", "duplicate", "access", "consolidate", "rollback", "restore")


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def new_project(root: Path) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("# demo\n", encoding="utf-8")
    git(root, "add", "README.md")
    git(root, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "init")
    return root


def history(cx: Cortex) -> list[dict[str, Any]]:
    store = cx.store(Scope.PROJECT, create=False)
    return [] if store is None else store.journal_rows()


def replay_matches(cx: Cortex) -> bool:
    store = cx.store(Scope.PROJECT, create=False)
    if store is None:
        return True
    return replay(store.journal_rows()).digest().digest == store.state_digest().digest


def run(op: str, cx: Cortex, make_memory: Callable[..., Memory], counter: itertools.count[int]) -> None:
    n = next(counter)
    if op == "write":
        manual.remember(cx, f"service {n} keeps its cache in region eu-{n}", mem_type="context")
    elif op == "duplicate":  # as a concurrent session would: past the gate, for consolidation
        suffix = RETYPINGS[n % len(RETYPINGS)]
        with cx.writing(Scope.PROJECT) as store:
            if store.by_hash(make_memory(WAL + suffix).content_hash) is None:
                m = make_memory(WAL + suffix, created=cx.now(), updated=cx.now(), access_count=n % 3)
                store.insert_memory(m, "test", cx.now())
    elif op == "access":
        with cx.writing(Scope.PROJECT) as store:
            ids = store.active_ids()[:2]
            store.record_access(ids, cx.now(), "test")
    elif op == "consolidate":
        lifecycle.consolidate(cx)
    elif op == "rollback":
        with contextlib.suppress(NotFound):
            recovery.rollback(cx)
    elif op == "restore":
        found = recovery.list_all_checkpoints(cx)
        if found:
            recovery.restore(cx, found[n % len(found)].name)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.sampled_from(OPS), min_size=1, max_size=10))
def test_the_journal_only_grows_and_replays_to_the_live_state(
    ops: list[str], tmp_path: Path, make_memory: Callable[..., Memory]
) -> None:
    root = new_project(tmp_path / f"p{next(_projects)}")
    cx = Cortex(resolve_paths(root), Settings(embedder="none"), clock=Clock())
    counter = itertools.count(1)
    try:
        run("duplicate", cx, make_memory, counter)
        before = history(cx)
        for op in ops:
            run(op, cx, make_memory, counter)
            after = history(cx)
            assert after[: len(before)] == before, f"{op} rewrote the journal"
            assert len(after) >= len(before)
            assert replay_matches(cx), f"the journal does not replay to the state after {op}"
            before = after
    finally:
        cx.close()


_projects = itertools.count()


def test_rollback_appends_and_rebuild_verify_replays_it(
    tmp_path: Path, make_memory: Callable[..., Memory]
) -> None:
    root = new_project(tmp_path / "p")
    cx = Cortex(resolve_paths(root), Settings(embedder="none"), clock=Clock())
    counter = itertools.count(1)
    try:
        for _ in range(3):
            run("duplicate", cx, make_memory, counter)
        run("write", cx, make_memory, counter)
        n0 = len(history(cx))
        report = lifecycle.consolidate(cx)
        assert report.stores[0].applied  # the re-typings were merged
        n1 = len(history(cx))
        recovery.rollback(cx)
        n2 = len(history(cx))
        assert n0 < n1 < n2
        assert {r["op"] for r in history(cx)[n1:]} >= {"restore_memory", "checkpoint-restore"}
    finally:
        cx.close()
    result = CliRunner().invoke(cli, ["-C", str(root), "rebuild", "--verify"])
    assert result.exit_code == 0, result.output
    assert "journal replay" in result.output and "DIFFERENT" not in result.output
