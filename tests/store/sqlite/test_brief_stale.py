"""The briefing's count of stale memories (every file they name gone) is the same whichever side
it is counted from: through the memories naming a gone file, or as all memories naming a file
less those naming a present one; and its first ids are the newest stale ones."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from cortex.core.model import Memory, MemoryType, Scope, Source, Status
from cortex.store import open as stores
from cortex.store.sqlite.store import Store
from tests.conftest import T0

PATHS = [f"src/mod_{i}.py" for i in range(40)]


@pytest.fixture
def store(tmp_path: Path, make_memory: Callable[..., Memory]) -> Iterator[Store]:
    opened = stores.open_store(Scope.PROJECT, tmp_path / "memories", kind="sqlite")
    assert isinstance(opened, Store)
    notes = []
    for i in range(300):
        files = tuple(PATHS[(i * k) % len(PATHS)] for k in range(1, 1 + i % 4))
        notes.append(
            make_memory(
                f"note {i}",
                source=Source(files=files),
                type=MemoryType.CODE if i % 17 == 0 else MemoryType.GOTCHA,
                status=Status.ARCHIVED if i % 13 == 0 else Status.ACTIVE,
                created=T0 + timedelta(minutes=i % 50),
            )
        )
    with opened.transaction():
        for m in notes:
            opened.insert_memory(m, "test", T0)
    yield opened
    opened.close()


def expected(store: Store, gone: set[str], limit: int) -> tuple[int, list[str]]:
    live = [
        m
        for m in store.list_memories(statuses=(Status.ACTIVE.value,))
        if m.type is not MemoryType.CODE and m.source.files
    ]
    stale = [m for m in live if all(f in gone for f in m.source.files)]
    stale.sort(key=lambda m: m.id)
    stale.sort(key=lambda m: m.created, reverse=True)
    return len(stale), [m.id for m in stale[:limit]]


@pytest.mark.parametrize("gone_count", [0, 1, 3, 10, 30, 39, 40])
def test_the_count_and_the_newest_ids_from_either_side(store: Store, gone_count: int) -> None:
    paths = store.brief_paths()
    assert 20 < len(paths) <= len(PATHS)  # from the gone side (few gone) and the present side (many)
    gone, present = paths[:gone_count], paths[gone_count:]
    for limit in (1, 7, 500):
        assert store.brief_stale(gone, present, limit) == expected(store, set(gone), limit)
