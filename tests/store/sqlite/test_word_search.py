"""The SQLite store's word search for consolidation: posting lists of the FTS5 index."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cortex.core.model import Memory, MemoryType, Scope, Status
from cortex.store.port import WordSearch
from cortex.store.sqlite.store import Store

AT = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path, make_memory: Callable[..., Memory]) -> Iterator[Store]:
    opened = Store.open(tmp_path / "cortex.db", Scope.PROJECT)
    rows = [
        ("a", "The cache layer keeps sessions in Redis", MemoryType.DECISION, Status.ACTIVE),
        ("b", "Caching sessions was not worth it", MemoryType.DECISION, Status.ACTIVE),
        ("c", "The cache layer keeps sessions in Redis, old note", MemoryType.DECISION, Status.ARCHIVED),
        ("d", "The cache layer keeps the sessions in Redis", MemoryType.GOTCHA, Status.ACTIVE),
        ("e", "Deploys run on Fridays", MemoryType.DECISION, Status.ACTIVE),
    ]
    with opened.transaction():
        for mid, text, kind, status in rows:
            opened.insert_memory(replace(make_memory(text, type=kind), id=mid, status=status), "test", AT)
    try:
        yield opened
    finally:
        opened.close()


def ids(texts: list[object]) -> set[str]:
    return {t.id for t in texts}


def rows_of(store: Store, *mids: str) -> set[int]:
    marks = ", ".join("?" * len(mids))
    return {r[0] for r in store.conn.execute(f"SELECT n FROM memories WHERE id IN ({marks})", mids)}


def test_word_rows_are_every_status_holding_the_word_and_its_stems(store: Store) -> None:
    assert isinstance(store, WordSearch)
    got = store.word_rows(["redis", "cache", "fridays", "absent"])
    assert set(got["redis"].tolist()) == rows_of(store, "a", "c", "d")  # c archived, d a gotcha
    assert set(got["cache"].tolist()) == rows_of(store, "a", "b", "c", "d")  # caching ~ cache
    assert set(got["fridays"].tolist()) == rows_of(store, "e")
    assert got["absent"].tolist() == []


def test_texts_at_reads_the_active_memories_of_the_types_asked(store: Store) -> None:
    every = sorted(rows_of(store, "a", "b", "c", "d", "e"))
    decision = [MemoryType.DECISION.value]
    assert ids(store.texts_at(every, decision)) == {"a", "b", "e"}  # c archived, d a gotcha
    both = [MemoryType.DECISION.value, MemoryType.GOTCHA.value]
    assert ids(store.texts_at(sorted(rows_of(store, "c", "d")), both)) == {"d"}
    assert {t.content for t in store.texts_at(sorted(rows_of(store, "e")), decision)} == {
        "Deploys run on Fridays"
    }
    assert store.texts_at(every, []) == [] and store.texts_at([], decision) == []


def test_word_counts_count_every_status_up_to_the_cap(store: Store) -> None:
    assert store.word_counts(["redis", "fridays", "absent"], 10) == {"redis": 3, "fridays": 1, "absent": 0}
    assert store.word_counts(["redis"], 2) == {"redis": 2}
