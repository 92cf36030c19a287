"""Ninety simulated days of a project's memory: extraction batches, ticks, consolidation, a briefing.

The clock is driven forward through realistic work: two extraction batches a working day
(progress from edited files, context, decisions and architecture as they are made, gotchas as
they bite, decisions re-said now and then), recalls of useful memories, and on day 40 an
import of a teammate's export that says several of our decisions in slightly other words.
Every batch is followed by the worker's lifecycle step (`after_extraction`).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cortex.admin import portability
from cortex.admin import rebuild as rebuilding
from cortex.app import Cortex
from cortex.briefing.deliver import refresh_briefing
from cortex.capture import manual
from cortex.capture import write as writer
from cortex.config import Settings
from cortex.core.briefing.compose import MAX_BRIEFING_CHARS, BriefingPart
from cortex.core.budget import estimate_tokens
from cortex.core.model import Candidate, EdgeType, Layer, Memory, MemoryType, Scope, Source, Status
from cortex.core.recall.decide import RecallRequest
from cortex.core.serial import parse_time
from cortex.core.text import content_hash
from cortex.lifecycle import upkeep as lifecycle
from cortex.paths import Paths, resolve_paths
from cortex.recall.search import recall

START = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)  # a Monday
DAYS = 90
IMPORT_DAY = 39  # a Friday

DECISIONS = [
    "We use WAL mode for the SQLite store so several sessions can write at the same time",
    "We chose SQLite over Postgres so the whole memory stays one file with no server to run",
    "We pin torch to 2.13.0 CPU wheels so installs never pull the CUDA build",
    "We keep the hook path on the standard library only so hooks start in under 100 ms",
    "We render the briefing from a pure function so it can be tested without a database",
    "We never embed raw code with a hosted embedder because code may hold secrets",
]
ARCHITECTURE = [
    "The worker is a detached process started by the Stop hook; one per project via a file lock",
    "Memories live in .memory/cortex.db per project and in cortex-global.db across projects",
    "Recall fuses BM25 and vector KNN candidates with weighted reciprocal rank fusion",
]
GOTCHAS = [
    "pyenv Python cannot load SQLite extensions, so sqlite-vec needs the sqlean.py driver",
    "Claude Code inlines hook output only below 10,000 characters",
]
# What a teammate's store says about the same decisions (near-duplicates, other ids).
TEAMMATE = [
    "We use WAL mode for the SQLite store so several sessions can write at the same time safely",
    "We chose SQLite over Postgres so the whole memory stays one single file with no server to run",
    "We keep the hook path on the standard library only so the hooks start in under 100 ms",
]
FILES = ["worker.py", "hooks.py", "briefing.py", "retrieval.py", "writer.py", "store.py", "cli.py"]
VERBS = ["add", "fix", "rework", "speed up", "document", "test", "simplify"]
TOPICS = [
    "retry with jitter", "log rotation by size", "cursor offsets after crashes", "JSON output of recall",
    "error messages that name the fix", "lock timeouts under load", "the terminal progress bar",
    "branch detection in worktrees", "stale file markers", "the one-time install step", "token budgets",
]  # fmt: skip


class Clock:
    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


def candidate(content: str, kind: MemoryType, confidence: float, files: tuple[str, ...] = ()) -> Candidate:
    layer = Layer.STRUCTURAL if kind is MemoryType.PROGRESS else Layer.LEXICAL
    return Candidate(content=content, type=kind, layer=layer, confidence=confidence, files=files)


def batch(w: int, n: int) -> list[Candidate]:
    """The n-th extraction batch of working day `w`."""
    first, second = FILES[(w + n) % len(FILES)], FILES[(w * 3 + n + 1) % len(FILES)]
    verb, topic = VERBS[(w * 2 + n) % len(VERBS)], TOPICS[(w * 5 + n * 3) % len(TOPICS)]
    out = [
        candidate(
            f"Session {w}.{n}: {verb} {topic} in cortex/{first}; tests/test_{second} updated",
            MemoryType.PROGRESS,
            0.6,
            (f"cortex/{first}", f"tests/test_{second}"),
        )
    ]
    if w % 3 == n:
        out.append(
            candidate(f"Session {w}.{n} note: the suite took {40 + w % 7} s on CI", MemoryType.CONTEXT, 0.5)
        )
    if n == 0 and w < 2 * len(DECISIONS) and w % 2 == 0:
        out.append(candidate(DECISIONS[w // 2], MemoryType.DECISION, 0.8))
    if n == 1 and w < 4 * len(ARCHITECTURE) and w % 4 == 1:
        out.append(candidate(ARCHITECTURE[w // 4], MemoryType.ARCHITECTURE, 0.8))
    if n == 1 and w in (7, 16):
        out.append(candidate(GOTCHAS[0 if w == 7 else 1], MemoryType.GOTCHA, 0.7))
    if n == 0 and w in (21, 40, 57):  # a decision said again, word for word
        out.append(candidate(DECISIONS[0], MemoryType.DECISION, 0.8))
    return out


def teammate_export(tmp: Path) -> str:
    theirs = Cortex(
        Paths(tmp, tmp / "home"), Settings(embedder="none"), clock=Clock(START + timedelta(days=20))
    )
    try:
        for text in TEAMMATE:
            manual.remember(theirs, text, mem_type="decision")
        buf = io.StringIO()
        portability.export(theirs, buf, scope="project")
        return buf.getvalue()
    finally:
        theirs.close()


@pytest.fixture
def simulated(project: Path, tmp_path: Path) -> Iterator[tuple[Cortex, Clock, dict[str, list[int]]]]:
    clock = Clock(START)
    cx = Cortex(resolve_paths(project), Settings(embedder="none"), clock=clock)
    consolidations: dict[str, list[int]] = {"auto": [], "merged": []}
    working = [d for d in range(DAYS) if (START + timedelta(days=d)).weekday() < 5]  # no weekend sessions
    for w, day in enumerate(working):
        for n, hour in enumerate((10, 15)):
            clock.now = START.replace(hour=hour) + timedelta(days=day)
            for cand in batch(w, n):
                writer.write_candidate(cx, cand, Source(session_id=f"s{w}-{n}", branch="main"))
            if day == IMPORT_DAY and n == 1:
                portability.import_file(cx, teammate_export(tmp_path / "teammate").splitlines())
            if w % 4 == 0 and n == 1:
                recall(cx, RecallRequest(text="sqlite extensions sqlean driver"))
            step = lifecycle.after_extraction(cx)
            if step.consolidation is not None:
                consolidations["auto"].append(day)
                merged = sum(len(s.applied) for s in step.consolidation.stores)
                consolidations["merged"].extend([day] * merged)
    try:
        yield cx, clock, consolidations
    finally:
        cx.close()


def memories(cx: Cortex) -> list[Memory]:
    store = cx.store(Scope.PROJECT, create=False)
    assert store is not None
    return store.all_memories()


def test_ninety_days_of_memory(simulated: tuple[Cortex, Clock, dict[str, list[int]]]) -> None:
    cx, clock, consolidations = simulated
    now = clock.now
    every = memories(cx)
    by_type: dict[MemoryType, list[Memory]] = {}
    for m in every:
        by_type.setdefault(m.type, []).append(m)

    # progress: old work archived, then pruned; recent work still active
    progress = by_type[MemoryType.PROGRESS]
    old = [m for m in progress if now - m.created > timedelta(days=60)]
    assert old and {m.status for m in old} == {Status.PRUNED}
    store = cx.store(Scope.PROJECT, create=False)
    assert store is not None
    revived = {  # the write gate brings back progress that is said again
        r["memory_id"]
        for r in store.journal_rows()
        if r["op"] in ("reinforce", "restore") and now - parse_time(r["at"]) < timedelta(days=22)  # type: ignore[operator]
    }
    lingering = [m for m in progress if now - m.created > timedelta(days=22) and m.status is Status.ACTIVE]
    assert {m.id for m in lingering} <= revived
    assert any(m.status is Status.ARCHIVED for m in progress)
    assert any(m.status is Status.ACTIVE for m in progress)

    # decisions and architecture intact: every distinct one still known, none faded
    for kind, texts in ((MemoryType.DECISION, DECISIONS), (MemoryType.ARCHITECTURE, ARCHITECTURE)):
        active = [m for m in by_type[kind] if m.status is Status.ACTIVE]
        assert len(active) == len(texts)
        assert all(m.confidence >= 0.8 for m in active)
    assert all(m.status is Status.ACTIVE for m in by_type[MemoryType.GOTCHA])

    # the teammate's near-duplicates were merged by an automatic consolidation
    decisions = {m.id: m for m in by_type[MemoryType.DECISION]}
    absorbed = [m for m in decisions.values() if m.status is Status.SUPERSEDED]
    assert len(absorbed) == len(TEAMMATE)
    assert consolidations["merged"] and min(consolidations["merged"]) >= IMPORT_DAY
    derived = [e for e in store.edges() if e.type is EdgeType.DERIVED_FROM]
    assert {e.target for e in derived} == {m.id for m in absorbed}
    assert all(decisions[e.source].status is Status.ACTIVE for e in derived)
    for keeper_id in {e.source for e in derived}:  # each merge kept its members' history
        keeper = decisions[keeper_id]
        members = [decisions[e.target] for e in derived if e.source == keeper_id]
        assert keeper.access_count >= sum(m.access_count for m in members)
        assert keeper.created <= min(m.created for m in members)
        assert {f for m in members for f in m.source.files} <= set(keeper.source.files)

    # the briefing still fits its budget and shows lasting knowledge, not pruned work
    result = refresh_briefing(cx)
    full = result.rendered.parts[BriefingPart.FULL]
    assert full.text and full.chars <= MAX_BRIEFING_CHARS
    assert estimate_tokens(full.text) <= cx.settings.briefing_budget_tokens
    shown = set(full.shown)
    assert {m.id for m in decisions.values() if m.status is Status.ACTIVE} <= shown
    assert not shown & {m.id for m in every if m.status is not Status.ACTIVE}
    assert result.rules_file is not None and result.rules_file.exists()

    # and the derived indexes rebuild to the same logical state
    assert all(r.same and r.fts_ok for r in rebuilding.rebuild(cx))


def test_rollback_after_a_consolidation_restores_the_exact_state(
    simulated: tuple[Cortex, Clock, dict[str, list[int]]],
) -> None:
    cx, clock, _ = simulated
    store = cx.store(Scope.PROJECT, create=False)
    assert store is not None
    keeper = next(m for m in memories(cx) if m.status is Status.ACTIVE and "hook path" in m.content)
    copy = keeper.content + " indeed"  # a concurrent session's copy, past the write gate
    with cx.writing(Scope.PROJECT) as s:
        s.insert_memory(
            replace(keeper, id="feedfeed00", content=copy, content_hash=content_hash(copy)), "t", cx.now()
        )
    clock.now += timedelta(hours=1)
    before = store.state_digest().digest
    report = lifecycle.consolidate(cx)
    assert sum(len(s.applied) for s in report.stores) == 1
    assert store.state_digest().digest != before
    clock.now += timedelta(hours=1)
    assert lifecycle.rollback(cx).exact
    assert store.state_digest().digest == before
