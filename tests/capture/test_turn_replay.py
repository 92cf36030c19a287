"""A session captured turn by turn (a Stop hook per turn) stores what the same session captured
in one go (history import, a worker that fell behind) stores: the same memories, same types,
same status, same tags. Run on the real sessions of the shared set and two fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cortex.app import Cortex
from cortex.capture.queue import QueueEntry
from cortex.capture.session import GitFacts, capture_session
from cortex.core.extract.pipeline import GitContext
from cortex.core.extract.transcript import parse_chunk
from cortex.core.extract.turns import split_turns
from cortex.core.model import Scope
from cortex.paths import resolve_paths
from tests.conftest import T0, git
from tests.support.transcript_builders import FIXTURES

SESSIONS = FIXTURES.parent.parent / "benchmarks" / "sessions"
FIXTURE_NAMES = (
    "fasthooks/sample_main_transcript.jsonl",
    "spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
)


def transcripts() -> list[Path]:
    real = sorted(SESSIONS.glob("*/transcript.jsonl")) if SESSIONS.is_dir() else []
    return real + [FIXTURES / name for name in FIXTURE_NAMES if (FIXTURES / name).is_file()]


def turn_ends(data: bytes) -> list[int]:
    """Byte offsets where each turn of the transcript ends (where Stop would fire)."""
    chunk = parse_chunk(data, 0, include_sidechains=False)
    return [turn[-1].end_offset for turn in split_turns(list(chunk.messages))]


def new_project(parent: Path, name: str) -> Path:
    root = parent / name
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    return root


def stored(root: Path, home: Path) -> set[tuple[str, str, str, str, tuple[str, ...]]]:
    cx = Cortex(resolve_paths(root), clock=_clock())
    try:
        out = set()
        for scope in (Scope.PROJECT, Scope.GLOBAL):
            store = cx.store(scope, create=False)
            for m in store.all_memories() if store is not None else []:
                out.add((scope.value, m.content_hash, m.type.value, m.status.value, tuple(sorted(m.tags))))
        return out
    finally:
        cx.close()


def _clock() -> Iterator:
    from datetime import timedelta

    ticks = iter(T0 + timedelta(seconds=i) for i in range(10_000_000))
    return lambda: next(ticks)  # type: ignore[return-value]


def capture(root: Path, transcript: Path, cuts: list[int], data: bytes) -> None:
    cx = Cortex(resolve_paths(root), clock=_clock())
    entry = QueueEntry("Stop", "s-1", str(transcript), str(root))
    facts = GitFacts(GitContext(branch="main"))
    try:
        for i, cut in enumerate(cuts):
            transcript.write_bytes(data[:cut])
            capture_session(cx, entry, facts, closed=i == len(cuts) - 1, lag_wait_s=0)
    finally:
        cx.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    "path", transcripts(), ids=lambda p: p.parent.name if p.name == "transcript.jsonl" else p.stem
)
def test_turn_by_turn_and_all_at_once_store_the_same(path: Path, tmp_path: Path, cortex_home: Path) -> None:
    data = path.read_bytes()
    ends = turn_ends(data)
    assert len(ends) >= 2, "a replay needs turns"
    one = new_project(tmp_path, "turns")
    capture(one, tmp_path / "turns.jsonl", [*ends[:-1], len(data)], data)
    turn_by_turn = stored(one, cortex_home)
    other = new_project(tmp_path, "whole")
    capture(other, tmp_path / "whole.jsonl", [len(data)], data)
    at_once = stored(other, cortex_home)
    assert turn_by_turn, "the session stored nothing"
    assert turn_by_turn == at_once


def test_the_shared_sessions_are_here() -> None:
    if not SESSIONS.is_dir():
        pytest.skip(
            f"the shared session set is absent ({SESSIONS}); the replay comparison ran on fixtures only"
        )
    assert len(transcripts()) >= 10
