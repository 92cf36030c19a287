"""The SQLite store's word search for consolidation: groups of words through the FTS5 index."""

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


def test_groups_are_and_within_or_across_active_of_the_types_asked(store: Store) -> None:
    assert isinstance(store, WordSearch)
    decision = [MemoryType.DECISION.value]
    assert ids(store.texts_matching([("cache", "redis")], [], decision)) == {"a"}  # c archived, d a gotcha
    assert ids(store.texts_matching([("cache", "redis"), ("fridays",)], [], decision)) == {"a", "e"}
    both = [MemoryType.DECISION.value, MemoryType.GOTCHA.value]
    assert ids(store.texts_matching([("cache", "redis")], [], both)) == {"a", "d"}
    assert store.texts_matching([], [], decision) == []


def test_stems_widen_the_match_and_required_words_narrow_it(store: Store) -> None:
    decision = [MemoryType.DECISION.value]
    assert ids(store.texts_matching([("sessions", "cache")], [], decision)) == {"a", "b"}  # caching ~ cache
    assert ids(store.texts_matching([("sessions",)], ["not", "never"], decision)) == {"b"}


def test_word_counts_count_every_status_up_to_the_cap(store: Store) -> None:
    assert store.word_counts(["redis", "fridays", "absent"], 10) == {"redis": 3, "fridays": 1, "absent": 0}
    assert store.word_counts(["redis"], 2) == {"redis": 2}
