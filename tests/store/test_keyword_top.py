"""Keyword search ranks through the index alone first and checks the best rows' status after: the
results equal ranking every match joined with its memory, whatever share of matches is live."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from cortex.core.model import Memory, Scope, Status
from cortex.core.recall.query import TextQuery
from cortex.store import open as stores
from cortex.store.port import LIVE, StoreAdmin
from cortex.store.sqlite import fts
from cortex.store.sqlite.codec import marks
from tests.conftest import T0

WORDS = ["deploy", "staging", "cache", "worker", "queue", "retry", "schema", "index"]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[StoreAdmin]:
    opened = stores.open_store(Scope.PROJECT, tmp_path / "memories", kind="sqlite")
    yield opened
    opened.close()


def fill(store: StoreAdmin, make_memory: Callable[..., Memory], n: int, superseded_every: int) -> None:
    """n notes sharing words in varied amounts; every `superseded_every`-th one superseded."""
    notes = []
    for i in range(n):
        words = [WORDS[(i * 3 + j) % len(WORDS)] for j in range(1 + i % 5)] * (1 + i % 3)
        notes.append(make_memory(f"note {i}: " + " ".join(words) + f" detail {i * 7 % 13}"))
    with store.transaction():
        for m in notes:
            store.insert_memory(m, "test", T0)
        for i, m in enumerate(notes):
            if superseded_every and i % superseded_every:
                store.update_memory(m, replace(m, status=Status.SUPERSEDED), "test", T0, "supersede")


def joined(
    store: StoreAdmin, query: TextQuery, limit: int, statuses: tuple[str, ...]
) -> list[tuple[str, float]]:
    """Every match ranked with its memory's status in the join: what search_text must equal."""
    sql = fts.search_sql("m.id", f"m.status IN ({marks(statuses)})")
    conn = store.conn  # type: ignore[attr-defined]
    return [(r[0], -float(r[1])) for r in conn.execute(sql, (fts.match_text(query), *statuses, limit))]


@pytest.mark.parametrize("superseded_every", [0, 2, 9])
@pytest.mark.parametrize("limit", [1, 3, 10, 50])
@pytest.mark.parametrize("terms", [("deploy",), ("cache", "retry"), ("schema", "index", "queue", "worker")])
def test_the_top_rows_equal_ranking_every_match(
    store: StoreAdmin,
    make_memory: Callable[..., Memory],
    superseded_every: int,
    limit: int,
    terms: tuple[str, ...],
) -> None:
    fill(store, make_memory, 120, superseded_every)
    query = TextQuery(terms)
    for statuses in (LIVE, ("active",), ("superseded",), ("active", "archived", "superseded")):
        assert store.search_text(query, limit, statuses) == joined(store, query, limit, tuple(statuses))


def test_no_match_and_a_query_with_few_matches(store: StoreAdmin, make_memory: Callable[..., Memory]) -> None:
    fill(store, make_memory, 30, 0)
    assert store.search_text(TextQuery(("kubernetes",)), 5) == []
    found = store.search_text(TextQuery(("detail",)), 100)
    assert len(found) == 30 == len({mid for mid, _ in found})
