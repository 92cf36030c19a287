"""Recall through the public API on real stores: properties, keyword-only mode, and the real model."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cortex.app import Cortex
from cortex.backends.port import Choice
from cortex.capture import manual
from cortex.cli.main import cli
from cortex.config import Settings
from cortex.core.budget import estimate_tokens
from cortex.core.model import MemoryType, Scope, Source, Status
from cortex.core.recall import query
from cortex.core.recall.decide import RecallParams, RecallRequest
from cortex.paths import Paths, resolve_paths
from cortex.recall.search import default_params, recall
from cortex.store.sqlite import vec
from tests.support.fakes import FakeEmbedder
from tests.support.strategies import fts_text

# A small realistic store: decisions, gotchas, conventions, progress, across two stores.
NOTES: tuple[tuple[str, MemoryType, Scope], ...] = (
    ("We chose Postgres advisory locks for the job queue", MemoryType.DECISION, Scope.PROJECT),
    ("We use WAL mode so readers never block the writer", MemoryType.DECISION, Scope.PROJECT),
    ("The CI runner has no network, so tests must not download models", MemoryType.GOTCHA, Scope.PROJECT),
    (
        "Every CLI command turns CortexError into exit code 1 with a fix line",
        MemoryType.PATTERN,
        Scope.PROJECT,
    ),
    (
        "The frontend talks to the API through a generated TypeScript client",
        MemoryType.ARCHITECTURE,
        Scope.PROJECT,
    ),
    ("Staging deploys happen from the release branch every Thursday", MemoryType.CONTEXT, Scope.PROJECT),
    ("Store timestamps in UTC and convert only when rendering", MemoryType.GOTCHA, Scope.PROJECT),
    (
        "We picked Redis for session storage because it supports TTLs natively",
        MemoryType.DECISION,
        Scope.PROJECT,
    ),
    ("React components live next to their tests in the same folder", MemoryType.PATTERN, Scope.PROJECT),
    ("Migrated the billing service to the new payments SDK", MemoryType.PROGRESS, Scope.PROJECT),
    ("The ORM lazy-loads relations; use select_related in list views", MemoryType.GOTCHA, Scope.PROJECT),
    ("Images are resized with libvips, not Pillow, to keep memory low", MemoryType.DECISION, Scope.PROJECT),
    ("Search uses Elasticsearch with one index per tenant", MemoryType.ARCHITECTURE, Scope.PROJECT),
    ("The product manager for onboarding is Dana", MemoryType.CONTEXT, Scope.PROJECT),
    ("I prefer small pull requests with a single concern", MemoryType.PREFERENCE, Scope.GLOBAL),
    ("Always run the formatter before committing", MemoryType.PREFERENCE, Scope.GLOBAL),
    ("Python 3.12 broke our pinned grpcio wheel; stay on 3.11 for now", MemoryType.GOTCHA, Scope.PROJECT),
    ("The payments webhook must answer within 5 seconds or Stripe retries", MemoryType.GOTCHA, Scope.PROJECT),
    (
        "Feature flags live in LaunchDarkly, never in environment variables",
        MemoryType.DECISION,
        Scope.PROJECT,
    ),
    (
        "Nightly backups of the database go to an S3 bucket with 30 day retention",
        MemoryType.CONTEXT,
        Scope.PROJECT,
    ),
)
GOLD = NOTES[0][0]
PARAPHRASE = "how do background workers avoid running the same task twice"


def populate(cx: Cortex) -> None:
    for text, kind, scope in NOTES:
        manual.remember(cx, text, mem_type=kind.value, scope=scope)


@pytest.fixture(scope="module")
def fake_cx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cortex]:
    """A populated project + global store with the deterministic fake embedder (fast, hybrid)."""
    root = tmp_path_factory.mktemp("recall-project")
    (root / ".git").mkdir()
    cx = Cortex(
        Paths(root, tmp_path_factory.mktemp("recall-home")),
        Settings(),
        query_embedder=Choice(FakeEmbedder(dim=48), "fake embedder"),
    )
    populate(cx)
    try:
        yield cx
    finally:
        cx.close()


def all_ids(cx: Cortex) -> set[str]:
    return {m.id for s in cx.read_stores() for m in s.list_memories()}


# -- properties --------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=fts_text, limit=st.integers(1, 12), budget=st.one_of(st.none(), st.integers(1, 400)))
def test_any_query_gives_bounded_distinct_results(
    fake_cx: Cortex, text: str, limit: int, budget: int | None
) -> None:
    req = RecallRequest(text=text, limit=limit, budget_tokens=budget)
    result = recall(fake_cx, req, record=False)
    ids = [h.memory.id for h in result.hits]
    assert len(ids) == len(set(ids)) <= limit
    if budget is not None:
        assert sum(estimate_tokens(h.memory.content) for h in result.hits) <= budget
    assert set(ids) <= all_ids(fake_cx)
    assert result.mode == "hybrid"
    if result.abstained:
        assert not result.hits and result.reason


@settings(max_examples=300, deadline=None)
@given(text=fts_text)
def test_any_text_gives_a_valid_fts5_query_on_a_real_store(fake_cx: Cortex, text: str) -> None:
    keywords = query.text_query(text)
    for store in fake_cx.read_stores():
        if keywords is not None:
            store.search_text(keywords, 5)  # raises on a malformed MATCH expression


@settings(max_examples=60, deadline=None)
@given(text=st.text(min_size=1, max_size=40))
def test_without_cuts_fusion_returns_each_candidate_exactly_once(fake_cx: Cortex, text: str) -> None:
    # Every memory is a vector candidate here (the store is smaller than the KNN depth), so with
    # abstention off and no limit or budget the fused ranking must be a permutation of them all.
    params = dataclasses.replace(RecallParams(), abstain=False)
    result = recall(fake_cx, RecallRequest(text=text, limit=100), params=params, record=False)
    ids = [h.memory.id for h in result.hits]
    assert len(ids) == len(set(ids))
    assert set(ids) == all_ids(fake_cx)


# -- behaviour ---------------------------------------------------------------------------------


def test_scope_and_type_filters(fake_cx: Cortex) -> None:
    everywhere = recall(fake_cx, RecallRequest("pull requests formatter", limit=20), record=False)
    assert any(h.store == Scope.GLOBAL for h in everywhere.hits)
    project_only = recall(
        fake_cx, RecallRequest("pull requests formatter", limit=20), scope="project", record=False
    )
    assert all(h.store == Scope.PROJECT for h in project_only.hits)
    gotchas = recall(fake_cx, RecallRequest("webhook timestamps", limit=20, types=("gotcha",)), record=False)
    assert gotchas.hits and all(h.memory.type == MemoryType.GOTCHA for h in gotchas.hits)


@pytest.fixture
def keyword_cx(project: Path) -> Iterator[Cortex]:
    """A context with embeddings switched off, as on a machine without the model."""
    cx = Cortex(resolve_paths(project), Settings(embedder="none"))
    populate(cx)
    try:
        yield cx
    finally:
        cx.close()


def test_keyword_only_mode_finds_keyword_matches_and_says_so(keyword_cx: Cortex) -> None:
    result = recall(keyword_cx, RecallRequest("advisory locks"))
    assert result.mode == "keyword-only"
    assert result.hits[0].memory.content == GOLD
    assert any("keyword-only" in n for n in result.notes)


class BrokenQueryEmbedder(FakeEmbedder):
    """Stored vectors exist (same key), but embedding a query fails, as with a broken model."""

    def embed_query(self, text: str) -> np.ndarray:
        raise RuntimeError("onnxruntime: bad allocation")


def test_a_failing_query_embedder_degrades_to_keyword_only(project: Path) -> None:
    paths = resolve_paths(project)
    with_vectors = Cortex(paths, Settings(), query_embedder=Choice(FakeEmbedder(dim=48), "fake"))
    try:
        populate(with_vectors)
    finally:
        with_vectors.close()
    broken = Cortex(paths, Settings(), query_embedder=Choice(BrokenQueryEmbedder(dim=48), "fake"))
    try:
        result = recall(broken, RecallRequest("advisory locks"), record=False)
    finally:
        broken.close()
    assert result.mode == "keyword-only"
    assert any("keyword-only" in n and "bad allocation" in n for n in result.notes), result.notes
    assert result.hits and result.hits[0].memory.content == GOLD


def test_keyword_only_mode_cannot_find_a_paraphrase(keyword_cx: Cortex) -> None:
    result = recall(keyword_cx, RecallRequest(PARAPHRASE))
    assert GOLD not in [h.memory.content for h in result.hits]


def test_recall_counts_access_and_restores_archived_memories(keyword_cx: Cortex) -> None:
    store = keyword_cx.write_store(Scope.PROJECT)
    gold = next(m for m in store.list_memories() if m.content == GOLD)
    manual.forget(keyword_cx, [(store, gold)])
    result = recall(keyword_cx, RecallRequest("advisory locks"))
    assert result.hits[0].memory.id == gold.id
    after = store.get(gold.id)
    assert after is not None and after.status == Status.ACTIVE and after.access_count == 1
    recall(keyword_cx, RecallRequest("advisory locks"), record=False)
    after = store.get(gold.id)
    assert after is not None and after.access_count == 1


def test_superseded_memories_are_hidden_unless_asked_for(keyword_cx: Cortex) -> None:
    old = manual.remember(keyword_cx, "Deploys run with Fabric scripts").memory
    manual.remember(keyword_cx, "Deploys run with GitHub Actions", supersedes=old.id)
    shown = recall(keyword_cx, RecallRequest("Fabric deploys"), record=False)
    assert old.id not in [h.memory.id for h in shown.hits]
    everything = recall(keyword_cx, RecallRequest("Fabric deploys", include_superseded=True), record=False)
    assert old.id in [h.memory.id for h in everything.hits]


def test_branch_filter(keyword_cx: Cortex) -> None:
    on_branch = manual.remember(
        keyword_cx, "Queue retries use exponential backoff", source=Source(branch="feat/q")
    )
    elsewhere = recall(keyword_cx, RecallRequest("queue retries backoff", branch="main"), record=False)
    assert on_branch.memory.id not in [h.memory.id for h in elsewhere.hits]
    here = recall(keyword_cx, RecallRequest("queue retries backoff", branch="feat/q"), record=False)
    assert [h.memory.id for h in here.hits] == [on_branch.memory.id]


def test_recall_with_no_store_abstains_without_creating_one(cx: Cortex, project: Path) -> None:
    result = recall(cx, RecallRequest("anything"))
    assert result.abstained and not result.hits
    assert not (project / ".memory").exists()


def test_this_python_runs_fts_and_vectors_in_one_recall(fake_cx: Cortex) -> None:
    # The stdlib sqlite3 here cannot load extensions; the chosen driver must still give vec0.
    stores = fake_cx.read_stores()
    assert all(s.vectors for s in stores), vec.choose_driver().note
    result = recall(fake_cx, RecallRequest("advisory locks Postgres", limit=5), record=False)
    assert result.mode == "hybrid"
    top = result.hits[0]
    assert top.memory.content == GOLD
    assert "cosine" in top.signals and any(k.startswith("bm25") for k in top.signals)


# -- the real local model ------------------------------------------------------------------------


@pytest.fixture
def model_cx(real_model: Path, project: Path) -> Iterator[Cortex]:
    """A project context that sees the ONNX export: remember embeds, recall runs hybrid."""
    cx = Cortex(resolve_paths(project))
    try:
        yield cx
    finally:
        cx.close()


@pytest.mark.slow
def test_real_model_round_trip_finds_a_paraphrase_with_no_shared_keyword(model_cx: Cortex) -> None:
    stored = manual.remember(model_cx, GOLD, mem_type="decision")
    assert stored.embedded, stored.note
    for text, kind, scope in NOTES[1:5]:
        manual.remember(model_cx, text, mem_type=kind.value, scope=scope)
    # No keyword (after stemming and stopwords) is shared: FTS alone finds nothing.
    store = model_cx.write_store(Scope.PROJECT)
    keywords = query.text_query(PARAPHRASE)
    assert keywords is not None and stored.memory.id not in [
        mid for mid, _ in store.search_text(keywords, 50)
    ]
    result = recall(model_cx, RecallRequest(PARAPHRASE))
    assert result.mode == "hybrid" and "ONNX" in result.notes[0]
    assert stored.memory.id in [h.memory.id for h in result.hits]


@pytest.mark.slow
@pytest.mark.parametrize(
    "paraphrase",
    [
        PARAPHRASE,
        "what stops two workers from grabbing the same job",
        "how do we prevent duplicate processing of queued work",
    ],
)
def test_real_model_ranks_the_paraphrased_memory_first(model_cx: Cortex, paraphrase: str) -> None:
    for text, kind, scope in NOTES:
        manual.remember(model_cx, text, mem_type=kind.value, scope=scope)
    result = recall(model_cx, RecallRequest(paraphrase), record=False)
    assert result.mode == "hybrid"
    ranked = [h.memory.content for h in result.hits]
    assert ranked and ranked[0] == GOLD, ranked


def _cli(project: Path, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["-C", str(project), *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


@pytest.mark.slow
def test_cli_remember_then_recall_finds_a_paraphrase_and_abstains_on_the_unrelated(
    real_model: Path, project: Path
) -> None:
    # Issue 2's acceptance: the real CLI, the real local model, real sqlite-vec.
    stored = _cli(project, "remember", GOLD, "--type", "decision")
    gold_id = stored["memory"]["id"]
    for text, kind, scope in NOTES[1:8]:
        _cli(
            project, "remember", text, "--type", kind.value, *(["--global"] if scope == Scope.GLOBAL else [])
        )
    found = _cli(project, "recall", PARAPHRASE)
    assert found["mode"] == "hybrid" and not found["abstained"], found
    assert [h["memory"]["id"] for h in found["hits"]][:1] == [gold_id], found["hits"]
    for unrelated in ("favourite pizza topping", "what is the capital of Australia"):
        nothing = _cli(project, "recall", unrelated)
        assert nothing["mode"] == "hybrid"
        assert nothing["abstained"] and not nothing["hits"], (unrelated, nothing["hits"])


def test_the_abstain_floor_setting_sets_the_vector_floor(project: Path) -> None:
    from cortex.core.recall.decide import DEFAULT_VECTOR_FLOOR

    for setting, floor in ((0.0, DEFAULT_VECTOR_FLOOR), (0.45, 0.45)):
        cx = Cortex(resolve_paths(project), Settings(recall_abstain_floor=setting))
        try:
            params = default_params(cx)
        finally:
            cx.close()
        assert params.vector_floor == floor and params.trim_weak_hits and params.abstain


@pytest.mark.slow
def test_a_higher_abstain_floor_turns_the_weak_paraphrase_away(real_model: Path, project: Path) -> None:
    # The paraphrase's best cosine is ~0.23: found at the calibrated floor, not at a strict one.
    _cli(project, "remember", GOLD, "--type", "decision")
    (project / ".memory" / "config.toml").write_text("recall_abstain_floor = 0.5\n", encoding="utf-8")
    strict = _cli(project, "recall", PARAPHRASE)
    assert strict["abstained"] and not strict["hits"]


def test_the_pending_note_follows_the_store_between_recalls(project: Path) -> None:
    from cortex.capture import ingest
    from cortex.core.model import Candidate, Layer

    cx = Cortex(resolve_paths(project), Settings(), query_embedder=Choice(FakeEmbedder(48), "fake"))
    try:
        populate(cx)
        before = recall(cx, RecallRequest("advisory locks"), record=False)
        assert not any("not embedded" in n for n in before.notes)
        cand = Candidate(
            content="Queue workers poll every 5 seconds", type=MemoryType.CONTEXT, layer=Layer.USER
        )
        ingest.ingest_batch(cx, [ingest.BatchItem(cand, cx.now())], embedder=None)  # no vector
        after = recall(cx, RecallRequest("advisory locks"), record=False)
        assert any(n.startswith("1 memories are not embedded") for n in after.notes), after.notes
    finally:
        cx.close()


@pytest.mark.parametrize(("setting", "mmr_on"), [(1.0, False), (0.5, True)])
def test_mmr_is_on_only_below_one(project: Path, setting: float, mmr_on: bool) -> None:
    cx = Cortex(resolve_paths(project), Settings(embedder="none", recall_mmr_lambda=setting))
    try:
        params = default_params(cx)
    finally:
        cx.close()
    assert params.use_mmr is mmr_on
    assert params.mmr_lambda == setting
