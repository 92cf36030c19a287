"""Keyword search over many matches ranks the rows holding every word first, with the scores
the whole query gives them; a store with few matches ranks every match, as the full join does."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cortex.core.model import Memory, Scope, Status
from cortex.core.recall.query import TextQuery
from cortex.store import open as stores
from cortex.store.port import StoreAdmin
from cortex.store.sqlite import fts, memories
from tests.conftest import T0

LIVE = ("active", "archived")
WORDS = TextQuery(("alpha", "beta", "gamma", "zeta"))  # no memory holds "zeta"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[StoreAdmin]:
    opened = stores.open_store(Scope.PROJECT, tmp_path / "memories", kind="sqlite")
    yield opened
    opened.close()


def fill(
    store: StoreAdmin, make_memory: Callable[..., Memory], every: int, some: int, superseded: int = 0
) -> None:
    """`every` memories holding alpha, beta and gamma (the first `superseded` of them superseded),
    `some` holding one or two of them."""
    texts = [f"alpha beta gamma note {i} " + "filler " * (i % 7) for i in range(every)]
    texts += [
        f"{('alpha', 'beta', 'gamma alpha')[i % 3]} other note {i} " + "x " * (i % 5) for i in range(some)
    ]
    with store.transaction():
        for i, text in enumerate(texts):
            status = Status.SUPERSEDED if i < superseded else Status.ACTIVE
            store.insert_memory(make_memory(text, status=status), "test", T0)


def full_join(store: StoreAdmin, query: TextQuery, limit: int) -> list[tuple[str, float]]:
    sql = fts.search_sql("m.id", "m.status IN (?, ?)")
    rows = store.conn.execute(sql, (fts.match_text(query), *LIVE, limit))  # type: ignore[attr-defined]
    return [(r[0], -float(r[1])) for r in rows]


def spy(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    taken: list[Any] = []
    real = memories._every_word_first
    monkeypatch.setattr(memories, "_every_word_first", lambda *a: taken.append(real(*a)) or taken[-1])
    return taken


def test_many_matches_rank_the_rows_holding_every_word_with_the_whole_querys_scores(
    store: StoreAdmin, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(store, make_memory, every=30, some=60)
    monkeypatch.setattr(memories, "SCORE_ALL_MAX", 20)
    taken = spy(monkeypatch)
    found = store.search_text(WORDS, 5, LIVE)
    assert taken[0] is not None and len(taken[0]) == 5 * memories.TOP_OVERFETCH  # every word first
    assert found == full_join(store, WORDS, 5)  # same rows, same scores, same order


def test_fewer_rows_with_every_word_than_fetched_still_answer_when_enough_qualify(
    store: StoreAdmin, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(store, make_memory, every=8, some=60)
    monkeypatch.setattr(memories, "SCORE_ALL_MAX", 20)
    taken = spy(monkeypatch)
    found = store.search_text(WORDS, 5, LIVE)
    assert taken[0] is not None and len(taken[0]) == 8  # fewer than the 20 fetched, more than 5
    assert found == full_join(store, WORDS, 5)


def test_too_few_of_them_live_rank_every_match(
    store: StoreAdmin, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(store, make_memory, every=8, some=60, superseded=5)  # 3 live rows hold every word
    monkeypatch.setattr(memories, "SCORE_ALL_MAX", 20)
    taken = spy(monkeypatch)
    found = store.search_text(WORDS, 5, LIVE)
    assert taken[0] is not None and len(taken[0]) == 8
    assert found == full_join(store, WORDS, 5) and len(found) == 5  # the full ranking answered


def test_too_few_rows_with_every_word_rank_every_match(
    store: StoreAdmin, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(store, make_memory, every=3, some=60)
    monkeypatch.setattr(memories, "SCORE_ALL_MAX", 20)
    taken = spy(monkeypatch)
    found = store.search_text(WORDS, 5, LIVE)
    assert taken == [None]
    assert found == full_join(store, WORDS, 5) and len(found) == 5  # rows missing a word too


def test_few_matches_are_all_ranked(
    store: StoreAdmin, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(store, make_memory, every=30, some=60)  # 90 matches, under SCORE_ALL_MAX
    taken = spy(monkeypatch)
    assert store.search_text(WORDS, 5, LIVE) == full_join(store, WORDS, 5)
    assert taken == [None]


def test_a_large_store_ranks_the_newest_matches_only(
    store: StoreAdmin, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    old = [make_memory(f"alpha alpha alpha {i}") for i in range(30)]  # the best scores, written first
    new = [make_memory(f"alpha and some longer filler text {i} " + "more " * (i % 4)) for i in range(60)]
    with store.transaction():
        for m in [*old, *new]:
            store.insert_memory(m, "test", T0)
    query = TextQuery(("alpha",))
    assert {mid for mid, _ in store.search_text(query, 5, LIVE)} <= {m.id for m in old}  # every match scored

    monkeypatch.setattr(memories, "SCORED_ALL_UNDER", 50)  # a store of 90 memories counts as large
    monkeypatch.setattr(memories, "SCORED_MAX", 40)
    found = store.search_text(query, 5, LIVE)
    newest = {m.id for m in new[-40:]}
    expected = [hit for hit in full_join(store, query, 90) if hit[0] in newest][:5]
    assert found == expected and len(found) == 5  # the newest 40 matches, with the full query's scores
    assert store.search_text(query, 5, ("superseded",)) == []  # the join over them: none qualifies


def test_updates_keep_the_keyword_index_in_step_whichever_fields_change(
    store: StoreAdmin, make_memory: Callable[..., Memory]
) -> None:
    from dataclasses import replace

    m = make_memory("alpha note", tags=("first",))
    with store.transaction():
        store.insert_memory(m, "test", T0)
    archived = replace(m, status=Status.ARCHIVED)  # the text unchanged: the index row is kept
    reworded = replace(archived, content="omega note", summary="omega", tags=("second",))
    with store.transaction():
        store.update_memory(m, archived, "test", T0, "archive")
    assert [mid for mid, _ in store.search_text(TextQuery(("alpha",)), 5, LIVE)] == [m.id]
    with store.transaction():
        store.update_memory(archived, reworded, "test", T0, "edit")
    assert store.search_text(TextQuery(("alpha",)), 5, LIVE) == []
    assert [mid for mid, _ in store.search_text(TextQuery(("omega",)), 5, LIVE)] == [m.id]
    assert [mid for mid, _ in store.search_text(TextQuery(("second",)), 5, LIVE)] == [m.id]
    assert store.get(m.id) == reworded
    store.conn.execute(fts.INTEGRITY_CHECK_SQL)  # type: ignore[attr-defined]  # raises when out of step
