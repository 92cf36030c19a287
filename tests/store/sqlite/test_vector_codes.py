"""Nearest-neighbour search by binary codes re-ranked on float vectors, on real sqlite-vec stores."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from cortex.core.model import Scope
from cortex.store.sqlite import vector_codes, vector_matrix, vectors
from cortex.store.sqlite.store import Store

NOW = datetime(2026, 1, 15, tzinfo=UTC)
DIM = 384
K = 10


def clustered(rng: np.random.Generator, n: int, centers: np.ndarray) -> np.ndarray:
    """Unit vectors scattered around topic centres, as embeddings of notes on a few topics are."""
    picks = centers[rng.integers(0, len(centers), n)]
    noisy = picks + rng.standard_normal((n, DIM)) * 12 / np.sqrt(DIM)  # nearest cosine ~0.75
    return (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype("<f4")


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store.open(tmp_path / "cortex.db", Scope.PROJECT)
    if not s.vectors:
        pytest.skip(f"sqlite-vec cannot load in this Python: {s.vector_note}")
    vector_matrix.forget_all()
    vector_codes.forget_all()
    return s


def fill(store: Store, vecs: np.ndarray) -> str:
    with store.transaction():
        table = vectors.ensure_index(store.conn, "test-384", DIM, NOW)
        vectors.write_vectors(store.conn, table, [(i + 1, v.tobytes()) for i, v in enumerate(vecs)])
    return table


def test_recall_at_10_against_exact_search_on_10000_vectors(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(19)
    centers = rng.standard_normal((300, DIM))
    table = fill(store, clustered(rng, 10_000, centers))
    monkeypatch.setattr(vector_codes, "ANN_MIN", 1_000)  # 10,000 is below the default
    hits = 0
    queries = clustered(rng, 50, centers)
    for q in queries:
        exact = vectors.knn(store.conn, table, q.tobytes(), K)
        found = vector_codes.knn(store.conn, table, q.tobytes(), K)
        assert found is not None and len(found) == K
        assert [d for _, d in found] == sorted(d for _, d in found)
        hits += len({n for n, _ in found} & {n for n, _ in exact})
    assert hits / (K * len(queries)) >= 0.98


def test_small_stores_are_searched_exactly_and_large_ones_by_codes(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(3)
    table = fill(store, clustered(rng, 1_500, rng.standard_normal((20, DIM))))
    q = clustered(rng, 1, rng.standard_normal((1, DIM)))[0].tobytes()
    assert vector_codes.knn(store.conn, table, q, K) is None  # exact
    monkeypatch.setattr(vector_codes, "ANN_MIN", 1_000)
    vector_codes.forget_all()
    assert vectors.nearest(store.conn, table, q, K) == vector_codes.knn(store.conn, table, q, K)


def test_codes_follow_deletes_rewrites_and_a_dropped_index(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_codes, "ANN_MIN", 100)
    rng = np.random.default_rng(5)
    vecs = clustered(rng, 500, rng.standard_normal((10, DIM)))
    table = fill(store, vecs)
    q = vecs[7].tobytes()
    first = vector_codes.knn(store.conn, table, q, K)
    assert first is not None and first[0][0] == 8  # itself, at distance ~0
    with store.transaction():
        vectors.delete_vectors(store.conn, table, [8])
    again = vector_codes.knn(store.conn, table, q, K)
    assert again is not None and 8 not in {n for n, _ in again}
    with store.transaction():  # row 9 now holds row 8's old vector
        vectors.write_vectors(store.conn, table, [(9, vecs[7].tobytes())])
    moved = vector_codes.knn(store.conn, table, q, K)
    assert moved is not None and moved[0][0] == 9
    with store.transaction():
        vectors.drop_index(store.conn, table)
    assert not store.conn.execute(
        "SELECT 1 FROM sqlite_master WHERE name = ?", (vector_codes.codes_table(table),)
    ).fetchone()


def test_an_index_whose_codes_were_never_built_gets_them_at_its_next_write(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_codes, "ANN_MIN", 100)
    rng = np.random.default_rng(7)
    vecs = clustered(rng, 300, rng.standard_normal((10, DIM)))
    table = fill(store, vecs)
    with store.transaction():  # as a store migrated where sqlite-vec could not load
        vector_codes.drop(store.conn, table)
    q = vecs[0].tobytes()
    assert vector_codes.knn(store.conn, table, q, K) is None
    with store.transaction():
        assert vectors.ensure_index(store.conn, "test-384", DIM, NOW) == table
    found = vector_codes.knn(store.conn, table, q, K)
    assert found is not None and found[0][0] == 1


@pytest.mark.parametrize("dim", [384, 100])  # whole 64-bit words, and codes padded to them
def test_the_second_look_scores_each_code_by_the_query_dotted_with_its_signs(dim: int) -> None:
    rng = np.random.default_rng(7)
    stored = rng.standard_normal((50, dim)).astype("<f4")
    query = rng.standard_normal(dim).astype("<f4")
    _, codes = vector_codes.encode([v.tobytes() for v in stored])
    unit = query / np.linalg.norm(query)
    expected = np.where(stored > 0, 1.0, -1.0) @ unit
    got = vector_codes._sign_dot(np.ascontiguousarray(codes.T), unit)
    assert np.allclose(got, expected, atol=1e-4)
    hamming = vector_codes._hamming(
        np.ascontiguousarray(codes.T), vector_codes.encode([query.tobytes()])[1][0]
    )
    assert list(hamming) == [int(np.sum((s > 0) != (query > 0))) for s in stored]


def _whole_reads(monkeypatch: pytest.MonkeyPatch) -> list[None]:
    """Each read of a whole codes table, recorded (reads of a few written chunks are not)."""
    reads: list[None] = []
    real = vector_codes._read

    def counted(conn: object, table: str, chunks: object) -> object:
        if chunks is None:
            reads.append(None)
        return real(conn, table, chunks)  # type: ignore[arg-type]

    monkeypatch.setattr(vector_codes, "_read", counted)
    return reads


def test_own_writes_keep_the_held_codes_and_rolled_back_ones_leave_no_trace(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_codes, "ANN_MIN", 100)
    rng = np.random.default_rng(11)
    centers = rng.standard_normal((10, DIM))
    vecs = clustered(rng, 3_000, centers)
    table = fill(store, vecs)
    reads = _whole_reads(monkeypatch)
    q = vecs[40].tobytes()
    assert vector_codes.knn(store.conn, table, q, K)[0][0] == 41  # type: ignore[index]
    with store.transaction():  # row 2,500 (another chunk than row 41) now holds row 41's vector
        vectors.write_vectors(store.conn, table, [(2_500, vecs[40].tobytes())])
        vectors.delete_vectors(store.conn, table, [41])
        inside = vector_codes.knn(store.conn, table, q, K)
    after = vector_codes.knn(store.conn, table, q, K)
    assert len(reads) == 1  # the table was read whole once; written chunks afresh after that
    vector_codes.forget_all()  # the next copy is read inside a transaction, after its write
    with pytest.raises(RuntimeError), store.transaction():
        vectors.write_vectors(store.conn, table, [(3_001, vecs[40].tobytes())])  # a new chunk
        vectors.delete_vectors(store.conn, table, [2_500])
        assert vector_codes.knn(store.conn, table, q, K)[0][0] == 3_001  # type: ignore[index]
        raise RuntimeError("rolled back")
    rolled_back = vector_codes.knn(store.conn, table, q, K)
    assert len(reads) == 2  # that copy is kept: the rolled-back chunk is read afresh
    vector_codes.forget_all()
    whole = vector_codes.knn(store.conn, table, q, K)
    assert len(reads) == 3
    assert inside == after == rolled_back == whole
    assert whole is not None and whole[0][0] == 2_500 and 41 not in {n for n, _ in whole}


def test_another_connections_commit_is_read_whole_again(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_codes, "ANN_MIN", 100)
    rng = np.random.default_rng(13)
    vecs = clustered(rng, 1_500, rng.standard_normal((10, DIM)))
    table = fill(store, vecs)
    reads = _whole_reads(monkeypatch)
    q = vecs[3].tobytes()
    assert vector_codes.knn(store.conn, table, q, K)[0][0] == 4  # type: ignore[index]
    other = Store.open(tmp_path / "cortex.db", Scope.PROJECT)
    with other.transaction():
        vectors.write_vectors(other.conn, table, [(1_200, vecs[3].tobytes())])
        vectors.delete_vectors(other.conn, table, [4])
    found = vector_codes.knn(store.conn, table, q, K)
    assert found is not None and found[0][0] == 1_200 and 4 not in {n for n, _ in found}
    assert len(reads) == 2
