"""The store's SQL on a real file: memories, journal, FTS5, edges, cursors, meta, and vec0 indexes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from cortex.core.model import Edge, EdgeStatus, EdgeType, Memory, MemoryType, Scope, Source, Status
from cortex.core.recall.query import TextQuery
from cortex.core.serial import memory_to_dict
from cortex.errors import StoreError
from cortex.store.packing import pack, unpack
from cortex.store.port import CursorRow
from cortex.store.sqlite import vectors
from cortex.store.sqlite.store import Store
from tests.conftest import T0
from tests.support.fakes import FakeEmbedder

MakeMemory = Callable[..., Memory]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(tmp_path / "cortex.db", Scope.PROJECT)
    try:
        yield opened
    finally:
        opened.close()


def put(store: Store, *memories: Memory) -> None:
    with store.transaction():
        for m in memories:
            store.insert_memory(m, "test", T0)


def test_insert_then_get_round_trips_every_field(store: Store, make_memory: MakeMemory) -> None:
    m = make_memory(
        "Postgres advisory locks guard the job queue",
        summary="advisory locks",
        type=MemoryType.ARCHITECTURE,
        confidence=0.875,
        priority=9,
        pinned=True,
        source=Source("sess-1", 1234, "feature/q", "abc123", ("src/q.py", "src/w.py")),
        tags=("db", "queue", "ünïcode"),
        access_count=3,
        last_accessed=T0 + timedelta(hours=1),
        low_since=T0 + timedelta(days=2),
        status_changed=T0 + timedelta(days=3),
        centrality=0.25,
    )
    put(store, m)
    assert store.get(m.id) == m
    assert store.get("0000000000") is None


def test_every_insert_and_update_is_journaled(store: Store, make_memory: MakeMemory) -> None:
    m = make_memory()
    put(store, m)
    later = T0 + timedelta(minutes=5)
    with store.transaction():
        store.update_memory(m, replace(m, priority=9, updated=later), "cli", later, "update")
        store.update_memory(m, m, "cli", later, "noop")  # nothing changed: nothing journaled
    rows = store.journal_rows()
    assert [(r["op"], r["actor"], r["memory_id"]) for r in rows] == [
        ("insert", "test", m.id),
        ("update", "cli", m.id),
    ]
    assert rows[0]["payload"] == memory_to_dict(m)
    assert rows[1]["payload"] == {"priority": 9, "updated": "2025-06-01T12:05:00.000000Z"}
    assert store.journal_rows(after_seq=rows[0]["seq"]) == rows[1:]
    assert store.journal_rows(limit=1) == rows[:1]


def test_a_failed_transaction_leaves_no_memory_and_no_journal(store: Store, make_memory: MakeMemory) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        store.insert_memory(make_memory(), "test", T0)
        raise RuntimeError("crash between the insert and the commit")
    assert store.list_memories(statuses=None) == [] and store.journal_rows() == []


def test_one_live_memory_per_content_hash(store: Store, make_memory: MakeMemory) -> None:
    first = make_memory("same words")
    put(store, first)
    with pytest.raises(StoreError), store.transaction():
        store.insert_memory(make_memory("same words"), "test", T0)
    with store.transaction():
        store.update_memory(first, replace(first, status=Status.SUPERSEDED), "test", T0, "supersede")
    again = make_memory("same words")
    put(store, again)  # history keeps the superseded row; a new live one is allowed
    assert store.by_hash(first.content_hash) == again


def test_find_prefix_is_hex_only(store: Store, make_memory: MakeMemory) -> None:
    a, b = make_memory("one", id="abc1000000"), make_memory("two", id="abc2000000")
    put(store, a, b, make_memory("three", id="ff00000000"))
    assert [m.id for m in store.find_prefix("abc")] == [a.id, b.id]
    assert [m.id for m in store.find_prefix("ABC2")] == [b.id]
    assert store.find_prefix("") == [] and store.find_prefix("a%") == [] and store.find_prefix("zz") == []


def test_list_and_count_by_status_and_type(store: Store, make_memory: MakeMemory) -> None:
    old = make_memory("old note", type=MemoryType.GOTCHA, created=T0 - timedelta(days=2))
    new = make_memory("new note", type=MemoryType.DECISION)
    gone = make_memory("archived note", status=Status.ARCHIVED)
    put(store, old, new, gone)
    assert [m.id for m in store.list_memories()] == [new.id, old.id]  # newest first, live only
    assert [m.id for m in store.list_memories(types=["gotcha"])] == [old.id]
    assert len(store.list_memories(statuses=None)) == 3
    assert [m.id for m in store.list_memories(limit=1)] == [new.id]
    assert store.counts() == {"status": {"active": 2, "archived": 1}, "type": {"decision": 1, "gotcha": 1}}


def test_get_many_and_row_numbers_handle_big_batches(store: Store, make_memory: MakeMemory) -> None:
    many = [make_memory(f"note number {i}") for i in range(1_200)]
    put(store, *many)
    ids = [m.id for m in many] + ["0000000000"]
    assert set(store.get_many(ids)) == {m.id for m in many}
    rows = store.row_numbers(ids)
    assert len(rows) == 1_200
    back = store.ids_for_rows(list(rows.values()))
    assert {mid for mid, _ in back.values()} == {m.id for m in many}


def test_fts_finds_content_summary_and_tags_with_statuses(store: Store, make_memory: MakeMemory) -> None:
    wal = make_memory("we use WAL mode for concurrency", tags=("sqlite",))
    lock = make_memory("advisory locks for the queue", summary="queue locking")
    archived = make_memory("WAL checkpoints run at shutdown", status=Status.ARCHIVED)
    put(store, wal, lock, archived)
    assert [mid for mid, _ in store.search_text(TextQuery(("wal",)), 10)] == [wal.id]
    live = store.search_text(TextQuery(("wal",)), 10, ("active", "archived"))
    assert {mid for mid, _ in live} == {wal.id, archived.id}
    assert [mid for mid, _ in store.search_text(TextQuery(("sqlite",)), 10)] == [wal.id]  # tags are indexed
    assert [mid for mid, _ in store.search_text(TextQuery(("locking",)), 10)] == [lock.id]  # so are summaries
    scores = store.search_text(TextQuery(("queue", "locks")), 10)
    assert scores[0][0] == lock.id and scores[0][1] > 0  # bm25 negated: larger is better


def test_fts_follows_updates_and_rebuilds(store: Store, make_memory: MakeMemory) -> None:
    m = make_memory("the cache uses LRU eviction")
    put(store, m)
    with store.transaction():
        store.update_memory(
            m, replace(m, content="the cache uses LFU eviction", summary="LFU"), "test", T0, "edit"
        )
    assert store.search_text(TextQuery(("lru",)), 5) == []
    assert [mid for mid, _ in store.search_text(TextQuery(("lfu",)), 5)] == [m.id]
    with store.transaction():
        store.rebuild_text_index()
    assert [mid for mid, _ in store.search_text(TextQuery(("lfu",)), 5)] == [m.id]


def test_edges_are_unique_per_source_target_type(store: Store, make_memory: MakeMemory) -> None:
    a, b, c = make_memory("a"), make_memory("b"), make_memory("c")
    put(store, a, b, c)
    with store.transaction():
        store.upsert_edge(Edge(a.id, b.id, EdgeType.RELATES_TO, 0.4), "test", T0)
        store.upsert_edge(Edge(a.id, b.id, EdgeType.RELATES_TO, 0.9, EdgeStatus.SUGGESTED), "test", T0)
        store.upsert_edge(Edge(a.id, b.id, EdgeType.REFINES, 0.5), "test", T0)
        store.upsert_edge(Edge(c.id, a.id, EdgeType.SOURCE_OF, 1.0), "test", T0)
    edges = store.edges([a.id])
    assert len(edges) == 3
    relates = next(e for e in edges if e.type == EdgeType.RELATES_TO)
    assert (relates.strength, relates.status) == (0.9, EdgeStatus.SUGGESTED)
    assert {e.type for e in store.edges([a.id], status="active")} == {EdgeType.REFINES, EdgeType.SOURCE_OF}
    assert store.edges([]) == [] and len(store.edges()) == 3
    with store.transaction():
        store.delete_edge(a.id, b.id, "refines", "test", T0)
    assert {e.type for e in store.edges([b.id])} == {EdgeType.RELATES_TO}
    ops = [r["op"] for r in store.journal_rows()]
    assert ops[3:] == ["edge", "edge", "edge", "edge", "edge_delete"]


def test_centrality_is_stored_but_not_journaled(store: Store, make_memory: MakeMemory) -> None:
    a, b = make_memory("a"), make_memory("b")
    put(store, a, b)
    journal = len(store.journal_rows())
    with store.transaction():
        store.write_centrality({a.id: 0.7})
    got_a, got_b = store.get(a.id), store.get(b.id)
    assert got_a is not None and got_b is not None
    assert (got_a.centrality, got_b.centrality) == (0.7, 0.0)
    with store.transaction():
        store.write_centrality({b.id: 0.2})
    got_a = store.get(a.id)
    assert got_a is not None and got_a.centrality == 0.0
    assert len(store.journal_rows()) == journal


def test_record_access_counts_and_journals_once(store: Store, make_memory: MakeMemory) -> None:
    a, b = make_memory("a"), make_memory("b")
    put(store, a, b)
    later = T0 + timedelta(days=1)
    with store.transaction():
        store.record_access([a.id, b.id], later, "recall")
        store.record_access([], later, "recall")
    got = store.get(a.id)
    assert got is not None and (got.access_count, got.last_accessed) == (1, later)
    assert store.journal_rows()[-1]["payload"] == {"ids": [a.id, b.id]}
    assert [r["op"] for r in store.journal_rows()].count("access") == 1


def test_cursors_and_meta_upsert(store: Store) -> None:
    assert store.read_cursor("s1") is None
    with store.transaction():
        store.write_cursor(CursorRow("s1", "/t.jsonl", 10, "u1", 0, False), T0)
        store.write_cursor(CursorRow("s1", "/t.jsonl", 99, "u2", 2, True), T0)
        store.set_meta("k", "v1")
        store.set_meta("k", "v2")
    assert store.read_cursor("s1") == CursorRow("s1", "/t.jsonl", 99, "u2", 2, True)
    assert store.get_meta("k") == "v2" and store.get_meta("nope", "dflt") == "dflt"


# -- vectors -------------------------------------------------------------------------------------


def test_index_names_are_safe_and_distinct() -> None:
    assert vectors.index_name("minilm-l6-v2-384", 384) == "vec_minilm_l6_v2_384"
    assert vectors.index_name("voyage-3.5-lite", 1024) == "vec_voyage_3_5_lite_1024"
    assert vectors.index_name("Robert'); DROP TABLE x;--", 8).replace("_", "").isalnum()


def test_pack_unpack_round_trip() -> None:
    values = (0.5, -1.25, 3.0)
    assert unpack(pack(values)) == values


@pytest.fixture
def vec_store(store: Store) -> Store:
    if not store.vectors:
        pytest.fail(f"sqlite-vec is not loaded on this Python: {store.conn.driver.note}")
    return store


def test_knn_finds_the_nearest_and_pending_tracks_what_is_embedded(
    vec_store: Store, make_memory: MakeMemory
) -> None:
    store = vec_store
    emb = FakeEmbedder(dim=32)
    texts = ["postgres advisory locks", "redis session cache", "react component tests", "python code"]
    mems = [make_memory(t) for t in texts[:3]] + [make_memory(texts[3], type=MemoryType.CODE)]
    put(store, *mems)
    with store.transaction():
        table = vectors.ensure_index(store.conn, emb.key, emb.dim, T0)
        assert vectors.ensure_index(store.conn, emb.key, emb.dim, T0) == table  # once per embedder
    rows = store.row_numbers([m.id for m in mems])
    assert {mid for _, mid in vectors.pending(store.conn, table)} == {
        m.id for m in mems[:3]
    }  # code is never embedded
    vecs = emb.embed_documents(texts[:2])
    with store.transaction():
        vectors.write_vectors(
            store.conn,
            table,
            [(rows[m.id], pack(v.tolist())) for m, v in zip(mems[:2], vecs, strict=True)],
        )
    assert [mid for _, mid in vectors.pending(store.conn, table)] == [mems[2].id]
    assert vectors.count_pending(store.conn, table) == 1
    near = vectors.knn(store.conn, table, pack(emb.embed_query("postgres advisory locks").tolist()), 2)
    assert near[0][0] == rows[mems[0].id] and near[0][1] == pytest.approx(0.0, abs=1e-6)
    stored = vectors.read_vectors(store.conn, table, [rows[mems[0].id], 999_999])
    assert np.allclose(np.frombuffer(stored[rows[mems[0].id]], dtype="<f4"), vecs[0])
    with store.transaction():
        vectors.delete_vectors(store.conn, table, [rows[mems[0].id]])
    assert rows[mems[0].id] not in dict(vectors.knn(store.conn, table, pack(vecs[0].tolist()), 3))


def test_rewriting_a_vector_replaces_it(vec_store: Store, make_memory: MakeMemory) -> None:
    store = vec_store
    m = make_memory("x")
    put(store, m)
    n = store.row_numbers([m.id])[m.id]
    with store.transaction():
        table = vectors.ensure_index(store.conn, "fake-4", 4, T0)
        vectors.write_vectors(store.conn, table, [(n, pack([1, 0, 0, 0]))])
        vectors.write_vectors(store.conn, table, [(n, pack([0, 1, 0, 0]))])
    assert unpack(vectors.read_vectors(store.conn, table, [n])[n]) == (0.0, 1.0, 0.0, 0.0)
    assert vectors.count_pending(store.conn, table) == 0


def test_an_index_has_one_dimension(vec_store: Store) -> None:
    with vec_store.transaction():
        vectors.ensure_index(vec_store.conn, "fake-4", 4, T0)
    with pytest.raises(ValueError, match="dim 4"):
        vectors.ensure_index(vec_store.conn, "fake-4", 8, T0)


def test_drop_index_clears_the_bookkeeping(vec_store: Store, make_memory: MakeMemory) -> None:
    store = vec_store
    m = make_memory("x")
    put(store, m)
    n = store.row_numbers([m.id])[m.id]
    with store.transaction():
        table = vectors.ensure_index(store.conn, "fake-4", 4, T0)
        vectors.write_vectors(store.conn, table, [(n, pack([1, 0, 0, 0]))])
        vectors.drop_index(store.conn, table)
    assert vectors.count_pending(store.conn, table) == 1
    assert vectors.existing_index(store.conn, "fake-4") is not None  # re-created on the next ensure
