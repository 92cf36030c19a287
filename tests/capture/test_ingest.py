"""Batch ingest on a real store: the write gate per item, item times, vectors and chunk vectors."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from cortex.app import Cortex
from cortex.backends.port import Choice
from cortex.capture import embed, ingest
from cortex.core.model import Candidate, Layer, Memory, MemoryType, Scope, Source
from cortex.core.recall.decide import RecallParams, RecallRequest
from cortex.core.write.chunks import CHUNK_SLOTS, plan_chunks
from cortex.paths import resolve_paths
from cortex.recall import gather as candidates
from cortex.recall.search import recall
from cortex.store.sqlite import chunk_vectors
from tests.conftest import T0
from tests.support.fakes import FakeEmbedder


@pytest.fixture
def fake() -> FakeEmbedder:
    return FakeEmbedder(dim=32)


@pytest.fixture
def cx(project: Path, fake: FakeEmbedder) -> Iterator[Cortex]:
    context = Cortex(
        resolve_paths(project),
        clock=lambda: T0 + timedelta(days=400),
        query_embedder=Choice(fake, "fake embedder"),
    )
    try:
        yield context
    finally:
        context.close()


def item(text: str, days: int, session: str | None = None) -> ingest.BatchItem:
    cand = Candidate(content=text, type=MemoryType.CONTEXT, layer=Layer.USER, confidence=0.9)
    return ingest.BatchItem(cand, T0 + timedelta(days=days), Source(session_id=session))


LONG = " ".join(f"word{i}" for i in range(300)) + " the secret ingredient is cardamom"


def test_each_item_is_gated_against_the_ones_before_it(cx: Cortex, fake: FakeEmbedder) -> None:
    outcomes = ingest.ingest_batch(
        cx,
        [
            item("We deploy staging from the release branch", 1),
            item("we deploy staging from the release branch", 2),  # same text, other case
            item("The API client is generated from the OpenAPI file", 3),
        ],
        embedder=fake,
    )
    assert [o.action for o in outcomes] == ["stored", "duplicate", "stored"]
    assert outcomes[1].memory_id == outcomes[0].memory_id
    store = cx.store(Scope.PROJECT, create=False)
    assert store is not None
    assert len(store.list_memories()) == 2


def test_each_memory_keeps_its_own_time_and_session(cx: Cortex, fake: FakeEmbedder) -> None:
    outcomes = ingest.ingest_batch(
        cx, [item("first note about caching", 5, "s1"), item("second note about queues", 9, "s2")]
    )
    store = cx.store(Scope.PROJECT, create=False)
    assert store is not None
    first = store.get(outcomes[0].memory_id or "")
    second = store.get(outcomes[1].memory_id or "")
    assert first is not None and second is not None
    assert first.created == T0 + timedelta(days=5)
    assert second.created == T0 + timedelta(days=9)
    assert (first.source.session_id, second.source.session_id) == ("s1", "s2")


def test_redaction_runs_before_anything_is_stored(cx: Cortex) -> None:
    secret = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8" * 5
    outcomes = ingest.ingest_batch(cx, [item(f"the key is {secret}", 1), item("<private>x</private>", 2)])
    store = cx.store(Scope.PROJECT, create=False)
    assert store is not None
    stored = store.get(outcomes[0].memory_id or "")
    assert stored is not None and secret not in stored.content
    assert outcomes[1].action == "empty" and outcomes[1].memory_id is None


def test_long_memories_get_one_vector_per_extra_window(cx: Cortex, fake: FakeEmbedder) -> None:
    outcomes = ingest.ingest_batch(cx, [item(LONG, 1), item("a short note", 2)], embedder=fake)
    store = cx.store(Scope.PROJECT, create=False)
    assert store is not None
    windows = plan_chunks(LONG)
    assert windows  # the text is long enough to need them
    texts = [t for call in fake.calls for t in call]
    memory = store.get(outcomes[0].memory_id or "")
    assert memory is not None
    wanted = embed.embedding_texts(cx, memory, Scope.PROJECT)
    assert len(wanted) == 1 + len(windows) and wanted[-1].endswith(windows[-1])
    assert all(texts.count(t) == 1 for t in wanted)
    table = chunk_vectors.existing_chunk_index(store.conn, fake.key)
    assert table is not None
    rows = store.row_numbers([o.memory_id or "" for o in outcomes])
    long_n = rows[outcomes[0].memory_id or ""]
    stored = store.conn.execute(f"SELECT rowid FROM {table} ORDER BY rowid").fetchall()
    assert [r[0] for r in stored] == [long_n * CHUNK_SLOTS + i for i in range(len(windows))]
    assert store.count_unembedded(store.vector_index(fake.key).name) == 0  # type: ignore[union-attr]


def test_vector_search_sees_a_long_memory_by_its_best_window(cx: Cortex, fake: FakeEmbedder) -> None:
    # The fake embeds whole texts (no 256-token cut), so the memory's own vector is diluted by
    # the 300 filler words while its last window is mostly about the query: max-pooling wins.
    outcomes = ingest.ingest_batch(cx, [item("a note about queues", 1), item(LONG, 2)], embedder=fake)
    long_id = outcomes[-1].memory_id
    params = RecallParams(abstain=False, use_lexical=False, use_prf=False, use_graph=False, use_mmr=False)
    req = RecallRequest("secret ingredient cardamom", limit=3)

    def cosine(p: RecallParams) -> float:
        hits = recall(cx, req, scope="project", params=p, record=False).hits
        return next(h.signals["cosine"] for h in hits if h.memory.id == long_id)

    pooled = cosine(params)
    own = cosine(dataclasses.replace(params, use_chunks=False))
    window = fake.embed_query(embed.embedding_texts(cx, _stored(cx, long_id), Scope.PROJECT)[-1])
    # The query is embedded exactly as recall embeds it (bare or prefixed, per the default).
    query = fake.embed_query(candidates.query_text(cx, req, params.query_prefix))
    assert pooled > own
    assert pooled == pytest.approx(float(window @ query), abs=1e-5)


def _stored(cx: Cortex, memory_id: str | None) -> Memory:
    store = cx.store(Scope.PROJECT, create=False)
    assert store is not None
    found = store.get(memory_id or "")
    assert found is not None
    return found


def test_write_embeddings_is_idempotent(cx: Cortex, fake: FakeEmbedder) -> None:
    outcomes = ingest.ingest_batch(cx, [item(LONG, 1)], embedder=fake)
    store = cx.store(Scope.PROJECT, create=False)
    assert store is not None
    memory = store.get(outcomes[0].memory_id or "")
    assert memory is not None
    table = chunk_vectors.existing_chunk_index(store.conn, fake.key)
    before = store.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    embed.write_embeddings(cx, store, [memory], fake)
    assert store.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == before
