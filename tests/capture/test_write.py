"""The write path: input checks, redaction, the gate's outcomes, supersede, forget and embedding."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from cortex.app import Cortex, EmbedderChoice
from cortex.capture import write as writer
from cortex.core.model import Candidate, EdgeStatus, EdgeType, Layer, MemoryType, Scope, Source, Status
from cortex.errors import InputError, NotFound
from cortex.paths import resolve_paths
from cortex.store.sqlite import vectors
from tests.conftest import T0
from tests.support.fakes import FakeEmbedder

WAL = "We use WAL mode so readers never block the writer"


@pytest.fixture
def fake() -> FakeEmbedder:
    return FakeEmbedder(dim=32)


@pytest.fixture
def fcx(project: Path, fake: FakeEmbedder) -> Iterator[Cortex]:
    """A context whose embedder is the deterministic fake (as if the ONNX export were ready)."""
    clock = iter(T0 + timedelta(seconds=i) for i in range(1_000_000))
    cx = Cortex(
        resolve_paths(project),
        clock=lambda: next(clock),
        query_embedder=EmbedderChoice(fake, "fake embedder"),
    )
    try:
        yield cx
    finally:
        cx.close()


# -- input -------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "\n\t\n", "\u200b"])
def test_empty_text_is_refused(text: str) -> None:
    with pytest.raises(InputError, match="empty"):
        writer.clean_input(text)


def test_oversized_text_is_refused_with_its_size() -> None:
    with pytest.raises(InputError) as err:
        writer.clean_input("word " * 300_000)
    assert "1,500,000 characters" in err.value.message and "index-code" in err.value.fix


@pytest.mark.parametrize("text", ["\udcff\udcfe binary", bytes(range(32)).decode("ascii") * 4, "\x00\x00"])
def test_binary_text_is_refused(text: str) -> None:
    with pytest.raises(InputError, match=r"binary|UTF-8"):
        writer.clean_input(text)


def test_clean_input_normalises() -> None:
    assert writer.clean_input("  cafe\u0301 \x07 latte  \n\n") == "café  latte"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("We decided to use Postgres instead of MySQL because of advisory locks", MemoryType.DECISION),
        ("The cache server is on port 6379", MemoryType.CONTEXT),
    ],
)
def test_guess_type(text: str, expected: MemoryType) -> None:
    assert writer.guess_type(text) == expected


# -- remember ---------------------------------------------------------------------------------


def test_remember_stores_embeds_and_journals(fcx: Cortex, fake: FakeEmbedder) -> None:
    out = writer.remember(fcx, WAL, mem_type="decision", tags=("db",))
    assert out.action == "stored" and out.embedded and out.note == ""
    store = fcx.write_store(Scope.PROJECT)
    stored = store.get(out.memory.id)
    assert stored is not None and stored.content == WAL and stored.tags == ("db",)
    assert stored.type == MemoryType.DECISION and stored.confidence == writer.USER_CONFIDENCE
    assert stored.priority == writer.DEFAULT_PRIORITY[MemoryType.DECISION]
    assert [r["op"] for r in store.journal_rows()] == ["insert"]
    assert any(f"[project:{fcx.project_name}]" in t for call in fake.calls for t in call)
    table = vectors.existing_index(store, fake.key)
    assert table is not None and vectors.count_pending(store, table[0]) == 0


def test_remember_without_an_embedder_says_how_to_add_vectors(project: Path) -> None:
    cx = Cortex(resolve_paths(project), query_embedder=EmbedderChoice(None, "none"))
    out = writer.remember(cx, WAL)
    assert out.action == "stored" and not out.embedded
    assert "cortex backfill" in out.note
    cx.close()


def test_the_same_text_twice_is_a_no_op(fcx: Cortex) -> None:
    first = writer.remember(fcx, WAL)
    again = writer.remember(fcx, "  we use wal MODE so readers never block the writer ")
    assert again.action == "duplicate" and again.memory.id == first.memory.id
    assert len(fcx.write_store(Scope.PROJECT).list_memories()) == 1


def test_a_near_duplicate_reinforces(fcx: Cortex) -> None:
    first = writer.remember(fcx, "Deploys to staging happen from the release branch every Thursday afternoon")
    again = writer.remember(
        fcx, "Deploys to staging happen from the release branch every Thursday afternoon UTC"
    )
    assert again.action == "reinforced" and again.memory.id == first.memory.id
    stored = fcx.write_store(Scope.PROJECT).get(first.memory.id)
    assert stored is not None and stored.access_count == 1
    assert len(fcx.write_store(Scope.PROJECT).list_memories()) == 1


def test_repeating_with_pin_and_priority_upgrades_the_existing_memory(fcx: Cortex) -> None:
    first = writer.remember(fcx, WAL)
    again = writer.remember(fcx, WAL, pin=True, priority=10)
    assert again.memory.id == first.memory.id and again.memory.pinned and again.memory.priority == 10


def test_secrets_never_reach_the_store(fcx: Cortex, fake: FakeEmbedder) -> None:
    key = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8" * 6
    out = writer.remember(fcx, f"The staging key is {key} <private>and my home address</private> ok")
    db_bytes = fcx.write_store(Scope.PROJECT).path.read_bytes()
    assert key not in out.memory.content and "home address" not in out.memory.content
    assert key.encode() not in db_bytes
    assert all(key not in t for call in fake.calls for t in call)


def test_text_that_is_only_private_is_refused(fcx: Cortex) -> None:
    with pytest.raises(InputError, match="nothing left to store"):
        writer.remember(fcx, "<private>all of it</private>")
    assert fcx.store(Scope.PROJECT, create=False) is None or not fcx.read_stores()[0].list_memories()


def test_global_memories_go_to_the_global_store(fcx: Cortex) -> None:
    out = writer.remember(fcx, "I prefer small pull requests", scope=Scope.GLOBAL)
    assert out.scope == Scope.GLOBAL
    assert fcx.write_store(Scope.GLOBAL).get(out.memory.id) is not None
    assert fcx.store(Scope.PROJECT, create=False) is None


def test_supersede_keeps_history_and_links(fcx: Cortex) -> None:
    old = writer.remember(fcx, "We deploy with Fabric scripts").memory
    new = writer.remember(fcx, "We deploy with GitHub Actions", supersedes=old.id[:6])
    assert new.note == f"supersedes {old.id}"
    store = fcx.write_store(Scope.PROJECT)
    gone = store.get(old.id)
    assert gone is not None and gone.status == Status.SUPERSEDED
    links = [(e.source, e.target) for e in store.edges([old.id]) if e.type == EdgeType.SUPERSEDES]
    assert links == [(new.memory.id, old.id)]


def test_superseding_a_missing_id_stores_nothing(fcx: Cortex) -> None:
    with pytest.raises(NotFound):
        writer.remember(fcx, WAL, supersedes="0123456789")
    assert fcx.store(Scope.PROJECT, create=False) is None


def test_a_memory_cannot_supersede_itself(fcx: Cortex) -> None:
    m = writer.remember(fcx, WAL).memory
    with pytest.raises(InputError):
        writer.supersede(fcx, m.id, m.id)


def test_embedding_failure_keeps_the_memory_for_backfill(fcx: Cortex, fake: FakeEmbedder) -> None:
    def broken(texts: object) -> object:
        raise RuntimeError("model crashed")

    fake.embed_documents = broken  # type: ignore[method-assign, assignment]
    out = writer.remember(fcx, WAL)
    assert out.action == "stored" and not out.embedded and "backfill" in out.note
    assert fcx.write_store(Scope.PROJECT).get(out.memory.id) is not None


def test_candidates_from_extraction_get_their_source_and_files(fcx: Cortex) -> None:
    cand = Candidate(
        "The worker retries failed jobs three times", MemoryType.PATTERN, Layer.LEXICAL, files=("src/w.py",)
    )
    out = writer.write_candidate(fcx, cand, Source("sess-9", 42, "main", "abc", ("README.md",)))
    assert out.memory.source.session_id == "sess-9"
    assert out.memory.source.files == ("README.md", "src/w.py")


def test_confident_global_candidates_go_global(fcx: Cortex) -> None:
    cand = Candidate(
        "Always answer in British English", MemoryType.PREFERENCE, Layer.LLM, global_confidence=0.9
    )
    assert writer.write_candidate(fcx, cand, Source()).scope == Scope.GLOBAL


def test_edge_hints_become_suggested_links_and_never_supersedes(fcx: Cortex) -> None:
    queue = writer.remember(fcx, "We chose Postgres advisory locks for the job queue", mem_type="decision")
    retry = writer.remember(fcx, "The worker retries failed jobs three times", mem_type="pattern")
    cand = Candidate(
        "Job handlers must be idempotent because a retried job can run twice",
        MemoryType.GOTCHA,
        Layer.LLM,
        edge_hints=(
            ("Postgres advisory locks for the job queue", EdgeType.RELATES_TO),
            (retry.memory.id, EdgeType.SUPERSEDES),
            ("bananas ripen faster in paper bags", EdgeType.RELATES_TO),
        ),
    )
    out = writer.write_candidate(fcx, cand, Source())
    edges = fcx.write_store(Scope.PROJECT).edges([out.memory.id])
    hinted = [(e.target, e.type, e.status) for e in edges if e.source == out.memory.id]
    assert (queue.memory.id, EdgeType.RELATES_TO, EdgeStatus.SUGGESTED) in hinted
    assert all(e.type != EdgeType.SUPERSEDES for e in edges)
    assert len([h for h in hinted if h[2] == EdgeStatus.SUGGESTED]) == 1


# -- forget -----------------------------------------------------------------------------------


def test_forget_by_id_archives_and_recall_of_it_restores(fcx: Cortex) -> None:
    m = writer.remember(fcx, WAL).memory
    chosen = writer.select_for_forget(fcx, m.id, 3)
    assert [x.id for _, x in chosen] == [m.id]
    assert [x.id for x in writer.forget(fcx, chosen)] == [m.id]
    assert writer.forget(fcx, chosen) == []  # already archived
    stored = fcx.write_store(Scope.PROJECT).get(m.id)
    assert stored is not None and stored.status == Status.ARCHIVED
    again = writer.remember(fcx, WAL)
    assert again.action == "restored" and again.memory.status == Status.ACTIVE


def test_forget_by_query_picks_matches(fcx: Cortex) -> None:
    wal = writer.remember(fcx, WAL).memory
    writer.remember(fcx, "The frontend uses React with Vite")
    chosen = writer.select_for_forget(fcx, "WAL mode readers", 1)
    assert [m.id for _, m in chosen] == [wal.id]


def test_forget_a_mistyped_id_is_an_error_not_a_search(fcx: Cortex) -> None:
    writer.remember(fcx, WAL)
    with pytest.raises(NotFound):
        writer.select_for_forget(fcx, "deadbeef00", 3)


def test_outcome_rendering(fcx: Cortex) -> None:
    out = writer.remember(fcx, WAL)
    assert writer.describe_outcome(out).startswith(f"Stored {out.memory.id} [")
    data = writer.outcome_dict(out)
    assert data["action"] == "stored" and data["memory"]["id"] == out.memory.id
