"""Consolidation without all pairs: its plans equal the all-pairs plans, full and incremental.

Stores come from `benchmarks.gen_store` (real SQLite, FTS5 and sqlite-vec) with its synthetic
vectors: the plan reads stored vectors only to settle the uncertain band, so any vectors that
put some pairs above the duplicate cosine and most below test the same code, and these need
no model (the same equality holds on the benchmark stores embedded with all-MiniLM-L6-v2).
The reference is the definition: every pair of the same type with word Jaccard >= 0.5 (exact
prefix filtering), planned by the same core.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from benchmarks.gen_store import build_store, generate_memories, write_synthetic_vectors
from cortex.app import Cortex
from cortex.config import Settings
from cortex.core.lifecycle import consolidate as merging
from cortex.core.lifecycle.health import content_health
from cortex.core.model import EdgeStatus, Memory, Scope, Status
from cortex.core.text import content_hash, jaccard, words
from cortex.core.write import similar
from cortex.core.write.gate import NEAR_DUPLICATE_JACCARD, POLARITY_WORDS
from cortex.lifecycle import pairs
from cortex.lifecycle import upkeep as lifecycle
from cortex.paths import Paths
from cortex.store.port import StoreAdmin

NOW = datetime(2026, 2, 1, tzinfo=UTC)


def all_pairs_plan(
    cx: Cortex, store: StoreAdmin, probes: Collection[str] | None
) -> merging.ConsolidationPlan:
    """The plan from every pair with Jaccard >= 0.5 (with a member in `probes`, when given)."""
    found = similar.find_similar_pairs(store.active_texts(), probes=probes)
    involved = sorted({i for p in found for i in (p.a, p.b)})
    memories = list(store.get_many(involved).values())
    cosines = lifecycle.read_cosines(cx, store, merging.pairs_needing_cosine(memories, found))
    edges = {(e.source, e.target, e.type): e for e in store.edges(involved)}
    edges.update({(e.source, e.target, e.type): e for e in store.edges(status=EdgeStatus.SUGGESTED.value)})
    ordered = [edges[k] for k in sorted(edges, key=lambda k: (k[0], k[1], k[2].value))]
    return merging.plan_consolidation(memories, ordered, NOW, pairs=found, cosines=cosines)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int], Path]:
    """Generated stores by size, built once per module."""
    made: dict[int, Path] = {}

    def get(n: int) -> Path:
        if n not in made:
            root = tmp_path_factory.mktemp(f"store-{n}")
            build_store(root, n, seed=3, synthetic=True)
            made[n] = root
        return made[n]

    return get


@pytest.fixture
def opened(
    built: Callable[[int], Path], tmp_path: Path
) -> Iterator[Callable[[int], tuple[Cortex, StoreAdmin]]]:
    contexts: list[Cortex] = []

    def open_size(n: int) -> tuple[Cortex, StoreAdmin]:
        cx = Cortex(Paths(built(n), tmp_path / "home"), Settings(embedder="none"), clock=lambda: NOW)
        contexts.append(cx)
        return cx, cx.write_store(Scope.PROJECT)

    yield open_size
    for cx in contexts:
        cx.close()


def add_turn(store: StoreAdmin, n: int, count: int) -> set[str]:
    """`count` new memories from the same generator (so some resemble stored ones), plus a
    restatement and a negation of a few stored ones; with vectors."""
    fresh: list[Memory] = []
    for m, _ in generate_memories(20 * count, seed=n + 11):
        if m.status is Status.ACTIVE and store.by_hash(m.content_hash) is None and store.get(m.id) is None:
            fresh.append(m)
        if len(fresh) == count:
            break
    stored = [m for m in store.list_memories(types=["decision", "gotcha"])][:3]
    for i, m in enumerate(stored):
        for j, text in enumerate((f"{m.content} Confirmed again", f"Not true: {m.content}")):
            fresh.append(replace(m, id=f"turn{i}{j}", content=text, content_hash=content_hash(text)))
    with store.transaction():
        for m in fresh:
            store.insert_memory(m, "test", m.created)
    write_synthetic_vectors(store, fresh)
    return {m.id for m in fresh}


def check_equal(opened: Callable[[int], tuple[Cortex, StoreAdmin]], n: int, monkeypatch: Any) -> None:
    cx, store = opened(n)
    full = lifecycle.plan_store(cx, store)
    assert full == all_pairs_plan(cx, store, None)
    assert full.contradictions and not full.empty  # so that equality says something
    seq = store.journal_seq()
    probes = add_turn(store, n, 40)
    expected = all_pairs_plan(cx, store, probes)
    assert expected.merges and expected.contradictions
    assert lifecycle.plan_store(cx, store, since_seq=seq) == expected  # from the store's indexes
    monkeypatch.setattr(pairs, "STORE_PROBES", 0)
    assert lifecycle.plan_store(cx, store, since_seq=seq) == expected  # in memory
    monkeypatch.setattr(pairs, "STORE_PROBES", 64)
    monkeypatch.setattr(pairs, "WordSearch", type("NoWordSearch", (), {}))
    assert lifecycle.plan_store(cx, store, since_seq=seq) == expected  # an adapter without word search


def test_plans_equal_the_all_pairs_plans_at_1000_memories(
    opened: Callable[[int], tuple[Cortex, StoreAdmin]], monkeypatch: pytest.MonkeyPatch
) -> None:
    check_equal(opened, 1_000, monkeypatch)


@pytest.mark.slow
def test_plans_equal_the_all_pairs_plans_at_10000_memories(
    opened: Callable[[int], tuple[Cortex, StoreAdmin]], monkeypatch: pytest.MonkeyPatch
) -> None:
    check_equal(opened, 10_000, monkeypatch)


def test_an_incremental_run_compares_only_what_changed_and_full_compares_everything(
    opened: Callable[[int], tuple[Cortex, StoreAdmin]],
) -> None:
    cx, store = opened(1_000)
    with store.transaction():
        store.set_meta(lifecycle.META_CONSOLIDATED_SEQ, str(store.journal_seq()))
    assert lifecycle.consolidate(cx, dry_run=True).stores[0].plan.empty  # nothing changed since
    whole = lifecycle.consolidate(cx, dry_run=True, full=True).stores[0].plan
    assert whole == lifecycle.plan_store(cx, store) and not whole.empty


def test_a_new_negation_finds_the_memory_it_negates_when_that_holds_no_polarity_word(
    opened: Callable[[int], tuple[Cortex, StoreAdmin]],
) -> None:
    """The contradiction search asks for a polarity word in the other memory only when the new
    one has none. Here the new memory says "never", the stored one holds no polarity word, and
    they share too few words for the duplicate search to find the pair (four words of the new
    memory, the rarest, are missing from the stored one)."""
    cx, store = opened(1_000)
    template = store.list_memories(types=["gotcha"])[0]
    said = "the deploy script retries the upload of build artifacts to the staging bucket"
    negated = f"{said} never qzxa qzxb qzxc qzxd"
    older = replace(template, id="stored0", content=said, content_hash=content_hash(said))
    newer = replace(template, id="probe0", content=negated, content_hash=content_hash(negated))
    with store.transaction():
        store.insert_memory(older, "test", older.created)
    seq = store.journal_seq()
    with store.transaction():
        store.insert_memory(newer, "test", newer.created)
    plan = lifecycle.plan_store(cx, store, since_seq=seq)
    assert plan == all_pairs_plan(cx, store, {"probe0"})
    assert [{c.newer.id, c.older.id} for c in plan.contradictions] == [{"probe0", "stored0"}]


def test_word_holders_miss_no_memory_close_enough_however_many_words_they_read(
    opened: Callable[[int], tuple[Cortex, StoreAdmin]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store's candidates for a probe's word sets hold every memory whose words overlap
    them enough (and a polarity word, when asked), whether the pool of posting lists read is
    the fewest (`spare + 1`) or every word; each list read drops candidates, never adds one."""
    _, store = opened(1_000)
    rows_read = store.conn.execute("SELECT n, content FROM memories")  # type: ignore[attr-defined]
    texts = {n: frozenset(words(content)) for n, content in rows_read}
    searches = ((NEAR_DUPLICATE_JACCARD, False), (merging.CONTRADICTION_JACCARD, True), (0.5, False))
    found = tighter = 0
    for n in sorted(texts)[::20]:
        ws = texts[n]
        for threshold, polar in searches:
            got = []
            for reads in (0, 10**9):
                monkeypatch.setattr(pairs, "READ_PER_CANDIDATE", reads)
                rows = pairs._holders(pairs._Postings(store), set(ws), threshold, polar)  # type: ignore[arg-type]
                assert rows is not None
                got.append(set(rows.tolist()))
            fewest, every = got
            close = {
                m
                for m, theirs in texts.items()
                if jaccard(ws, theirs) >= threshold and (not polar or theirs & POLARITY_WORDS)
            }
            assert close <= every <= fewest
            found += len(close - {n})
            tighter += len(every) < len(fewest)
    assert found > 20 and tighter > 5  # so that the inclusions say something


def test_similar_pairs_from_the_word_joins_are_find_similar_pairs(
    opened: Callable[[int], tuple[Cortex, StoreAdmin]],
) -> None:
    """The audit's duplicates come from the word joins: the same pairs, scores and order as
    prefix filtering, and so the same content health."""
    _, store = opened(1_000)
    stored = store.list_memories(types=["progress"])[0]
    again = f"{stored.content} Confirmed again"  # a restatement: a duplicate nothing distinguishes
    with store.transaction():
        store.insert_memory(
            replace(stored, id="again0", content=again, content_hash=content_hash(again)), "test", NOW
        )
    texts = store.active_texts()
    for threshold in (NEAR_DUPLICATE_JACCARD, 0.5):
        expected = similar.find_similar_pairs(texts, threshold)
        assert pairs.similar_pairs(texts, threshold) == expected and len(expected) > 20
    memories = store.all_memories()
    health = content_health(memories)
    assert content_health(memories, pairs.similar_pairs) == health
    assert {"again0", stored.id} in [set(p) for p in health.duplicates]
