"""The count of memories waiting for a vector is kept between queries, and follows every change:
this connection's own writes as well as another connection's commits."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from cortex.core.model import Memory, Scope, Status
from cortex.store import open as stores
from cortex.store.packing import pack
from cortex.store.port import StoreAdmin
from tests.conftest import T0


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[Callable[[], StoreAdmin]]:
    made: list[StoreAdmin] = []

    def open_one() -> StoreAdmin:
        store = stores.open_store(Scope.PROJECT, tmp_path / "memories", kind="sqlite")
        made.append(store)
        return store

    yield open_one
    for store in made:
        store.close()


def put(store: StoreAdmin, *memories: Memory) -> None:
    with store.transaction():
        for m in memories:
            store.insert_memory(m, "test", T0)


def test_the_count_follows_this_connections_writes_and_anothers(
    opened: Callable[[], StoreAdmin], make_memory: Callable[..., Memory]
) -> None:
    store = opened()
    if not store.vectors:
        pytest.skip(f"this store cannot hold vectors here: {store.vector_note}")
    a, b = make_memory("alpha note"), make_memory("beta note")
    put(store, a, b)
    with store.transaction():
        table = store.ensure_vector_index("fake-4", 4, T0)
    assert store.count_unembedded(table) == 2
    assert store.count_unembedded(table) == 2  # asked again: nothing changed

    with store.transaction():
        store.write_vectors(table, [(a.id, pack([1, 0, 0, 0]))])
    assert store.count_unembedded(table) == 1  # a vector written here

    c = make_memory("gamma note")
    put(store, c)
    assert store.count_unembedded(table) == 2  # a new memory here

    with store.transaction():
        store.update_memory(b, replace(b, status=Status.SUPERSEDED), "test", T0, "supersede")
    assert store.count_unembedded(table) == 1  # a memory left the queue

    other = opened()
    put(other, make_memory("delta note"), make_memory("epsilon note"))
    assert store.count_unembedded(table) == 3  # another connection's commit
    assert store.count_unembedded(table) == len(store.unembedded(table))


def test_recalls_access_counts_keep_the_count_and_other_writes_beside_them_do_not(
    opened: Callable[[], StoreAdmin], make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cortex.store.sqlite import vectors

    store = opened()
    if not store.vectors:
        pytest.skip(f"this store cannot hold vectors here: {store.vector_note}")
    a, b = make_memory("alpha note"), make_memory("beta note")
    put(store, a, b)
    with store.transaction():
        table = store.ensure_vector_index("fake-4", 4, T0)
    counted: list[int] = []
    real = vectors.count_pending
    monkeypatch.setattr(vectors, "count_pending", lambda conn, t: counted.append(1) or real(conn, t))
    assert store.count_unembedded(table) == 2
    with store.transaction():  # what a recall writes after its search
        store.record_access([a.id, b.id], T0, "test")
    assert store.count_unembedded(table) == 2
    assert len(counted) == 1  # an access count moves nobody in or out of the queue: not counted again

    c = make_memory("gamma note")
    with store.transaction():  # a new memory and an access in one transaction
        store.insert_memory(c, "test", T0)
        store.record_access([a.id], T0, "test")
    assert store.count_unembedded(table) == 3
    with store.transaction():
        store.record_access([c.id], T0, "test")
        store.update_memory(c, replace(c, status=Status.SUPERSEDED), "test", T0, "supersede")
    assert store.count_unembedded(table) == 2 == len(store.unembedded(table))


def test_the_count_is_the_length_of_the_queue_whatever_holds_a_vector(
    opened: Callable[[], StoreAdmin], make_memory: Callable[..., Memory]
) -> None:
    from cortex.core.model import MemoryType

    store = opened()
    if not store.vectors:
        pytest.skip(f"this store cannot hold vectors here: {store.vector_note}")
    made = [
        make_memory(f"note {status.value} {kind.value} {with_vector}", status=status, type=kind)
        for status in Status
        for kind in (MemoryType.DECISION, MemoryType.CODE)
        for with_vector in (False, True)
    ]
    put(store, *made)
    with store.transaction():
        table = store.ensure_vector_index("fake-4", 4, T0)
        other = store.ensure_vector_index("other-4", 4, T0)
        # A vector kept for a superseded, pruned or code memory is no vector of a pending one.
        store.write_vectors(table, [(m.id, pack([1, 0, 0, 0])) for m in made if m.content.endswith("True")])
        store.write_vectors(other, [(m.id, pack([0, 1, 0, 0])) for m in made])  # another embedder's
    expected = [
        m.id
        for m in made
        if m.status in (Status.ACTIVE, Status.ARCHIVED)
        and m.type is not MemoryType.CODE
        and m.content.endswith("False")
    ]
    assert len(expected) == 2 and sorted(store.unembedded(table)) == sorted(expected)
    assert store.count_unembedded(table) == 2
    assert store.count_unembedded(None) == 4  # no index yet: every embeddable memory waits


def test_an_update_that_keeps_a_memory_embeddable_keeps_the_count_and_one_that_does_not_recounts(
    opened: Callable[[], StoreAdmin], make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cortex.core.model import MemoryType
    from cortex.store.sqlite import vectors

    store = opened()
    if not store.vectors:
        pytest.skip(f"this store cannot hold vectors here: {store.vector_note}")
    a, b = make_memory("alpha note", status=Status.ARCHIVED), make_memory("beta note")
    put(store, a, b)
    with store.transaction():
        table = store.ensure_vector_index("fake-4", 4, T0)
    counted: list[int] = []
    real = vectors.count_pending
    monkeypatch.setattr(vectors, "count_pending", lambda conn, t: counted.append(1) or real(conn, t))
    assert store.count_unembedded(table) == 2
    with store.transaction():  # what a recall of an archived memory writes: its restore
        store.update_memory(a, replace(a, status=Status.ACTIVE), "test", T0, "restore")
    assert store.count_unembedded(table) == 2
    assert len(counted) == 1  # archived and active both wait for a vector: not counted again

    with store.transaction():  # code is found by its description: it leaves the queue
        store.update_memory(b, replace(b, type=MemoryType.CODE), "test", T0, "retype")
    assert store.count_unembedded(table) == 1 == len(store.unembedded(table))
    assert len(counted) == 2
