"""The worker embeds a chunk's candidates for the write gate in one call, and embedding the stored
memories after the commit does not embed those texts again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cortex.app import Cortex
from cortex.backends.port import Choice
from cortex.capture import write as writer
from cortex.capture.embed import MAX_REMEMBERED, Remembering, remembered, remembering
from cortex.core.model import Candidate, Layer, MemoryType, Scope, Source
from cortex.paths import resolve_paths
from cortex.plugin.worker import embed_touched
from tests.support.fakes import FakeEmbedder

NOTES = (
    "We pin the payment SDK to 4.2 because 4.3 drops the idempotency header",
    "The staging deploy needs the migrations run before the workers start",
    "Feature flags are read once per request, never cached across requests",
)


@pytest.fixture
def fake() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def fcx(project: Path, fake: FakeEmbedder) -> Iterator[Cortex]:
    cx = Cortex(resolve_paths(project), query_embedder=Choice(fake, "fake embedder"))
    yield cx
    cx.close()


def test_a_chunk_is_embedded_once_for_the_gate_and_not_again_for_its_vectors(
    fcx: Cortex, fake: FakeEmbedder
) -> None:
    store = fcx.store(Scope.PROJECT)
    assert store is not None
    items = [
        (Candidate(content=text, type=MemoryType.DECISION, layer=Layer.LEXICAL, confidence=0.7), Source())
        for text in NOTES
    ]
    with store.transaction():
        outcomes = writer.write_batch(fcx, store, items)
    assert len(outcomes) == 3 and all(o.action.changed for o in outcomes)
    assert len(fake.calls[0]) == 3  # the whole chunk in the first call
    assert all(note in text for note, text in zip(NOTES, fake.calls[0], strict=True))

    before = len(fake.calls)
    touched = {Scope.PROJECT: {o.memory.id: o.memory for o in outcomes}}
    assert embed_touched(fcx, touched, fake) == 3
    embedded_after = [t for call in fake.calls[before:] for t in call]
    assert not any(note in text for note in NOTES for text in embedded_after)  # remembered, not redone
    index = store.vector_index(fake.key)
    assert index is not None and store.count_unembedded(index.name) == 0


def test_one_wrapper_per_embedder_and_a_bounded_memory(fake: FakeEmbedder) -> None:
    shared = remembered(fake)
    assert remembered(fake) is shared and remembering(fake) is shared and remembered(shared) is shared
    assert remembering(None) is None
    assert isinstance(shared, Remembering)
    texts = [f"note {i}" for i in range(MAX_REMEMBERED + 10)]
    first = shared.embed_documents(texts[:1])
    shared.embed_documents(texts[1:])
    calls = len(fake.calls)
    again = shared.embed_documents(texts[:1])  # pushed out by newer texts: embedded again, same vector
    assert len(fake.calls) == calls + 1 and (again == first).all()
    shared.embed_documents(texts[-1:])  # still held
    assert len(fake.calls) == calls + 1


def test_a_call_with_anything_new_reaches_an_embedder_that_reads_calls_whole(fake: FakeEmbedder) -> None:
    # A hosted embedder strips a window's code using the memory it is cut from, in the same call:
    # a remembered memory text must still travel with its new windows.
    fake.reads_calls_whole = True  # type: ignore[attr-defined]
    shared = Remembering(fake)
    shared.embed_documents(["[architecture] the whole memory"])
    shared.embed_documents(["[architecture] the whole memory", "[architecture] a window of it"])
    assert fake.calls[-1] == ("[architecture] the whole memory", "[architecture] a window of it")
    calls = len(fake.calls)
    shared.embed_documents(["[architecture] a window of it", "[architecture] the whole memory"])
    assert len(fake.calls) == calls  # everything remembered: nothing sent


def test_a_local_embedder_gets_only_the_new_texts(fake: FakeEmbedder) -> None:
    shared = Remembering(fake)
    shared.embed_documents(["[architecture] the whole memory"])
    shared.embed_documents(["[architecture] the whole memory", "[architecture] a window of it"])
    assert fake.calls[-1] == ("[architecture] a window of it",)
