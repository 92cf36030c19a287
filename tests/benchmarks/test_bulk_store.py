"""The bulk builder of the scale benchmark's stores makes the store that the generator and the
store API make one write at a time: every table equal (vec0's own storage layout aside, which
follows the order vectors arrive in), and the audit's integrity checks find nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks import bulk_store
from benchmarks.gen_store import build_store
from benchmarks.hooks import make_project
from benchmarks.vector_options import perturbed
from cortex.admin.audit import integrity
from cortex.app import Cortex
from cortex.core.model import MemoryType, Scope, Status
from cortex.paths import Paths
from cortex.store.sqlite import vector_codes
from cortex.store.sqlite.store import Store

N = 2_500  # more than two chunks of binary codes
INDEX = ("bench-perturbed-384", 384)
VEC0_LAYOUT = ("_chunks", "_rowids", "_vector_chunks00", "_info")  # vec0's own storage


def sources() -> np.ndarray:
    m = np.random.default_rng(0).standard_normal((300, 384))
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def one_at_a_time(root: Path, home: Path) -> None:
    """The store as `scale_vectors` used to build it: the store API, a statement per memory,
    then the live memories' vectors (newest first) through `write_vectors`."""
    make_project(root, 0)
    build_store(root, N, seed=1, embed=False, cache_dir=home.parent)
    with Cortex(Paths(root, home)) as cx:
        store = cx.write_store(Scope.PROJECT)
        live = [
            m
            for m in store.list_memories(statuses=(Status.ACTIVE.value, Status.ARCHIVED.value))
            if m.type is not MemoryType.CODE
        ]
        vectors = perturbed(sources(), len(live), seed=1)
        with store.transaction():
            table = store.ensure_vector_index(*INDEX, cx.now())
            store.write_vectors(table, [(m.id, vectors[i].tobytes()) for i, m in enumerate(live)])


def tables(root: Path, home: Path) -> dict[str, Any]:
    """Every table's rows (sorted), and the schema, of the project store at `root`."""
    with Cortex(Paths(root, home)) as cx:
        store = cx.write_store(Scope.PROJECT)
        assert isinstance(store, Store)
        conn = store.conn
        out: dict[str, Any] = {
            "schema": sorted(conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall(), key=repr)
        }
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for name in names:
            if name.endswith(VEC0_LAYOUT):
                continue
            if name == "vec_indexes":  # created: the clock of the run that made the index
                rows = conn.execute("SELECT name, embedder_key, dim FROM vec_indexes").fetchall()
            elif name.startswith("vec_") and "_" not in name.removeprefix("vec_bench_perturbed_"):
                rows = conn.execute(f"SELECT rowid, embedding FROM {name}").fetchall()
            else:
                rows = conn.execute(f"SELECT * FROM {name}").fetchall()
            out[name] = sorted(rows, key=repr)
        return out


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "cache" / "home"
    home.mkdir(parents=True)
    monkeypatch.setattr(bulk_store, "MODEL_HOME", home)
    return home


def test_bulk_build_equals_the_store_written_one_memory_at_a_time(tmp_path: Path, home: Path) -> None:
    one_at_a_time(tmp_path / "slow" / "project", home)
    bulk_store.build(tmp_path / "bulk" / "project", N, sources=sources(), index=INDEX)
    slow, bulk = tables(tmp_path / "slow" / "project", home), tables(tmp_path / "bulk" / "project", home)
    assert slow.keys() == bulk.keys()
    assert len(bulk["memories"]) == N and len(bulk["edges"]) > N / 2
    assert len(bulk["embedded"]) == len(bulk["vec_bench_perturbed_384_units"]) > N * 0.9
    for name in slow:
        assert slow[name] == bulk[name], name


def test_a_bulk_store_passes_the_audits_integrity_checks(tmp_path: Path, home: Path) -> None:
    root = tmp_path / "bulk" / "project"
    bulk_store.build(root, N, sources=sources(), index=INDEX)
    with Cortex(Paths(root, home)) as cx:
        store = cx.write_store(Scope.PROJECT)
        assert isinstance(store, Store)
        text_ok, missing, dangling, digest, replayed = integrity(store)
        assert text_ok and dangling == [] and digest == replayed
        assert missing == {"vec_bench_perturbed_384": []}
        assert vector_codes.ready(store.conn, "vec_bench_perturbed_384")
