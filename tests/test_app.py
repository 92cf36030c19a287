"""The cortex context: where stores are created, how ids resolve, which embedder is chosen and why."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from cortex.app import Cortex, looks_like_id, new_id
from cortex.backends.port import Choice
from cortex.config import Settings
from cortex.core.model import Memory, Scope
from cortex.errors import NotFound, StoreError
from cortex.paths import resolve_paths
from tests.conftest import T0, git
from tests.support.fakes import FakeEmbedder

MakeMemory = Callable[..., Memory]


def put(cx: Cortex, scope: Scope, *memories: Memory) -> None:
    with cx.writing(scope) as store:
        for m in memories:
            store.insert_memory(m, "test", T0)


def test_reading_creates_nothing(cx: Cortex, project: Path, cortex_home: Path) -> None:
    assert cx.read_stores("all") == []
    assert cx.store(Scope.PROJECT, create=False) is None
    assert not (project / ".memory").exists()
    assert not cx.paths.global_db.exists()


def test_the_first_write_creates_an_ignored_project_store(cx: Cortex, project: Path) -> None:
    store = cx.write_store(Scope.PROJECT)
    assert store.path == project.resolve() / ".memory" / "cortex.db"
    assert (project / ".memory" / ".gitignore").read_text(encoding="utf-8").splitlines()[-1] == "*"
    assert git(project, "status", "--porcelain") == ""  # nothing for the user to commit


def test_global_store_lives_in_cortex_home(cx: Cortex, cortex_home: Path) -> None:
    assert cx.write_store(Scope.GLOBAL).path == cortex_home / "cortex-global.db"
    assert [s.scope for s in cx.read_stores("all")] == [Scope.GLOBAL]


@pytest.mark.parametrize(
    ("scope", "expected"),
    [("project", [Scope.PROJECT]), ("global", [Scope.GLOBAL]), ("all", [Scope.PROJECT, Scope.GLOBAL])],
)
def test_read_stores_by_scope(cx: Cortex, scope: str, expected: list[Scope]) -> None:
    cx.write_store(Scope.PROJECT)
    cx.write_store(Scope.GLOBAL)
    assert [s.scope for s in cx.read_stores(scope)] == expected


def test_stores_are_opened_once_and_closed_with_the_context(project: Path) -> None:
    with Cortex(resolve_paths(project)) as cx:
        first = cx.write_store(Scope.PROJECT)
        assert cx.store(Scope.PROJECT) is first
    assert cx._stores == {}


def test_an_unwritable_project_store_dir_is_a_clear_error(cx: Cortex, project: Path) -> None:
    (project / ".memory").write_text("a file where the store folder should be", encoding="utf-8")
    with pytest.raises(StoreError) as err:
        cx.write_store(Scope.PROJECT)
    assert "cannot create the project store" in err.value.message and err.value.fix


def test_find_by_id_prefix_and_across_stores(cx: Cortex, make_memory: MakeMemory) -> None:
    a = make_memory("in the project", id="abc1230000")
    b = make_memory("in the global store", id="abd4560000", scope=Scope.GLOBAL)
    put(cx, Scope.PROJECT, a)
    put(cx, Scope.GLOBAL, b)
    assert cx.find("abc1230000")[1] == a
    assert cx.find("  ABD4 ")[1] == b
    store, found = cx.find("abd")
    assert store.scope == Scope.GLOBAL and found == b
    with pytest.raises(NotFound, match="ambiguous"):
        cx.find("ab")
    with pytest.raises(NotFound) as err:
        cx.find("fff0000000")
    assert "cortex recall" in err.value.fix


def test_new_ids_are_distinct_hex() -> None:
    ids = {new_id() for _ in range(1_000)}
    assert len(ids) == 1_000
    assert all(len(i) == 10 and int(i, 16) >= 0 for i in ids)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("e305bb97b6", True),
        ("E305BB", True),
        ("deadbeef00", True),
        ("cafe", False),  # a word
        ("2024", False),  # too short to be sure
        ("deadbeef", False),  # hex but no digit: a word is as likely
        ("e305bb97b6ff", False),  # longer than an id
        ("advisory locks", False),
    ],
)
def test_looks_like_id(text: str, expected: bool) -> None:
    assert looks_like_id(text) is expected


def test_embedder_none_in_config_means_keyword_only_without_loading(project: Path) -> None:
    cx = Cortex(resolve_paths(project), Settings(embedder="none"))
    choice = cx.query_embedder()
    assert choice.backend is None and "embedder = none" in choice.note
    assert cx.embedder_key() is None


def test_a_missing_configured_model_is_a_one_line_note_with_a_fix(project: Path, tmp_path: Path) -> None:
    cx = Cortex(resolve_paths(project), Settings(model_path=str(tmp_path / "no-such-model")))
    choice = cx.bulk_embedder()
    assert choice.backend is None
    assert "no-such-model" in choice.note and "\n" not in choice.note
    assert "CORTEX_MODEL_PATH" in choice.fix


def test_unknown_embedder_backend_is_named(project: Path) -> None:
    cx = Cortex(resolve_paths(project), Settings(embedder="bogus"))
    choice = cx.query_embedder()
    assert choice.backend is None and "unknown backend 'bogus'" in choice.note


def test_injected_embedders_are_used_as_given(project: Path) -> None:
    fake = FakeEmbedder()
    cx = Cortex(resolve_paths(project), query_embedder=Choice(fake, "fake"))
    assert cx.query_embedder().backend is fake
    assert cx.embedder_key() == fake.key


def test_settings_come_from_the_project(project: Path) -> None:
    (project / ".memory").mkdir()
    (project / ".memory" / "config.toml").write_text("recall_limit = 3\n", encoding="utf-8")
    cx = Cortex.for_cwd(project)
    assert cx.settings.recall_limit == 3
    assert dataclasses.replace(cx.settings, recall_limit=8) == Settings()


def test_clock_is_injected(project: Path) -> None:
    cx = Cortex(resolve_paths(project), clock=lambda: T0)
    assert cx.now() == T0
