"""The writes a person asks for: input checks, redaction, the gate's outcomes, supersede, forget."""

from __future__ import annotations

from pathlib import Path

import pytest

from cortex.app import Cortex
from cortex.backends.port import Choice
from cortex.capture import manual
from cortex.core.model import EdgeType, MemoryType, Scope, Status
from cortex.core.output.documents import outcome_to_dict
from cortex.core.write.apply import DEFAULT_PRIORITY
from cortex.errors import InputError, NotFound
from cortex.paths import resolve_paths
from tests.support.fakes import FakeEmbedder

WAL = "We use WAL mode so readers never block the writer"


# -- input -------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "\n\t\n", "\u200b"])
def test_empty_text_is_refused(text: str) -> None:
    with pytest.raises(InputError, match="empty"):
        manual.clean_input(text)


def test_oversized_text_is_refused_with_its_size() -> None:
    with pytest.raises(InputError) as err:
        manual.clean_input("word " * 300_000)
    assert "1,500,000 characters" in err.value.message and "index-code" in err.value.fix


@pytest.mark.parametrize("text", ["\udcff\udcfe binary", bytes(range(32)).decode("ascii") * 4, "\x00\x00"])
def test_binary_text_is_refused(text: str) -> None:
    with pytest.raises(InputError, match=r"binary|UTF-8"):
        manual.clean_input(text)


def test_clean_input_normalises() -> None:
    assert manual.clean_input("  cafe\u0301 \x07 latte  \n\n") == "café  latte"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("We decided to use Postgres instead of MySQL because of advisory locks", MemoryType.DECISION),
        ("The cache server is on port 6379", MemoryType.CONTEXT),
    ],
)
def test_guess_type(text: str, expected: MemoryType) -> None:
    assert manual.guess_type(text) == expected


# -- remember ---------------------------------------------------------------------------------


def test_remember_stores_embeds_and_journals(fcx: Cortex, fake: FakeEmbedder) -> None:
    out = manual.remember(fcx, WAL, mem_type="decision", tags=("db",))
    assert out.action == "stored" and out.embedded and out.note == ""
    store = fcx.write_store(Scope.PROJECT)
    stored = store.get(out.memory.id)
    assert stored is not None and stored.content == WAL and stored.tags == ("db",)
    assert stored.type == MemoryType.DECISION and stored.confidence == manual.USER_CONFIDENCE
    assert stored.priority == DEFAULT_PRIORITY[MemoryType.DECISION]
    assert [r["op"] for r in store.journal_rows()] == ["insert"]
    assert any(f"[project:{fcx.project_name}]" in t for call in fake.calls for t in call)
    table = store.vector_index(fake.key)
    assert table is not None and store.count_unembedded(table.name) == 0


def test_remember_without_an_embedder_says_how_to_add_vectors(project: Path) -> None:
    cx = Cortex(resolve_paths(project), query_embedder=Choice(None, "none"))
    out = manual.remember(cx, WAL)
    assert out.action == "stored" and not out.embedded
    assert "cortex backfill" in out.note
    cx.close()


def test_the_same_text_twice_is_a_no_op(fcx: Cortex) -> None:
    first = manual.remember(fcx, WAL)
    again = manual.remember(fcx, "  we use wal MODE so readers never block the writer ")
    assert again.action == "duplicate" and again.memory.id == first.memory.id
    assert len(fcx.write_store(Scope.PROJECT).list_memories()) == 1


def test_a_near_duplicate_reinforces(fcx: Cortex) -> None:
    first = manual.remember(fcx, "Deploys to staging happen from the release branch every Thursday afternoon")
    again = manual.remember(
        fcx, "Deploys to staging happen from the release branch every Thursday afternoon UTC"
    )
    assert again.action == "reinforced" and again.memory.id == first.memory.id
    stored = fcx.write_store(Scope.PROJECT).get(first.memory.id)
    assert stored is not None and stored.access_count == 1
    assert len(fcx.write_store(Scope.PROJECT).list_memories()) == 1


def test_repeating_with_pin_and_priority_upgrades_the_existing_memory(fcx: Cortex) -> None:
    first = manual.remember(fcx, WAL)
    again = manual.remember(fcx, WAL, pin=True, priority=10)
    assert again.memory.id == first.memory.id and again.memory.pinned and again.memory.priority == 10


def test_secrets_never_reach_the_store(fcx: Cortex, fake: FakeEmbedder) -> None:
    key = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8" * 6
    out = manual.remember(fcx, f"The staging key is {key} <private>and my home address</private> ok")
    db_bytes = fcx.write_store(Scope.PROJECT).path.read_bytes()
    assert key not in out.memory.content and "home address" not in out.memory.content
    assert key.encode() not in db_bytes
    assert all(key not in t for call in fake.calls for t in call)


def test_text_that_is_only_private_is_refused(fcx: Cortex) -> None:
    with pytest.raises(InputError, match="nothing left to store"):
        manual.remember(fcx, "<private>all of it</private>")
    assert fcx.store(Scope.PROJECT, create=False) is None or not fcx.read_stores()[0].list_memories()


def test_global_memories_go_to_the_global_store(fcx: Cortex) -> None:
    out = manual.remember(fcx, "I prefer small pull requests", scope=Scope.GLOBAL)
    assert out.scope == Scope.GLOBAL
    assert fcx.write_store(Scope.GLOBAL).get(out.memory.id) is not None
    assert fcx.store(Scope.PROJECT, create=False) is None


def test_supersede_keeps_history_and_links(fcx: Cortex) -> None:
    old = manual.remember(fcx, "We deploy with Fabric scripts").memory
    new = manual.remember(fcx, "We deploy with GitHub Actions", supersedes=old.id[:6])
    assert new.note == f"supersedes {old.id}"
    store = fcx.write_store(Scope.PROJECT)
    gone = store.get(old.id)
    assert gone is not None and gone.status == Status.SUPERSEDED
    links = [(e.source, e.target) for e in store.edges([old.id]) if e.type == EdgeType.SUPERSEDES]
    assert links == [(new.memory.id, old.id)]


def test_superseding_a_missing_id_stores_nothing(fcx: Cortex) -> None:
    with pytest.raises(NotFound):
        manual.remember(fcx, WAL, supersedes="0123456789")
    assert fcx.store(Scope.PROJECT, create=False) is None


def test_a_memory_cannot_supersede_itself(fcx: Cortex) -> None:
    m = manual.remember(fcx, WAL).memory
    with pytest.raises(InputError):
        manual.supersede(fcx, m.id, m.id)


def test_embedding_failure_keeps_the_memory_for_backfill(fcx: Cortex, fake: FakeEmbedder) -> None:
    def broken(texts: object) -> object:
        raise RuntimeError("model crashed")

    fake.embed_documents = broken  # type: ignore[method-assign, assignment]
    out = manual.remember(fcx, WAL)
    assert out.action == "stored" and not out.embedded and "backfill" in out.note
    assert fcx.write_store(Scope.PROJECT).get(out.memory.id) is not None


# -- forget -----------------------------------------------------------------------------------


def test_forget_by_id_archives_and_recall_of_it_restores(fcx: Cortex) -> None:
    m = manual.remember(fcx, WAL).memory
    chosen = manual.select_for_forget(fcx, m.id, 3)
    assert [x.id for _, x in chosen] == [m.id]
    assert [x.id for x in manual.forget(fcx, chosen)] == [m.id]
    assert manual.forget(fcx, chosen) == []  # already archived
    stored = fcx.write_store(Scope.PROJECT).get(m.id)
    assert stored is not None and stored.status == Status.ARCHIVED
    again = manual.remember(fcx, WAL)
    assert again.action == "restored" and again.memory.status == Status.ACTIVE


def test_forget_by_query_picks_matches(fcx: Cortex) -> None:
    wal = manual.remember(fcx, WAL).memory
    manual.remember(fcx, "The frontend uses React with Vite")
    chosen = manual.select_for_forget(fcx, "WAL mode readers", 1)
    assert [m.id for _, m in chosen] == [wal.id]


def test_forget_a_mistyped_id_is_an_error_not_a_search(fcx: Cortex) -> None:
    manual.remember(fcx, WAL)
    with pytest.raises(NotFound):
        manual.select_for_forget(fcx, "deadbeef00", 3)


def test_outcome_rendering(fcx: Cortex) -> None:
    out = manual.remember(fcx, WAL)
    assert manual.describe_outcome(out).startswith(f"Stored {out.memory.id} [")
    data = outcome_to_dict(out)
    assert data["action"] == "stored" and data["memory"]["id"] == out.memory.id


def test_a_note_about_all_the_users_projects_says_where_it_would_reach_them(fcx: Cortex) -> None:
    across = manual.remember(fcx, "In all my projects I prefer small commits with imperative subjects")
    assert across.scope == Scope.PROJECT  # stored where the user asked: the project store
    assert "--global" in across.note
    for local in (
        "Always run make lint before committing in this repo",  # a local cue
        "In all my projects the `src/app.py` entry point comes first",  # a path
    ):
        assert "--global" not in manual.remember(fcx, local).note, local
    asked = manual.remember(fcx, "In all my projects I want type hints everywhere", scope=Scope.GLOBAL)
    assert asked.scope == Scope.GLOBAL and "--global" not in asked.note
