"""Lifecycle use cases on real stores: the tick, consolidation, checkpoints, rollback, crash safety."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from cortex.app import Cortex
from cortex.cli.main import cli
from cortex.config import Settings
from cortex.core.model import Edge, EdgeStatus, EdgeType, Memory, MemoryType, Scope, Source, Status
from cortex.core.recall.decide import RecallRequest
from cortex.core.text import content_hash
from cortex.errors import NotFound
from cortex.lifecycle import recovery
from cortex.lifecycle import upkeep as lifecycle
from cortex.paths import resolve_paths
from cortex.recall.search import recall
from cortex.shell import failpoints
from cortex.store.packing import pack, unpack
from cortex.store.sqlite import checkpoint
from cortex.store.sqlite.store import Store

T0 = datetime(2025, 6, 1, 9, 0, tzinfo=UTC)
WAL = "We use WAL mode for the SQLite store because several sessions write at the same time"
WAL_B = "We use WAL mode for the SQLite store because several sessions write at the same time, always"


class Clock:
    """A settable clock for the Cortex context."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, days: float) -> None:
        self.now += timedelta(days=days)


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
def lcx(project: Path, clock: Clock) -> Iterator[Cortex]:
    context = Cortex(resolve_paths(project), Settings(embedder="none"), clock=clock)
    try:
        yield context
    finally:
        context.close()


def put(cx: Cortex, make_memory: Callable[..., Memory], content: str, **fields: object) -> Memory:
    """Store a memory as it is (like a concurrent session or an import would), journaled."""
    fields.setdefault("created", cx.now())
    fields.setdefault("updated", cx.now())
    m = make_memory(content, **fields)
    with cx.writing(Scope.PROJECT) as store:
        store.insert_memory(m, "test", cx.now())
    return m


def project_store(cx: Cortex) -> Store:
    store = cx.store(Scope.PROJECT, create=False)
    assert store is not None
    return store


def digest(cx: Cortex) -> str:
    return project_store(cx).state_digest().digest


def status_of(cx: Cortex, mid: str) -> Status:
    m = project_store(cx).get(mid)
    assert m is not None
    return m.status


# -- the tick -----------------------------------------------------------------------------------
def test_tick_archives_and_prunes_progress_but_never_decisions(
    lcx: Cortex, clock: Clock, make_memory: Callable[..., Memory]
) -> None:
    progress = put(lcx, make_memory, "Edited cortex/worker.py", type=MemoryType.PROGRESS, confidence=0.6)
    decision = put(lcx, make_memory, "We chose SQLite over Postgres", type=MemoryType.DECISION)
    seen: dict[str, list[Status]] = {"p": [], "d": []}
    for _ in range(60):
        clock.advance(1)
        lifecycle.tick(lcx)
        seen["p"].append(status_of(lcx, progress.id))
        seen["d"].append(status_of(lcx, decision.id))
    assert set(seen["d"]) == {Status.ACTIVE}
    p = seen["p"]
    # crosses 0.3 on day 7, archived 14 days later, pruned 30 days after that
    assert p.index(Status.ARCHIVED) + 1 == 21
    assert p.index(Status.PRUNED) + 1 == 51
    kept = project_store(lcx).get(decision.id)
    assert kept is not None and kept.confidence == decision.confidence
    ops = [r["op"] for r in project_store(lcx).journal_rows() if r["memory_id"] == progress.id]
    assert ops[0] == "insert" and "decay" in ops
    assert ops[-2:] == ["archive", "prune"]


def test_dry_run_reports_the_same_changes_and_writes_nothing(
    lcx: Cortex, clock: Clock, make_memory: Callable[..., Memory]
) -> None:
    put(lcx, make_memory, "Edited a.py", type=MemoryType.PROGRESS, confidence=0.6)
    put(lcx, make_memory, "Tests fail on Windows paths", type=MemoryType.CONTEXT, confidence=0.7)
    clock.advance(40)
    before, journal = digest(lcx), len(project_store(lcx).journal_rows())
    dry = lifecycle.tick(lcx, dry_run=True)
    assert digest(lcx) == before and len(project_store(lcx).journal_rows()) == journal
    real = lifecycle.tick(lcx)
    assert dry.counts() == real.counts() == {"archive": 1, "decay": 1}


def test_a_recall_restores_an_archived_memory(
    lcx: Cortex, clock: Clock, make_memory: Callable[..., Memory]
) -> None:
    m = put(lcx, make_memory, "The flaky upload test needs a retry", type=MemoryType.CONTEXT, confidence=0.35)
    clock.advance(30)
    lifecycle.tick(lcx)
    assert status_of(lcx, m.id) is Status.ARCHIVED
    result = recall(lcx, RecallRequest(text="flaky upload test retry"))
    assert [h.memory.id for h in result.hits] == [m.id]
    assert status_of(lcx, m.id) is Status.ACTIVE
    lifecycle.tick(lcx)  # a fresh grace period: not archived again at once
    assert status_of(lcx, m.id) is Status.ACTIVE


def test_hubs_are_not_archived(lcx: Cortex, clock: Clock, make_memory: Callable[..., Memory]) -> None:
    hub = put(lcx, make_memory, "Run the worker with --once", type=MemoryType.CONTEXT, confidence=0.2)
    others = [put(lcx, make_memory, f"Worker note {i}", type=MemoryType.DECISION) for i in range(3)]
    with lcx.writing(Scope.PROJECT) as store:
        for o in others:
            store.upsert_edge(Edge(o.id, hub.id, EdgeType.RELATES_TO, 1.0), "test", lcx.now())
    clock.advance(60)
    lifecycle.tick(lcx)
    assert status_of(lcx, hub.id) is Status.ACTIVE
    stored = project_store(lcx).get(hub.id)
    assert stored is not None and stored.centrality == 1.0


def test_pruned_memories_leave_the_vector_index(
    lcx: Cortex, clock: Clock, make_memory: Callable[..., Memory]
) -> None:
    m = put(lcx, make_memory, "Edited b.py", type=MemoryType.PROGRESS, confidence=0.6)
    store = project_store(lcx)
    if not store.vectors:
        pytest.fail("sqlite-vec must load in the test environment (sqlean.py is a dependency)")
    with store.transaction():
        table = store.ensure_vector_index("fake-4", 4, lcx.now())
        store.write_vectors(table, [(m.id, pack([1.0, 0.0, 0.0, 0.0]))])
    clock.advance(30)
    lifecycle.tick(lcx)
    assert store.read_vectors(table, [m.id])
    clock.advance(31)
    lifecycle.tick(lcx)
    assert status_of(lcx, m.id) is Status.PRUNED
    assert store.read_vectors(table, [m.id]) == {}


# -- consolidation, checkpoints, rollback ---------------------------------------------------------
def _duplicates(cx: Cortex, make_memory: Callable[..., Memory]) -> tuple[Memory, Memory]:
    a = put(cx, make_memory, WAL, access_count=2, source=Source(session_id="s1", files=("db.py",)))
    b = put(cx, make_memory, WAL_B, access_count=3, source=Source(session_id="s2", files=("store.py",)))
    return a, b


def test_consolidation_merges_keeps_provenance_and_rollback_restores_exactly(
    lcx: Cortex, clock: Clock, make_memory: Callable[..., Memory]
) -> None:
    a, b = _duplicates(lcx, make_memory)
    clock.advance(1)
    before = digest(lcx)
    report = lifecycle.consolidate(lcx)
    (store_report,) = report.stores
    assert store_report.checkpoint is not None and store_report.checkpoint.digest == before
    assert [m.keeper.id for m in store_report.applied] == [b.id]
    keeper = project_store(lcx).get(b.id)
    assert keeper is not None and keeper.access_count == 5
    assert set(keeper.source.files) == {"db.py", "store.py"}
    assert status_of(lcx, a.id) is Status.SUPERSEDED
    edges = project_store(lcx).edges([b.id])
    assert any(e.type is EdgeType.DERIVED_FROM and e.target == a.id for e in edges)
    journal = project_store(lcx).journal_rows()
    assert any(r["op"] == "merge" and r["payload"].get("absorbed") == [a.id] for r in journal)
    hits = recall(lcx, RecallRequest(text="WAL mode SQLite sessions"), record=False).hits
    assert [h.memory.id for h in hits] == [b.id]
    assert digest(lcx) != before

    clock.advance(1)
    undone = lifecycle.rollback(lcx)
    assert undone.exact
    assert digest(lcx) == before
    assert status_of(lcx, a.id) is Status.ACTIVE
    assert project_store(lcx).journal_rows()[-1]["op"] == "checkpoint-restore"
    with pytest.raises(NotFound, match="already rolled back"):
        lifecycle.rollback(lcx)


def test_restore_by_name_keeps_a_safety_checkpoint(
    lcx: Cortex, clock: Clock, make_memory: Callable[..., Memory]
) -> None:
    _duplicates(lcx, make_memory)
    before = digest(lcx)
    taken = lifecycle.consolidate(lcx).stores[0].checkpoint
    assert taken is not None
    merged = digest(lcx)
    clock.advance(1)
    report = lifecycle.restore(lcx, taken.name[:-3])  # a unique prefix is enough
    assert report.exact and digest(lcx) == before
    (safety,) = report.safety
    assert safety.reason == "before-restore" and safety.digest == merged
    lifecycle.restore(lcx, safety.name)
    assert digest(lcx) == merged


def test_a_consolidation_with_nothing_to_merge_takes_no_checkpoint(
    lcx: Cortex, make_memory: Callable[..., Memory]
) -> None:
    put(lcx, make_memory, "We use Redis for the session cache", created=T0, updated=T0)
    put(lcx, make_memory, "We do not use Redis for the session cache")
    report = lifecycle.consolidate(lcx)
    assert report.stores[0].checkpoint is None
    assert recovery.list_all_checkpoints(lcx) == []
    flagged = project_store(lcx).edges(status="suggested")
    assert [(e.type, e.status) for e in flagged] == [(EdgeType.CONTRADICTS, EdgeStatus.SUGGESTED)]
    with pytest.raises(NotFound):
        lifecycle.rollback(lcx)


def test_stored_vectors_settle_the_uncertain_band(lcx: Cortex, make_memory: Callable[..., Memory]) -> None:
    a = put(lcx, make_memory, "Run the test suite with pytest and warnings as errors before each commit")
    b = put(
        lcx,
        make_memory,
        "Before every commit run the full suite of tests under pytest with warnings as errors",
    )
    assert not lifecycle.consolidate(lcx, dry_run=True).stores[0].plan.merges
    store = project_store(lcx)
    with store.transaction():
        table = store.ensure_vector_index("fake-4", 4, lcx.now())
        store.write_vectors(table, [(a.id, pack([1.0, 0.1, 0, 0])), (b.id, pack([1.0, 0.12, 0, 0]))])
    plan = lifecycle.consolidate(lcx, dry_run=True).stores[0].plan
    assert len(plan.merges) == 1 and plan.merges[0].similarity > 0.99


def test_review_promotes_and_drops_suggested_edges(lcx: Cortex, make_memory: Callable[..., Memory]) -> None:
    x = put(lcx, make_memory, "Cache keys include the tenant id")
    y = put(lcx, make_memory, "Tenant ids are UUIDv7")
    z = put(lcx, make_memory, "The cache lives in Redis")
    with lcx.writing(Scope.PROJECT) as store:
        for src, tgt in ((x, y), (x, z)):
            store.upsert_edge(
                Edge(src.id, tgt.id, EdgeType.RELATES_TO, 0.6, EdgeStatus.SUGGESTED), "test", lcx.now()
            )
    done = lifecycle.review_edges(lcx, promote=[f"{x.id}:{y.id}"], drop=[f"{x.id}:{z.id}:relates_to"])
    assert [e.target for e in done["promoted"]] == [y.id]
    assert [e.target for e in done["dropped"]] == [z.id]
    edges = project_store(lcx).edges([x.id])
    assert [(e.target, e.status) for e in edges] == [(y.id, EdgeStatus.ACTIVE)]
    ops = [r["op"] for r in project_store(lcx).journal_rows()]
    assert ops[-2:] == ["edge", "edge_delete"]


# -- automatic consolidation --------------------------------------------------------------------
def test_after_extraction_consolidates_every_tenth_extraction(
    lcx: Cortex, clock: Clock, make_memory: Callable[..., Memory]
) -> None:
    _duplicates(lcx, make_memory)
    for n in range(1, 10):
        clock.advance(0.01)
        assert lifecycle.after_extraction(lcx).consolidation is None, n
    done = lifecycle.after_extraction(lcx).consolidation
    assert done is not None and len(done.stores[0].applied) == 1
    store = project_store(lcx)
    assert store.get_meta(lifecycle.META_EXTRACTIONS) == "10"
    assert store.get_meta(lifecycle.META_CONSOLIDATED_AT) == "10"
    assert lifecycle.after_extraction(lcx).consolidation is None


def test_the_automatic_run_plans_as_a_manual_one_and_leaves_other_suggestions_alone(
    lcx: Cortex, clock: Clock, make_memory: Callable[..., Memory]
) -> None:
    a, b = _duplicates(lcx, make_memory)
    put(lcx, make_memory, "We use Redis for the session cache", created=T0, updated=T0)
    put(lcx, make_memory, "We do not use Redis for the session cache")
    x = put(lcx, make_memory, "Cache keys include the tenant id")
    y = put(lcx, make_memory, "Tenant ids are UUIDv7")
    other = Edge(x.id, y.id, EdgeType.RELATES_TO, 0.6, EdgeStatus.SUGGESTED)
    with lcx.writing(Scope.PROJECT) as store:
        store.upsert_edge(other, "test", lcx.now())
    manual = lifecycle.consolidate(lcx, dry_run=True).stores[0].plan
    assert (x.id, y.id) in {(e.source, e.target) for e in manual.suggested}
    for _ in range(9):
        clock.advance(0.01)
        lifecycle.after_extraction(lcx)
    done = lifecycle.after_extraction(lcx).consolidation
    assert done is not None
    auto = done.stores[0].plan
    assert [(m.keeper.id, [n.id for n in m.absorbed]) for m in auto.merges] == [(b.id, [a.id])]
    assert [(m.keeper.id, [n.id for n in m.absorbed]) for m in manual.merges] == [(b.id, [a.id])]
    assert auto.contradictions == manual.contradictions and len(auto.contradictions) == 1

    def link(e: Edge) -> tuple[str, str, EdgeType, float, EdgeStatus]:
        return (e.source, e.target, e.type, e.strength, e.status)  # `created` is the run's time

    assert [link(e) for e in auto.new_edges] == [link(e) for e in manual.new_edges]
    assert (x.id, y.id) not in {(e.source, e.target) for e in auto.suggested}  # not read: not its work
    kept = project_store(lcx).edges([x.id])
    assert [(e.target, e.status) for e in kept] == [(y.id, EdgeStatus.SUGGESTED)]


def test_after_extraction_consolidates_above_80_active_memories(
    lcx: Cortex, make_memory: Callable[..., Memory]
) -> None:
    for i in range(81):
        put(lcx, make_memory, f"Distinct note number {i} about module m{i}")
    first = lifecycle.after_extraction(lcx).consolidation
    assert first is not None and "81 active memories" in first.stores[0].reason
    assert lifecycle.after_extraction(lcx).consolidation is None  # nothing new since
    put(lcx, make_memory, "One more distinct note about module zz")
    assert lifecycle.after_extraction(lcx).consolidation is not None


# -- checkpoint files ---------------------------------------------------------------------------
def test_checkpoints_keep_the_newest_and_ignore_partial_ones(
    lcx: Cortex, make_memory: Callable[..., Memory]
) -> None:
    put(lcx, make_memory, "A note")
    store = project_store(lcx)
    for i in range(checkpoint.KEEP_CHECKPOINTS + 2):
        checkpoint.write_checkpoint(
            store.conn, reason="test", run=str(i), digest=lambda: "d", at=T0 + timedelta(minutes=i)
        )
    kept = checkpoint.list_checkpoints(store.path)
    assert [c.run for c in kept] == [str(i) for i in range(6, 1, -1)]
    folder = checkpoint.checkpoint_dir(store.path)
    assert folder == lcx.paths.store_dir / "checkpoints"
    (folder / "cortex-20990101T000000000000Z-000-test.db").write_bytes(b"half a backup")
    (folder / "cortex-20990101T000000000000Z-001-test.db.tmp").write_bytes(b"half a backup")
    assert checkpoint.list_checkpoints(store.path)[0].run == "6"
    checkpoint.write_checkpoint(
        store.conn, reason="test", run="7", digest=lambda: "d", at=T0 + timedelta(hours=1)
    )
    assert (
        not list(folder.glob("*.tmp")) and not (folder / "cortex-20990101T000000000000Z-000-test.db").exists()
    )


# -- crash safety -------------------------------------------------------------------------------
CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from cortex.lifecycle import upkeep as lifecycle
    from cortex.config import Settings
    from cortex.app import Cortex
    from cortex.paths import resolve_paths

    cx = Cortex(resolve_paths(Path(sys.argv[1])), Settings(embedder="none"))
    lifecycle.consolidate(cx)
    """
)
# Inside the merge transaction, the first of its two merges written: the failpoint kills the
# child there, whatever the machine's load.
MID_MERGE = "consolidate.after_merge:1"


def test_sigkill_during_a_consolidation_leaves_the_store_whole_and_the_next_run_merges_once(
    lcx: Cortex, make_memory: Callable[..., Memory], project: Path
) -> None:
    if not hasattr(signal, "SIGKILL"):
        pytest.skip("SIGKILL does not exist on this platform")
    a, b = _duplicates(lcx, make_memory)
    c = put(lcx, make_memory, "The briefing cap is 9,500 characters so hooks stay inline", access_count=1)
    d = put(lcx, make_memory, "The briefing cap is 9,500 characters so hooks stay inline.", access_count=4)
    before = digest(lcx)
    lcx.close()
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(project)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={
            **os.environ,
            "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
            failpoints.ENV: MID_MERGE,
        },
    )
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    store = project_store(lcx)
    assert store.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert digest(lcx) == before  # the half-done merge was rolled back
    assert recovery.list_all_checkpoints(lcx)  # the checkpoint came first and is complete
    report = lifecycle.consolidate(lcx)
    assert len(report.stores[0].applied) == 2
    merged = project_store(lcx).get_many([b.id, d.id])
    assert merged[b.id].access_count == a.access_count + b.access_count
    assert merged[d.id].access_count == c.access_count + d.access_count
    assert not lifecycle.consolidate(lcx).stores[0].plan.merges
    merges = [r for r in project_store(lcx).journal_rows() if r["op"] == "merge" and r["memory_id"] is None]
    assert len(merges) == 2


# -- CLI ----------------------------------------------------------------------------------------
def test_cli_lifecycle_consolidate_rollback_restore(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORTEX_EMBEDDER", "none")
    cx = Cortex(resolve_paths(project), Settings(embedder="none"))
    with cx.writing(Scope.PROJECT) as store:
        for i, text in enumerate((WAL, WAL_B)):
            now = datetime.now(UTC) - timedelta(days=1)
            m = Memory(f"00000000{i:02d}", text, text[:40], MemoryType.DECISION, Scope.PROJECT, 0.8, 5, False,
                       Source(), (), 0, None, now, now, Status.ACTIVE, content_hash(text))  # fmt: skip
            store.insert_memory(m, "test", now)
    before = store.state_digest().digest
    cx.close()
    run = CliRunner().invoke
    out = run(cli, ["-C", str(project), "lifecycle", "--dry-run"])
    assert out.exit_code == 0 and "Nothing to change" in out.output
    out = run(cli, ["-C", str(project), "consolidate", "--dry-run"])
    assert out.exit_code == 0 and "merge into 0000000001" in out.output and "absorbs 0000000000" in out.output
    out = run(cli, ["-C", str(project), "consolidate"])  # not a terminal: needs --yes
    assert out.exit_code == 1 and "--yes" in out.output
    cx = Cortex(resolve_paths(project), Settings(embedder="none"))
    assert project_store(cx).state_digest().digest == before  # nothing changed yet
    cx.close()
    out = run(cli, ["-C", str(project), "consolidate", "--yes"])
    assert out.exit_code == 0 and "merged 1 memories into 1" in out.output, out.output
    out = run(cli, ["-C", str(project), "restore", "--list"])
    assert out.exit_code == 0 and "consolidate" in out.output
    out = run(cli, ["-C", str(project), "consolidate", "--rollback", "--yes"])
    assert out.exit_code == 0 and "(exact)" in out.output, out.output
    cx = Cortex(resolve_paths(project), Settings(embedder="none"))
    assert project_store(cx).state_digest().digest == before
    cx.close()
    out = run(cli, ["-C", str(project), "consolidate", "--rollback", "--yes"])
    assert out.exit_code == 1 and "already rolled back" in out.output


def test_memory_edit_between_plan_and_apply_is_not_overwritten(
    lcx: Cortex, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, _ = _duplicates(lcx, make_memory)
    real_plan = lifecycle.plan_store

    def plan_then_edit(cx: Cortex, store: Store, since_seq: int | None = None, review: bool = True) -> object:
        planned = real_plan(cx, store, since_seq=since_seq, review=review)
        with store.transaction():
            current = store.get(a.id)
            assert current is not None
            store.update_memory(current, replace(current, priority=9), "other-session", cx.now(), "update")
        return planned

    monkeypatch.setattr(lifecycle, "plan_store", plan_then_edit)
    report = lifecycle.consolidate(lcx)
    assert not report.stores[0].applied and len(report.stores[0].skipped) == 1
    assert status_of(lcx, a.id) is Status.ACTIVE


def test_the_tick_reads_every_memory_it_could_change(lcx: Cortex, make_memory: Callable[..., Memory]) -> None:
    """The SQL pre-filter never hides a memory whose confidence or status a tick would change."""
    import random

    from cortex.core.lifecycle import decay

    rnd = random.Random(7)
    with lcx.writing(Scope.PROJECT) as store:
        for i in range(400):
            at = T0 - timedelta(days=rnd.uniform(0, 120))
            status = rnd.choice([Status.ACTIVE] * 3 + [Status.ARCHIVED, Status.SUPERSEDED])
            touched = at + timedelta(days=rnd.uniform(0, 10))
            m = make_memory(
                f"memory number {i}",
                type=rnd.choice(list(MemoryType)),
                confidence=round(rnd.uniform(0.05, 1.0), 3),
                pinned=rnd.random() < 0.1,
                access_count=rnd.choice([0, 0, 3, 12]),
                last_accessed=touched if rnd.random() < 0.3 else None,
                created=at,
                updated=at,
                status=status,
                status_changed=touched if status is not Status.ACTIVE else None,
                low_since=at if rnd.random() < 0.1 else None,
            )
            store.insert_memory(m, "test", T0)
    store = project_store(lcx)
    now = T0 + timedelta(days=3)
    every = decay.plan_tick(store.all_memories(), now)
    read = store.tick_candidates(decay.plan_tick_cutoffs(now), decay.prune_cutoff(now), decay.ARCHIVE_FLOOR)
    planned = {c.before.id for c in decay.plan_tick(read, now).changes}
    meaningful = {
        c.before.id
        for c in every.changes
        if c.transition is not decay.Transition.DECAY or c.after.confidence != c.before.confidence
    }
    assert meaningful and meaningful <= planned


def test_a_checkpoint_digest_is_of_exactly_what_was_saved(
    lcx: Cortex, make_memory: Callable[..., Memory]
) -> None:
    put(lcx, make_memory, "Saved before the checkpoint")
    store = project_store(lcx)
    other = Store.open(store.path, Scope.PROJECT)  # another session writing at the same moment

    def digest_then_someone_writes() -> str:
        d = store.state_digest().digest
        with other.transaction():
            other.insert_memory(make_memory("Written by another session meanwhile"), "other", T0)
        return d

    try:
        cp = checkpoint.write_checkpoint(
            store.conn, reason="t", run="r", at=T0, digest=digest_then_someone_writes
        )
    finally:
        other.close()
    saved = Store.open(cp.path, Scope.PROJECT, readonly=True)
    try:
        assert saved.state_digest().digest == cp.digest
        assert len(saved.all_memories()) == 1
    finally:
        saved.close()
    assert len(store.all_memories()) == 2


def _plain_cosine(a: bytes, b: bytes) -> float:
    x, y = unpack(a), unpack(b)
    dot = sum(p * q for p, q in zip(x, y, strict=True))
    norm = math.sqrt(sum(p * p for p in x)) * math.sqrt(sum(q * q for q in y))
    return dot / norm if norm else 0.0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.floats(-4, 4, allow_nan=False, width=32), min_size=6, max_size=6),
        min_size=2,
        max_size=8,
    ),
    st.data(),
)
def test_pair_cosines_match_the_definition(rows: list[list[float]], data: st.DataObject) -> None:
    rows[0] = [0.0] * 6  # a zero vector has cosine 0 with everything
    blobs = {f"m{i}": pack(r) for i, r in enumerate(rows)}
    ids = sorted(blobs)
    pair = st.tuples(st.sampled_from(ids), st.sampled_from(ids))
    pairs = data.draw(st.lists(pair, min_size=1, max_size=12))
    got = lifecycle._pair_cosines(blobs, pairs)
    for a, b in pairs:
        assert got[(a, b)] == pytest.approx(_plain_cosine(blobs[a], blobs[b]), abs=1e-9)
