"""The in-memory vector copy: same neighbours as vec0, and never stale after a write."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from cortex.app import Cortex
from cortex.backends.port import Choice
from cortex.capture import ingest
from cortex.core.model import Candidate, Layer, MemoryType, Scope, Source
from cortex.paths import resolve_paths
from cortex.store.packing import pack
from cortex.store.sqlite import vector_matrix, vectors
from cortex.store.sqlite.store import Store
from tests.conftest import T0
from tests.support.fakes import FakeEmbedder

WORDS = ("queue", "lock", "worker", "deploy", "cache", "index", "schema", "token", "retry", "budget")


@pytest.fixture
def fake() -> FakeEmbedder:
    return FakeEmbedder(dim=24)


@pytest.fixture
def cx(project: Path, fake: FakeEmbedder) -> Iterator[Cortex]:
    vector_matrix.forget_all()
    context = Cortex(resolve_paths(project), query_embedder=Choice(fake, "fake embedder"))
    try:
        yield context
    finally:
        context.close()
        vector_matrix.forget_all()


def write(cx: Cortex, fake: FakeEmbedder, texts: list[str]) -> None:
    items = [
        ingest.BatchItem(
            Candidate(content=t, type=MemoryType.CONTEXT, layer=Layer.USER, confidence=0.9),
            T0 + timedelta(days=i),
            Source(),
        )
        for i, t in enumerate(texts)
    ]
    ingest.ingest_batch(cx, items, embedder=fake, centrality=False)


def notes(start: int, n: int) -> list[str]:
    return [
        f"note {i}: " + " ".join(WORDS[(i * j) % len(WORDS)] for j in range(1, 5))
        for i in range(start, start + n)
    ]


def table_of(store: Store, fake: FakeEmbedder) -> str:
    found = vectors.existing_index(store.conn, fake.key)
    assert found is not None
    return found[0]


def query(fake: FakeEmbedder, text: str) -> bytes:
    return pack([float(x) for x in fake.embed_query(text)])


def test_the_copy_finds_what_vec0_finds(cx: Cortex, fake: FakeEmbedder) -> None:
    write(cx, fake, notes(0, 40))
    store = cx.write_store(Scope.PROJECT)
    table = table_of(store, fake)
    q = query(fake, "worker retry queue")
    plain = vectors.knn(store.conn, table, q, 10)
    for _ in range(vector_matrix.LOAD_AFTER_SEARCHES + 1):  # the last searches use the copy
        held = vectors.nearest(store.conn, table, q, 10)
    assert vector_matrix._COPIES, "the table was searched often enough to be held"
    # Same distances in the same order; rows may differ only among ties at the cut.
    assert [d for _, d in held] == pytest.approx([d for _, d in plain], abs=1e-5)
    cut = plain[-1][1] - 1e-5
    assert {n for n, d in held if d < cut} == {n for n, d in plain if d < cut}
    rows = [n for n, _ in plain[:3]]
    from_copy = vectors.read_vectors(store.conn, table, rows, exact=False)
    assert from_copy.keys() == vectors.read_vectors(store.conn, table, rows).keys()


def test_a_write_in_this_process_refreshes_the_copy(cx: Cortex, fake: FakeEmbedder) -> None:
    write(cx, fake, notes(0, 20))
    store = cx.write_store(Scope.PROJECT)
    table = table_of(store, fake)
    q = query(fake, "the brand new memory about zebras")
    for _ in range(vector_matrix.LOAD_AFTER_SEARCHES):
        vectors.nearest(store.conn, table, q, 5)
    write(cx, fake, ["the brand new memory about zebras"])
    newest = store.row_numbers([m.id for m in store.list_memories() if "zebras" in m.content])
    assert vectors.nearest(store.conn, table, q, 1)[0][0] == next(iter(newest.values()))


def test_a_write_from_another_connection_refreshes_the_copy(
    cx: Cortex, fake: FakeEmbedder, project: Path
) -> None:
    write(cx, fake, notes(0, 20))
    store = cx.write_store(Scope.PROJECT)
    table = table_of(store, fake)
    q = query(fake, "zebras graze on the savannah")
    for _ in range(vector_matrix.LOAD_AFTER_SEARCHES):
        vectors.nearest(store.conn, table, q, 5)
    assert vector_matrix._COPIES
    # Another process's write: plain SQL on another connection, so nothing in this process is told.
    other = Cortex(resolve_paths(project), query_embedder=Choice(fake, "fake embedder"))
    try:
        theirs = other.write_store(Scope.PROJECT)
        with theirs.transaction():
            theirs.conn.execute(f"INSERT INTO {table}(rowid, embedding) VALUES (?, ?)", (999_999, q))
    finally:
        other.close()
    assert vectors.nearest(store.conn, table, q, 1)[0][0] == 999_999


def test_a_process_that_writes_between_searches_never_reloads_the_table(
    cx: Cortex, fake: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `remember` after `remember`: each write gate searches once, then a vector is written.
    write(cx, fake, notes(0, 20))
    store = cx.write_store(Scope.PROJECT)
    table = table_of(store, fake)
    loads: list[str] = []
    real_load = vector_matrix._load

    def counting(*args: object) -> object:
        loads.append("load")
        return real_load(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(vector_matrix, "_load", counting)
    q = query(fake, "worker retry queue")
    for i in range(4):
        assert vectors.nearest(store.conn, table, q, 3)  # vec0 answers: nothing loaded
        write(cx, fake, [f"zebra note {i}"])
    assert loads == []
    for _ in range(vector_matrix.LOAD_AFTER_SEARCHES):  # searches with no write between: held
        vectors.nearest(store.conn, table, q, 3)
    assert loads == ["load"]
