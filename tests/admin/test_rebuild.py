"""`cortex rebuild` on a store whose memories all have vectors: nothing to backfill, nothing lost."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cortex.admin import rebuild as rebuilding
from cortex.app import Cortex
from cortex.backends.port import Choice, Embedder
from cortex.capture import manual
from cortex.cli.main import cli
from cortex.config import Settings
from cortex.core.model import Scope
from cortex.paths import Paths
from cortex.store.sqlite import chunk_vectors, vectors
from cortex.store.sqlite.store import Store
from tests.support.fakes import FakeEmbedder

LONG = " ".join(f"word{i} of the long design note about queue workers" for i in range(60))


@pytest.fixture
def embedded(tmp_path: Path, cortex_home: Path) -> tuple[Path, FakeEmbedder]:
    """A store where every memory has its own vector, and the long one its window vectors."""
    fake = FakeEmbedder()
    chosen: Choice[Embedder] = Choice(fake, "fake")
    root = tmp_path / "project"
    root.mkdir()
    with Cortex(Paths(root, cortex_home), Settings(), query_embedder=chosen, bulk_embedder=chosen) as cx:
        for text in ("We use WAL mode so readers never block the writer", "Deploys run on Fridays", LONG):
            assert manual.remember(cx, text).embedded
        store = cx.store(Scope.PROJECT, create=False)
        assert isinstance(store, Store) and store.vectors
        index = store.vector_index(fake.key)
        assert index is not None and store.count_unembedded(index.name) == 0
    return root, fake


def window_vectors(store: Store, key: str) -> dict[int, bytes]:
    table = chunk_vectors.existing_chunk_index(store.conn, key)
    assert table is not None
    return vectors.read_all_vectors(store.conn, table)


def test_a_fully_embedded_store_reports_no_memory_without_a_vector(
    embedded: tuple[Path, FakeEmbedder], cortex_home: Path
) -> None:
    root, fake = embedded
    with Cortex(Paths(root, cortex_home), Settings()) as cx:
        store = cx.store(Scope.PROJECT, create=False)
        assert isinstance(store, Store)
        windows = window_vectors(store, fake.key)
        assert windows  # the long memory has window vectors
        (report,) = rebuilding.rebuild(cx)
        assert report.same and report.vectors_kept == 3 and report.vectors_pending == 0
        assert not [n for n in report.notes if "no vector" in n]
        assert window_vectors(store, fake.key) == windows  # the windows survive the rebuild


def test_the_rebuild_command_prints_no_false_backfill_note(embedded: tuple[Path, FakeEmbedder]) -> None:
    root, _ = embedded
    result = CliRunner().invoke(cli, ["-C", str(root), "rebuild", "--verify"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "3 vectors kept" in result.stdout and "(same)" in result.stdout
    assert "no vector" not in result.stdout and "backfill" not in result.stdout
