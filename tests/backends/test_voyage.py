"""The Voyage embedder: the real SDK client against a local fake embeddings endpoint.

The fake server records every text it receives, so these tests can assert that no code block
and no `code` memory ever reaches the hosted endpoint, whatever path the text took.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from cortex.admin import checks as admin
from cortex.app import Cortex
from cortex.backends.choose import Purpose, choose_embedder
from cortex.backends.voyage import (
    MAX_BATCH_TEXTS,
    MAX_BATCH_TOKENS,
    VoyageEmbedder,
    load_voyage,
    plan_batches,
    sendable_text,
    sendable_texts,
    strip_code_blocks,
    voyage_key,
)
from cortex.capture import write as writer
from cortex.config import Settings
from cortex.core.model import Candidate, Layer, MemoryType, Scope, Source
from cortex.errors import ModelError
from cortex.paths import resolve_paths
from tests.support.fake_api import FakeApi, Reply, error_reply, fake_vector

pytest.importorskip("voyageai", reason="the hosted extra (voyageai) is not installed")

NOW = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
KEY = "voyage-3.5-lite-1024"
CODE_LINE = "def leak_me(): return SECRET_SAUCE"
WITH_CODE = f"The retry helper backs off exponentially.\n```python\n{CODE_LINE}\n```\nIt caps at 30 s."


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeApi]:
    with FakeApi() as server:
        monkeypatch.setenv("VOYAGE_API_KEY", "pa-test-key")
        monkeypatch.setenv("VOYAGE_BASE_URL", server.voyage_url)
        yield server


def embedder(api: FakeApi, **options: object) -> tuple[VoyageEmbedder, list[float]]:
    slept: list[float] = []
    return load_voyage("voyage-3.5-lite", timeout_s=1.0, sleep=slept.append, **options), slept


def assert_no_code_sent(api: FakeApi) -> None:
    sent = api.voyage_inputs()
    assert sent, "nothing reached the fake endpoint"
    for text in sent:
        assert "```" not in text and "leak_me" not in text and not text.startswith("[code]"), text


# -- pure helpers ------------------------------------------------------------------------------
def test_code_blocks_are_stripped() -> None:
    assert strip_code_blocks(WITH_CODE) == "The retry helper backs off exponentially.\nIt caps at 30 s."
    assert strip_code_blocks("intro\n~~~\nx = 1\n~~~\noutro") == "intro\noutro"
    assert strip_code_blocks("unclosed\n```sh\nrm -rf /tmp/x\nmore") == "unclosed"
    assert strip_code_blocks("````\n```\ninner\n```\n````\nafter") == "after"
    assert sendable_text("```\nonly code\n```") == "(code only)"
    with pytest.raises(ValueError, match="never sent"):
        sendable_text("[code] [project:demo] def f(): pass")


def test_slices_of_a_longer_text_lose_its_code_too() -> None:
    code = "\n".join(f"secret_line_{i} = compute({i})" for i in range(30))
    full = f"[pattern] [project:demo] Intro prose here.\n```python\n{code}\n```\nOutro prose here."
    body = full.split("] ", 2)[2]
    inside = body[body.index("secret_line_3") : body.index("secret_line_9")]  # no fence at all
    across = body[body.index("secret_line_25") : body.index("Outro") + 5]  # starts inside the block
    sent = sendable_texts([full, f"[pattern] [project:demo] {inside}", f"[pattern] {across}"])
    assert sent[0] == "[pattern] [project:demo] Intro prose here.\nOutro prose here."
    assert sent[1] == "[pattern] [project:demo] (code only)"
    assert sent[2] == "[pattern] Outro"
    assert not any("secret_line" in t for t in sent)


def test_batches_respect_count_and_token_limits() -> None:
    many = ["short text"] * (MAX_BATCH_TEXTS * 2 + 5)
    assert [len(b) for b in plan_batches(many)] == [MAX_BATCH_TEXTS, MAX_BATCH_TEXTS, 5]
    big = "w" * (MAX_BATCH_TOKENS * 3 // 2)  # ~half the token budget each
    sizes = [len(b) for b in plan_batches([big] * 5)]
    assert sum(sizes) == 5 and max(sizes) <= 2
    flat = [i for b in plan_batches(many) for i in b]
    assert flat == list(range(len(many)))


# -- the endpoint ------------------------------------------------------------------------------
def test_documents_and_queries_embed_through_the_sdk(api: FakeApi) -> None:
    emb, _ = embedder(api)
    assert emb.key == KEY == voyage_key("voyage-3.5-lite") and emb.dim == 1024
    docs = emb.embed_documents(["first memory", "second memory"])
    assert docs.shape == (2, 1024) and docs.dtype == np.float32
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    assert np.allclose(docs[0], fake_vector("first memory", 1024), atol=1e-6)
    query = emb.embed_query("which memory")
    assert query.shape == (1024,)
    first, second = api.requests_to("/v1/embeddings")
    assert first.body["input_type"] == "document" and second.body["input_type"] == "query"
    assert first.body["model"] == "voyage-3.5-lite" and first.body["output_dimension"] == 1024
    assert "pa-test-key" in first.headers.get("authorization", "")


def test_code_never_reaches_the_endpoint(api: FakeApi) -> None:
    emb, _ = embedder(api)
    vecs = emb.embed_documents([WITH_CODE, "plain prose"])
    assert vecs.shape == (2, 1024)
    assert_no_code_sent(api)
    with pytest.raises(ValueError):
        emb.embed_documents(["[code] def f(): pass"])


def test_large_inputs_are_split_into_batches(api: FakeApi) -> None:
    emb, _ = embedder(api)
    texts = [f"memory number {i}" for i in range(MAX_BATCH_TEXTS + 10)]
    vecs = emb.embed_documents(texts)
    assert vecs.shape == (len(texts), 1024)
    assert [len(r.body["input"]) for r in api.requests_to("/v1/embeddings")] == [MAX_BATCH_TEXTS, 10]
    assert np.allclose(vecs[-1], fake_vector(texts[-1], 1024), atol=1e-6)  # order kept


def test_a_429_waits_for_retry_after(api: FakeApi) -> None:
    api.voyage_script.append(error_reply(429, "rate_limited", {"retry-after": "2"}))
    emb, slept = embedder(api)
    assert emb.embed_query("hello").shape == (1024,)
    assert slept == [2.0]


@pytest.mark.parametrize(
    "scripted",
    [
        [error_reply(500, "server_error")] * 3,
        [error_reply(503, "unavailable")] * 3,
        [Reply(200, {"data": []}, delay_s=3.0)] * 3,
    ],
    ids=["500", "503", "timeout"],
)
def test_api_failures_raise_model_error_after_bounded_retries(api: FakeApi, scripted: list[Reply]) -> None:
    api.voyage_script.extend(scripted)
    emb = load_voyage("voyage-3.5-lite", timeout_s=0.3, sleep=lambda s: None)
    with pytest.raises(ModelError, match="after 3 attempts"):
        emb.embed_documents(["text"])
    assert len(api.requests_to("/v1/embeddings")) == 3


def test_a_refused_key_is_not_retried(api: FakeApi) -> None:
    api.voyage_script.append(error_reply(401, "unauthorized"))
    emb, slept = embedder(api)
    with pytest.raises(ModelError) as err:
        emb.embed_query("x")
    assert "VOYAGE_API_KEY" in err.value.fix and slept == []


def test_a_wrong_number_of_vectors_is_an_error(api: FakeApi) -> None:
    api.voyage_script.append(Reply(200, {"data": [], "usage": {"total_tokens": 0}, "model": "m"}))
    emb, _ = embedder(api)
    with pytest.raises(ModelError, match="0 vectors for 1"):
        emb.embed_documents(["x"])


# -- through cortex ----------------------------------------------------------------------------
def long_memory_with_code() -> str:
    prose = " ".join(f"prose{i}" for i in range(150))
    code = "\n".join(f"leak_me_{i} = value_{i} + other_{i}" for i in range(60))
    return f"{prose}\n```python\n{code}\n```\n{prose}"


def voyage_cx(project: Path) -> Cortex:
    return Cortex(resolve_paths(project), replace(Settings(), embedder="voyage"), clock=lambda: NOW)


def test_the_engine_loads_voyage_when_chosen(project: Path, api: FakeApi) -> None:
    cx = voyage_cx(project)
    try:
        choice = cx.query_embedder()
        assert isinstance(choice.backend, VoyageEmbedder) and choice.backend.key == KEY
        assert "code is never sent" in choice.note
        assert isinstance(cx.bulk_embedder().backend, VoyageEmbedder)
    finally:
        cx.close()


def test_without_a_key_voyage_falls_back_to_the_local_embedder(
    project: Path, real_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    cx = voyage_cx(project)
    try:
        choice = choose_embedder(cx.settings, cx.paths, Purpose.QUERY)
        assert "Voyage not used (VOYAGE_API_KEY is not set)" in choice.note
        assert choice.backend is not None and not choice.backend.key.startswith("voyage")
    finally:
        cx.close()


def test_writes_and_backfill_fill_a_voyage_index_and_never_send_code(project: Path, api: FakeApi) -> None:
    cx = voyage_cx(project)
    try:
        emb = cx.bulk_embedder().backend
        prose = Candidate(WITH_CODE, MemoryType.PATTERN, Layer.USER)
        code = Candidate(f"```python\n{CODE_LINE}\n```", MemoryType.CODE, Layer.USER)
        stored = writer.write_candidate(cx, prose, Source(), scope=Scope.PROJECT, embedder=emb)
        long = Candidate(long_memory_with_code(), MemoryType.ARCHITECTURE, Layer.USER)
        assert writer.write_candidate(cx, long, Source(), scope=Scope.PROJECT, embedder=emb).embedded
        windows = [t for t in api.voyage_inputs() if t.startswith("[architecture]")]
        assert len(windows) >= 2  # the memory and its extra windows: some cut into the code block
        writer.write_candidate(cx, code, Source(), scope=Scope.PROJECT, embedder=emb)
        assert stored.embedded
        later = Candidate("Deploys run from the release branch only.", MemoryType.DECISION, Layer.USER)
        writer.write_candidate(cx, later, Source(), scope=Scope.PROJECT, embedder=None)
        seen: list[tuple[int, int]] = []
        result = admin.backfill(cx, lambda done, total: seen.append((done, total)), export=False)
        assert result["embedded"] == 1 and seen[-1] == (1, 1)
        store = cx.write_store(Scope.PROJECT)
        index = store.vector_index(KEY)
        assert index is not None and index.dim == 1024
        assert store.count_unembedded(index.name) == 0
        keys = [r[0] for r in store.conn.execute("SELECT embedder_key FROM vec_indexes")]
        assert keys and all(k.startswith(KEY) for k in keys)  # Voyage's own: no local vectors mixed in
        assert_no_code_sent(api)
    finally:
        cx.close()
