"""The cortex adapter of the retrieval harness: real write and recall paths, a fake embedder."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

import pytest

from benchmarks.retrieval.cortex_system import CortexSystem
from benchmarks.retrieval.system import IngestItem, RetrievalSystem
from cortex.core.recall.decide import RecallParams
from tests.support.fakes import FakeEmbedder

DAY = datetime(2023, 5, 8, 13, 56)


@pytest.fixture
def system() -> Iterator[CortexSystem]:
    fake = FakeEmbedder(dim=64)
    made = CortexSystem(RecallParams(abstain=False), embedders=(fake, fake, "fake embedder"))
    try:
        yield made
    finally:
        made.close()


def items() -> list[IngestItem]:
    return [
        IngestItem("m1", "Caroline: I went to the LGBTQ support group yesterday", DAY),
        IngestItem("m2", "Melanie: Thanks, Caroline!", DAY),
        IngestItem("m3", "Melanie: I painted a sunrise over the lake last week", DAY + timedelta(days=30)),
        IngestItem("m4", "Melanie: thanks, caroline!", DAY + timedelta(days=30)),  # same text again
        IngestItem("m5", "Caroline: I am researching adoption agencies", DAY + timedelta(days=60)),
    ]


def test_it_is_a_retrieval_system(system: CortexSystem) -> None:
    assert isinstance(system, RetrievalSystem)
    described = system.describe()
    assert {"embedder", "reranker", "llm"} <= set(described)
    assert described["llm"] == "none"


def test_search_returns_ingested_keys_best_first(system: CortexSystem) -> None:
    system.reset()
    system.ingest(items())
    keys = system.search("Which sunrise did she paint over the lake?", DAY + timedelta(days=90), 3)
    assert keys[0] == "m3"
    assert len(keys) <= 3


def test_a_memory_the_gate_merged_answers_with_every_key(system: CortexSystem) -> None:
    system.reset()
    system.ingest(items())
    keys = system.search("thanks Caroline", DAY + timedelta(days=90), 5)
    assert "m2+m4" in keys
    parts = [part for key in keys for part in key.split("+")]
    assert len(parts) == len(set(parts))


def test_reset_starts_an_empty_store(system: CortexSystem) -> None:
    system.reset()
    system.ingest(items())
    system.reset()
    assert system.search("adoption agencies", DAY + timedelta(days=90), 5) == []
    system.ingest(items()[-1:])
    assert system.search("adoption agencies", DAY + timedelta(days=90), 5) == ["m5"]


def test_the_question_date_is_recalls_now(system: CortexSystem) -> None:
    system.reset()
    system.ingest(items())
    evidence = system.evidence("What did Melanie paint last week?", DAY + timedelta(days=33))
    assert evidence["best_cosine"] is not None and evidence["best_coverage"] > 0
