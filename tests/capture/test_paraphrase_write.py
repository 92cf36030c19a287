"""Paraphrases through the real write paths, the real model and real SQLite: one memory, one
briefing line, the other wordings kept as evidence; near misses stay apart; consolidation
finds the paraphrases the gate could not compare."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cortex.app import Cortex
from cortex.briefing.deliver import render_current
from cortex.capture import manual
from cortex.capture import write as writer
from cortex.capture.embed import embed_memories
from cortex.core.briefing.compose import BriefingPart
from cortex.core.model import Candidate, EdgeType, Layer, MemoryType, Scope, Source, Status
from cortex.core.text import content_hash
from cortex.core.write.apply import WriteEffect
from cortex.lifecycle.upkeep import consolidate
from cortex.paths import resolve_paths
from cortex.store.port import StoreAdmin
from tests.support.paraphrase_pairs import WEBHOOK, WEBHOOK_3D, WEBHOOK_72H

NEAR_MISSES = (
    "The payment provider retries webhooks for 24 hours, so our side never retries them",
    "We always retry payment webhooks ourselves, since the provider does not retry them",
    "The payment provider retries webhooks for 72 hours, so our side retries them too",
)

pytestmark = pytest.mark.slow


@pytest.fixture
def model_cx(real_model: Path, project: Path) -> Iterator[Cortex]:
    cx = Cortex(resolve_paths(project))
    try:
        assert cx.query_embedder_ready()
        yield cx
    finally:
        cx.close()


def _store(cx: Cortex) -> StoreAdmin:
    return cx.write_store(Scope.PROJECT)


def _active_about_webhooks(store: StoreAdmin) -> list[str]:
    return [t.content for t in store.active_texts() if "webhook" in t.content.lower()]


def _briefing_lines_about_webhooks(cx: Cortex) -> list[str]:
    text = render_current(cx, indexed=False).parts[BriefingPart.FULL].text
    return [line for line in text.splitlines() if "webhook" in line.lower()]


def _assert_kept_as_evidence(store: StoreAdmin, keeper: str, texts: tuple[str, ...]) -> None:
    derived = {
        e.target for e in store.edges([keeper]) if e.type is EdgeType.DERIVED_FROM and e.source == keeper
    }
    for text in texts:
        kept = store.by_hash(content_hash(text))
        assert kept is not None and kept.content == text, text  # no wording is lost
        assert kept.status is Status.SUPERSEDED and kept.id in derived


def test_the_webhook_paraphrases_through_remember_end_as_one_briefing_line(model_cx: Cortex) -> None:
    first = manual.remember(model_cx, WEBHOOK)
    again = [manual.remember(model_cx, text) for text in (WEBHOOK_72H, WEBHOOK_3D)]
    assert first.action is WriteEffect.STORED
    assert [o.action for o in again] == [WriteEffect.REINFORCED, WriteEffect.REINFORCED], [
        o.reason for o in again
    ]
    assert {o.memory.id for o in again} == {first.memory.id}
    assert all("paraphrase" in o.reason for o in again)
    store = _store(model_cx)
    assert _active_about_webhooks(store) == [WEBHOOK]
    _assert_kept_as_evidence(store, first.memory.id, (WEBHOOK_72H, WEBHOOK_3D))
    assert len(_briefing_lines_about_webhooks(model_cx)) == 1
    # The same paraphrase once more is an exact duplicate of its evidence: nothing changes.
    assert manual.remember(model_cx, WEBHOOK_3D).action is WriteEffect.DUPLICATE


def test_near_misses_stay_apart_however_close_their_embeddings(model_cx: Cortex) -> None:
    manual.remember(model_cx, WEBHOOK_72H)
    outcomes = [manual.remember(model_cx, text) for text in NEAR_MISSES]
    assert [o.action for o in outcomes] == [WriteEffect.STORED] * 3, [o.reason for o in outcomes]
    assert sorted(_active_about_webhooks(_store(model_cx))) == sorted([WEBHOOK_72H, *NEAR_MISSES])


def test_the_worker_write_path_merges_paraphrases_within_one_chunk(model_cx: Cortex) -> None:
    store = _store(model_cx)
    items = [
        (Candidate(content=t, type=MemoryType.DECISION, layer=Layer.LEXICAL, confidence=0.7), Source())
        for t in (WEBHOOK, WEBHOOK_72H, WEBHOOK_3D, NEAR_MISSES[0])
    ]
    with store.transaction():  # as the worker writes a chunk: one transaction, nothing embedded yet
        outcomes = writer.write_batch(model_cx, store, items)
    assert [o.action for o in outcomes] == [
        WriteEffect.STORED,
        WriteEffect.REINFORCED,
        WriteEffect.REINFORCED,
        WriteEffect.STORED,
    ], [o.reason for o in outcomes]
    assert sorted(_active_about_webhooks(store)) == sorted([WEBHOOK, NEAR_MISSES[0]])
    _assert_kept_as_evidence(store, outcomes[0].memory.id, (WEBHOOK_72H, WEBHOOK_3D))


@pytest.mark.parametrize("full", [False, True])
def test_consolidation_finds_paraphrases_the_gate_never_compared(model_cx: Cortex, full: bool) -> None:
    store = _store(model_cx)
    written = []
    for text in (WEBHOOK, WEBHOOK_72H, WEBHOOK_3D, *NEAR_MISSES[:2]):
        cand = Candidate(content=text, type=MemoryType.DECISION, layer=Layer.USER, confidence=0.9)
        written.append(writer.write_candidate(model_cx, cand, Source(), embedder=None).memory)  # words only
    assert len(_active_about_webhooks(store)) == 5
    embedder = writer.fast_embedder(model_cx)
    assert embedder is not None and embed_memories(model_cx, store, written, embedder)

    report = consolidate(model_cx, dry_run=True, full=full)
    planned = next(s.plan for s in report.stores if s.scope is Scope.PROJECT)
    assert len(planned.merges) == 1
    (merge,) = planned.merges
    merged = {merge.keeper.content, *(m.content for m in merge.absorbed)}
    assert merged == {WEBHOOK, WEBHOOK_72H, WEBHOOK_3D}

    consolidate(model_cx, full=full)
    assert sorted(_active_about_webhooks(store)) == sorted([merge.keeper.content, *NEAR_MISSES[:2]])
    absorbed = tuple(m.content for m in merge.absorbed)
    _assert_kept_as_evidence(store, merge.keeper.id, absorbed)
    assert len(_briefing_lines_about_webhooks(model_cx)) == 3  # the paraphrases once, each near miss


def test_eighty_notes_that_differ_only_in_numbers_stay_eighty_with_the_model(model_cx: Cortex) -> None:
    # The look-alikes are at cosine 0.88-0.97 of each other: only the numbers tell them apart.
    for worker in range(1, 9):
        for n in range(1, 11):
            text = f"worker {worker} note {n}: unique fact number {worker}-{n} about shard {worker}{n:02d}"
            outcome = manual.remember(model_cx, text, mem_type="context")
            assert outcome.action is WriteEffect.STORED, (text, outcome.reason)
    texts = [t.content for t in _store(model_cx).active_texts() if t.content.startswith("worker ")]
    assert len(texts) == 80
