"""The briefing read by index renders exactly what ranking every active memory renders.

Real generated stores of 1,000 and 10,000 memories (`benchmarks.gen_store`) in real git
repositories, with edit notes, pinned notes, notes tagged with the branch, notes of other
branches, a global store, files present and gone: the indexed render (`render_current`) and the
full read (`render_current(indexed=False)`: every active memory through the pure ranking) must
give the same text, ids, counts and tokens for every part, branch and budget.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from benchmarks.gen_store import NOW, build_store
from cortex.app import Cortex
from cortex.briefing.deliver import render_current
from cortex.briefing.gather import read_pool
from cortex.config import Settings
from cortex.core.extract.structural import EDITS_TAG
from cortex.core.extract.summary import SUBAGENT_TAG
from cortex.core.model import Memory, MemoryType, Scope, Source, Status
from cortex.core.recall.ranking import BriefingWeights
from cortex.core.text import content_hash
from cortex.paths import Paths

GIT = ["git", "-c", "user.name=cortex test", "-c", "user.email=test@example.com"]
BRANCH = "feature/retries"  # a branch the generated notes were recorded on


def git(root: Path, *args: str) -> None:
    subprocess.run([*GIT, "-C", str(root), *args], check=True, capture_output=True)


def extra_memories(n: int) -> Iterator[tuple[Scope, Memory]]:
    """Notes the generator does not make: edit lists, pinned ones, tagged with the branch, global,
    subagents' reports."""
    for i in range(n):
        kind = (MemoryType.PROGRESS, MemoryType.CONTEXT, MemoryType.DECISION, MemoryType.GOTCHA)[i % 4]
        branch = (None, "main", BRANCH, "fix/timeouts")[i % 4]
        tags: tuple[str, ...] = (EDITS_TAG,) if i % 3 == 0 else ()
        tags += (BRANCH,) if i % 5 == 0 else ()
        tags += (SUBAGENT_TAG,) if i % 10 == 5 or i == 30 else ()  # high ranks; i=30 is pinned
        text = f"Edited src/module_{i}.py and tests/test_module_{i}.py while fixing case {i}."
        created = NOW - timedelta(hours=i)
        yield (
            Scope.GLOBAL if i % 7 == 0 else Scope.PROJECT,
            Memory(
                id=f"e{i:09x}",
                content=text,
                summary=text,
                type=kind,
                scope=Scope.GLOBAL if i % 7 == 0 else Scope.PROJECT,
                confidence=1.0 if i % 5 == 0 else 0.5 + (i % 5) / 10,  # tagged ones rank high
                priority=10 if i % 5 == 0 else 3 + i % 7,
                pinned=i % 6 == 0,
                source=Source(f"sess-extra-{i % 3}", i, branch, None, (f"src/module_{i}.py",)),
                tags=tags,
                access_count=i % 4,
                last_accessed=created if i % 4 else None,
                created=created,
                updated=created,
                status=Status.ACTIVE,
                content_hash=content_hash(text),
            ),
        )


def make_store(root: Path, home: Path, n: int) -> None:
    root.mkdir(parents=True)
    (root / "src" / "job_queue").mkdir(parents=True)
    (root / "src" / "job_queue" / "service.py").write_text("x = 1\n", "utf-8")  # some files exist
    (root / "src" / "module_3.py").write_text("y = 2\n", "utf-8")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    build_store(root, n, seed=7, embed=False)
    with Cortex(Paths(root, home), clock=lambda: NOW) as cx:
        for scope, m in extra_memories(60):
            store = cx.write_store(scope)
            with store.transaction():
                store.insert_memory(m, "test", m.created)


@pytest.fixture(scope="module", params=[1_000, 10_000])
def project(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp(f"gather{request.param}")
    root, home = base / "proj", base / "home"
    make_store(root, home, request.param)
    return root, home


@pytest.mark.parametrize("branch", ["main", BRANCH, "fix/timeouts"])
@pytest.mark.parametrize("budget", [1_500, 400, 4_000])
def test_indexed_render_equals_the_full_ranking(project: tuple[Path, Path], branch: str, budget: int) -> None:
    root, home = project
    git(root, "checkout", "-q", "-B", branch)
    settings = replace(Settings(), briefing_budget_tokens=budget)
    with Cortex(Paths(root, home), settings, clock=lambda: NOW) as cx:
        full = render_current(cx, indexed=False)
        fast = render_current(cx)
    assert fast.parts == full.parts
    assert (fast.branch, fast.head, fast.memories) == (full.branch, full.head, full.memories)
    assert fast.stale <= full.stale
    # Subagents' reports rank high here but are never briefed unless pinned.
    shown = {i for b in full.parts.values() for i in b.shown}
    second_hand = {m.id for _, m in extra_memories(60) if SUBAGENT_TAG in m.tags and not m.pinned}
    assert not shown & second_hand
    assert full.parts[next(iter(full.parts))].text  # something was rendered
    assert any("Stale:" in b.text for b in full.parts.values())  # files gone at HEAD are flagged


def test_the_index_read_takes_only_what_the_budget_can_reach(project: tuple[Path, Path]) -> None:
    root, home = project
    with Cortex(Paths(root, home), clock=lambda: NOW) as cx:
        weights = BriefingWeights()
        pool = read_pool(cx.read_stores(), root, branch="main", weights=weights, budget_tokens=1_500)
        assert pool is not None
        if pool.total >= 5_000:
            assert len(pool.memories) < pool.total / 3
        other = BriefingWeights(confidence=0.2, priority=0.5)  # not the rank key's ratio
        assert read_pool(cx.read_stores(), root, branch="main", weights=other, budget_tokens=1_500) is None


@pytest.mark.parametrize("budget", [1_500, 200])
def test_crowded_equal_ranks_render_the_same(tmp_path: Path, budget: int) -> None:
    """Hundreds of notes of one type with the same rank (a band stops where ranks crowd, and
    its stop falls among equals), some on the branch: the indexed render still equals ranking
    every note, and ends."""
    root, home = tmp_path / "proj", tmp_path / "home"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "commit", "-q", "--allow-empty", "-m", "init")
    with Cortex(Paths(root, home), clock=lambda: NOW) as cx:
        store = cx.write_store(Scope.PROJECT)
        with store.transaction():
            for i in range(600):
                text = f"Gotcha {i}: the retry queue drops job {i} when the worker restarts."
                created = NOW - timedelta(minutes=i)
                m = Memory(
                    id=f"c{i:09x}",
                    content=text,
                    summary=text,
                    type=MemoryType.GOTCHA if i % 5 else MemoryType.DECISION,
                    scope=Scope.PROJECT,
                    confidence=0.7 if i % 3 else 0.9,  # three ranks in all, hundreds at each
                    priority=5,
                    pinned=i % 50 == 0,
                    source=Source(f"sess-{i % 4}", i, "main" if i % 2 else "fix/other", None, ()),
                    tags=(),
                    access_count=i % 2,
                    last_accessed=None,
                    created=created,
                    updated=created if i % 7 else NOW,  # equal ranks and equal times too
                    status=Status.ACTIVE,
                    content_hash=content_hash(text),
                )
                store.insert_memory(m, "test", created)
    settings = replace(Settings(), briefing_budget_tokens=budget)
    with Cortex(Paths(root, home), settings, clock=lambda: NOW) as cx:
        full = render_current(cx, indexed=False)
        fast = render_current(cx)
    assert fast.parts == full.parts
    assert full.parts[next(iter(full.parts))].text
