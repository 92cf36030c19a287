"""The storage port's contract, run against every adapter on real files.

Each test opens fresh stores through `cortex.store.open` with the adapter of the `adapter`
fixture; a new adapter joins by adding its name to `ADAPTERS`, nothing else.
"""

from __future__ import annotations

import ast
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from cortex.core.model import Edge, EdgeStatus, EdgeType, Memory, MemoryType, Scope, Source, Status
from cortex.core.recall.query import TextQuery
from cortex.core.write.similar import Text
from cortex.errors import CortexError, NotFound
from cortex.store import open as stores
from cortex.store.packing import pack, unpack
from cortex.store.port import (
    Checkpoint,
    CursorRow,
    MemoryStore,
    StoreAdapter,
    StoreAdmin,
    VectorHit,
    VectorIndex,
)
from tests.conftest import T0
from tests.support.postgres import postgres_dsn, team_dsn  # noqa: F401  (fixtures)

ADAPTERS = ["sqlite", "postgres"]
REPO = Path(__file__).resolve().parents[2]

MakeMemory = Callable[..., Memory]
OpenStore = Callable[..., StoreAdmin]


@pytest.fixture(params=ADAPTERS)
def adapter(request: pytest.FixtureRequest) -> str:
    if request.param == "postgres":
        request.getfixturevalue("team_dsn")  # a real server, named by $CORTEX_TEAM_DSN
    return str(request.param)


@pytest.fixture
def open_fresh(adapter: str, tmp_path: Path) -> Iterator[OpenStore]:
    """Opens stores of the adapter under test in this test's folder (closed afterwards)."""
    opened: list[StoreAdmin] = []

    def factory(name: str = "memories", scope: Scope = Scope.PROJECT, readonly: bool = False) -> StoreAdmin:
        store = stores.open_store(scope, tmp_path / name, readonly=readonly, kind=adapter)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def store(open_fresh: OpenStore) -> StoreAdmin:
    return open_fresh()


@pytest.fixture
def vec_store(store: StoreAdmin) -> StoreAdmin:
    if not store.vectors:
        pytest.skip(f"this store cannot hold vectors here: {store.vector_note}")
    return store


def put(store: MemoryStore, *memories: Memory) -> None:
    with store.transaction():
        for m in memories:
            store.insert_memory(m, "test", T0)


def ids(memories: list[Memory]) -> list[str]:
    return [m.id for m in memories]


# -- the contract covers the whole port -----------------------------------------------------------


def port_members(*protocols: type) -> set[str]:
    return {name for cls in protocols for name in vars(cls) if not name.startswith("_")}


def test_every_port_method_is_exercised_here() -> None:
    called = {
        node.attr
        for node in ast.walk(ast.parse(Path(__file__).read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute)
    }
    missing = port_members(MemoryStore, StoreAdmin, StoreAdapter) - called
    assert not missing, f"port methods without a contract test: {sorted(missing)}"


# -- opening and transactions ------------------------------------------------------------------


def test_a_store_knows_its_scope_place_and_abilities(open_fresh: OpenStore, tmp_path: Path) -> None:
    project = open_fresh("p")
    global_ = open_fresh("g", scope=Scope.GLOBAL)
    assert (project.scope, global_.scope) == (Scope.PROJECT, Scope.GLOBAL)
    assert project.path == tmp_path / "p"
    assert project.readonly is False
    assert isinstance(project.vectors, bool) and isinstance(project.vector_note, str)


def test_closing_and_reopening_keeps_everything(
    open_fresh: OpenStore, adapter: str, tmp_path: Path, make_memory: MakeMemory
) -> None:
    store = open_fresh()
    m = make_memory("kept across a reopen")
    put(store, m)
    store.close()
    again = stores.open_store(Scope.PROJECT, tmp_path / "memories", kind=adapter)
    try:
        assert again.get(m.id) == m
    finally:
        again.close()


def test_a_transaction_commits_together(store: StoreAdmin, make_memory: MakeMemory) -> None:
    a, b = make_memory("first of two"), make_memory("second of two")
    with store.transaction():
        store.insert_memory(a, "test", T0)
        store.insert_memory(b, "test", T0)
        store.set_meta("k", "v")
    assert set(store.get_many([a.id, b.id])) == {a.id, b.id}
    assert store.get_meta("k") == "v"


def test_a_failed_transaction_leaves_nothing(store: StoreAdmin, make_memory: MakeMemory) -> None:
    before = make_memory("stored before the failure")
    put(store, before)
    journal = store.journal_rows()
    doomed = make_memory("advisory locks guard the job queue")
    with pytest.raises(RuntimeError, match="boom"), store.transaction():
        store.insert_memory(doomed, "test", T0)
        store.update_memory(before, replace(before, content="reworded", summary="x"), "test", T0, "edit")
        store.upsert_edge(Edge(doomed.id, before.id, EdgeType.RELATES_TO, 0.5), "test", T0)
        store.write_cursor(CursorRow("s1", "/t.jsonl", 10, None, 0, False), T0)
        store.set_meta("k", "v")
        store.journal("test", "note", None, {}, T0)
        raise RuntimeError("boom")
    assert store.get(doomed.id) is None
    assert store.get(before.id) == before
    assert store.edges() == [] and store.read_cursor("s1") is None and store.get_meta("k") is None
    assert store.journal_rows() == journal
    assert store.search_text(TextQuery(("advisory",)), 5) == []
    put(store, make_memory("stored after the failure"))
    assert store.journal_seq() == journal[-1]["seq"] + 1  # a rolled-back write leaves no gap


def test_a_read_only_store_reads_and_refuses_writes(open_fresh: OpenStore, make_memory: MakeMemory) -> None:
    m = make_memory("written before the read-only open")
    put(open_fresh("shared"), m)
    reader = open_fresh("shared", readonly=True)
    assert reader.readonly is True
    assert reader.get(m.id) == m
    with pytest.raises(CortexError), reader.transaction():
        reader.set_meta("k", "v")


# -- memories -------------------------------------------------------------------------------------


def test_memories_round_trip_every_field(store: StoreAdmin, make_memory: MakeMemory) -> None:
    m = make_memory(
        "Postgres advisory locks guard the job queue",
        summary="advisory locks",
        type=MemoryType.ARCHITECTURE,
        confidence=0.875,
        priority=9,
        pinned=True,
        source=Source("sess-1", 1234, "feature/q", "abc123", ("src/q.py",)),
        tags=("db", "ünïcode"),
        access_count=3,
        last_accessed=T0 + timedelta(hours=1),
        low_since=T0 + timedelta(days=2),
        status_changed=T0 + timedelta(days=3),
        centrality=0.25,
    )
    put(store, m)
    assert store.get(m.id) == m
    assert store.get("0000000000") is None
    assert store.get_many([m.id, "0000000000", m.id]) == {m.id: m}
    assert store.by_hash(m.content_hash) == m and store.by_hash("nope") is None
    assert store.all_memories() == [m]


def test_updates_are_journaled_with_what_changed(store: StoreAdmin, make_memory: MakeMemory) -> None:
    m = make_memory("the cache uses LRU eviction")
    put(store, m)
    new = replace(m, content="the cache uses LFU eviction", updated=T0 + timedelta(days=1))
    with store.transaction():
        store.update_memory(m, new, "test", T0, "edit")
        store.update_memory(new, new, "test", T0, "edit")  # nothing changed: nothing journaled
    assert store.get(m.id) == new
    rows = store.journal_rows()
    assert [r["op"] for r in rows] == ["insert", "edit"]
    assert rows[1]["memory_id"] == m.id and set(rows[1]["payload"]) == {"content", "updated"}
    assert store.journal_rows(after_seq=rows[0]["seq"]) == rows[1:]
    assert store.journal_rows(limit=1) == rows[:1]
    assert store.journal_seq() == rows[-1]["seq"]


def test_prefixes_lists_and_counts(store: StoreAdmin, make_memory: MakeMemory) -> None:
    old = make_memory("old gotcha", type=MemoryType.GOTCHA, created=T0)
    new = make_memory("new decision", created=T0 + timedelta(days=1))
    archived = make_memory("archived one", status=Status.ARCHIVED)
    put(store, old, new, archived)
    assert ids(store.find_prefix(old.id)) == [old.id]
    assert ids(store.find_prefix(old.id[:6], limit=2)) == [old.id, new.id]
    assert store.find_prefix("zz") == [] and store.find_prefix("") == []
    assert ids(store.list_memories()) == [new.id, old.id]
    assert ids(store.list_memories(types=["gotcha"])) == [old.id]
    assert len(store.list_memories(statuses=None)) == 3
    assert ids(store.list_memories(limit=1)) == [new.id]
    assert store.counts() == {"status": {"active": 2, "archived": 1}, "type": {"decision": 1, "gotcha": 1}}
    assert store.count_active() == 2
    assert sorted(store.active_ids()) == sorted([old.id, new.id])
    texts = sorted(store.active_texts(), key=lambda t: t.id)
    assert texts == [Text(old.id, "gotcha", "old gotcha"), Text(new.id, "decision", "new decision")]


def test_access_is_counted_once_per_batch(store: StoreAdmin, make_memory: MakeMemory) -> None:
    a, b = make_memory("a"), make_memory("b")
    put(store, a, b)
    later = T0 + timedelta(days=1)
    with store.transaction():
        store.record_access([a.id, b.id], later, "recall")
        store.record_access([], later, "recall")
    got = store.get(a.id)
    assert got is not None and (got.access_count, got.last_accessed) == (1, later)
    assert [r["op"] for r in store.journal_rows()].count("access") == 1


def test_tags_find_code_memories(store: StoreAdmin, make_memory: MakeMemory) -> None:
    f = make_memory("def f(): ...", type=MemoryType.CODE, tags=("code:src/a.py:f",))
    g = make_memory("def g(): ...", type=MemoryType.CODE, tags=("code:src/a.py:g",))
    other = make_memory("def h(): ...", type=MemoryType.CODE, tags=("code:src/b.py:h",))
    gone = make_memory(
        "def old(): ...", type=MemoryType.CODE, tags=("code:src/a.py:old",), status=Status.PRUNED
    )
    put(store, f, g, other, gone)
    assert ids(store.tagged("code:src/a.py:f", ["code"])) == [f.id]
    assert store.tagged("code:src/a.py:f", ["decision"]) == []
    assert ids(store.tag_prefix("code:src/a.py:", ["code"])) == [f.id, g.id]


def test_tags_are_found_on_live_memories_as_they_are_now(store: StoreAdmin, make_memory: MakeMemory) -> None:
    kept = make_memory("kept", type=MemoryType.PROGRESS, tags=("turn-state",), status=Status.ARCHIVED)
    later = make_memory("later", type=MemoryType.PROGRESS, tags=("other",))
    gone = make_memory("gone", type=MemoryType.PROGRESS, tags=("turn-state", "state:x"))
    near = make_memory("near", type=MemoryType.CONTEXT, tags=("turn-state-2", "turn state", "xstate:y"))
    put(store, kept, later, gone, near)
    with store.transaction():
        store.update_memory(later, replace(later, tags=("turn-state", "state:y")), "test", T0, "edit")
        store.update_memory(gone, replace(gone, tags=("other",)), "test", T0, "edit")
    types = ["progress", "context"]
    assert ids(store.tagged("turn-state", types)) == [kept.id, later.id]
    assert ids(store.tag_prefix("state:", types)) == [later.id]
    assert ids(store.tagged("TURN-STATE", types)) == []  # exactly, not as the index folds it
    assert ids(store.tagged("turn state", types)) == [near.id]


def test_exact_hash_prefers_a_live_memory_then_the_oldest_other(
    store: StoreAdmin, make_memory: MakeMemory
) -> None:
    older = make_memory("same words", status=Status.PRUNED, created=T0)
    newer = make_memory("same words", status=Status.SUPERSEDED, created=T0 + timedelta(days=1))
    put(store, newer, older)
    assert store.by_hash(older.content_hash) == older
    live = make_memory("same words", status=Status.ARCHIVED, created=T0 + timedelta(days=2))
    put(store, live)
    assert store.by_hash(older.content_hash) == live


def test_tags_match_exactly_whatever_characters_they_hold(store: StoreAdmin, make_memory: MakeMemory) -> None:
    quoted = make_memory("a", type=MemoryType.PROGRESS, tags=('state:test:pytest -k "été\\x"',))
    longer = make_memory("b", type=MemoryType.PROGRESS, tags=('state:test:pytest -k "été\\x" -q',))
    inside = make_memory("c", type=MemoryType.PROGRESS, tags=("note state:test:pytest",))
    put(store, quoted, longer, inside)
    assert ids(store.tagged('state:test:pytest -k "été\\x"', ["progress"])) == [quoted.id]
    assert ids(store.tag_prefix('state:test:pytest -k "été', ["progress"])) == [quoted.id, longer.id]
    assert ids(store.tag_prefix("state:", ["progress"])) == [
        quoted.id,
        longer.id,
    ]  # a prefix, not a substring


# -- keyword search -------------------------------------------------------------------------------


def test_keyword_search_covers_text_summary_tags_and_statuses(
    store: StoreAdmin, make_memory: MakeMemory
) -> None:
    wal = make_memory("we use WAL mode for concurrency", tags=("sqlite",))
    lock = make_memory("advisory locks for the queue", summary="queue locking")
    archived = make_memory("WAL checkpoints run at shutdown", status=Status.ARCHIVED)
    put(store, wal, lock, archived)
    assert [mid for mid, _ in store.search_text(TextQuery(("wal",)), 10)] == [wal.id]
    both = store.search_text(TextQuery(("wal",)), 10, ("active", "archived"))
    assert {mid for mid, _ in both} == {wal.id, archived.id}
    assert [mid for mid, _ in store.search_text(TextQuery(("sqlite",)), 10)] == [wal.id]
    assert [mid for mid, _ in store.search_text(TextQuery(("locking",)), 10)] == [lock.id]
    ranked = store.search_text(TextQuery(("queue", "locks", "wal")), 10)
    assert ranked[0][0] == lock.id and ranked[0][1] > ranked[1][1]  # more shared terms rank higher
    assert store.search_text(TextQuery(("queue", "wal"), match_all=True), 10) == []
    assert store.search_text(TextQuery(("runs", "migration")), 10) == []
    assert [mid for mid, _ in store.search_text(TextQuery(("concur",), prefix=True), 10)] == [wal.id]
    assert store.search_text(TextQuery(()), 10) == []


def test_query_syntax_in_terms_is_plain_text(store: StoreAdmin, make_memory: MakeMemory) -> None:
    m = make_memory('say "NEAR(a b)" content:x -y * OR AND')
    put(store, m)
    for term in ('"NEAR(a b)"', "content:x", "-y", "*", "OR", "AND", '"'):
        store.search_text(TextQuery((term,)), 5)  # never a syntax error
    assert [mid for mid, _ in store.search_text(TextQuery(("content:x",)), 5)] == [m.id]


def test_the_keyword_index_follows_updates_and_rebuilds(store: StoreAdmin, make_memory: MakeMemory) -> None:
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
    assert store.check_text_index() is True
    assert [mid for mid, _ in store.search_text(TextQuery(("lfu",)), 5)] == [m.id]


# -- edges, cursors, meta ---------------------------------------------------------------------------


def test_edges_are_unique_per_source_target_type(store: StoreAdmin, make_memory: MakeMemory) -> None:
    a, b, c = make_memory("a"), make_memory("b"), make_memory("c")
    put(store, a, b, c)
    with store.transaction():
        store.upsert_edge(Edge(a.id, b.id, EdgeType.RELATES_TO, 0.4), "test", T0)
        store.upsert_edge(Edge(a.id, b.id, EdgeType.RELATES_TO, 0.9, EdgeStatus.SUGGESTED), "test", T0)
        store.upsert_edge(Edge(a.id, b.id, EdgeType.REFINES, 0.5), "test", T0)
        store.upsert_edge(Edge(c.id, a.id, EdgeType.SOURCE_OF, 1.0), "test", T0)
    assert len(store.edges([a.id])) == 3 and store.edges([]) == [] and len(store.edges()) == 3
    relates = next(e for e in store.edges([b.id]) if e.type == EdgeType.RELATES_TO)
    assert (relates.strength, relates.status) == (0.9, EdgeStatus.SUGGESTED)
    assert {e.type for e in store.edges([a.id], status="active")} == {EdgeType.REFINES, EdgeType.SOURCE_OF}
    with store.transaction():
        store.delete_edge(a.id, b.id, "refines", "test", T0)
    assert {e.type for e in store.edges([b.id])} == {EdgeType.RELATES_TO}
    assert [r["op"] for r in store.journal_rows()][3:] == ["edge"] * 4 + ["edge_delete"]


def test_centrality_is_stored_but_not_journaled(store: StoreAdmin, make_memory: MakeMemory) -> None:
    a, b = make_memory("a"), make_memory("b")
    put(store, a, b)
    journal = store.journal_seq()
    with store.transaction():
        store.write_centrality({a.id: 0.7})
    assert [m.centrality for m in store.get_many([a.id, b.id]).values()] == [0.7, 0.0]
    with store.transaction():
        store.write_centrality({})
    assert [m.centrality for m in store.get_many([a.id, b.id]).values()] == [0.0, 0.0]
    assert store.journal_seq() == journal


def test_cursors_and_meta_are_replaced_in_place(store: StoreAdmin) -> None:
    assert store.read_cursor("s1") is None and store.get_meta("k") is None
    with store.transaction():
        store.write_cursor(CursorRow("s1", "/t.jsonl", 10, "u1", 0, False), T0)
        store.write_cursor(CursorRow("s1", "/t.jsonl", 99, "u2", 2, True), T0)
        store.set_meta("k", "v1")
        store.set_meta("k", "v2")
    assert store.read_cursor("s1") == CursorRow("s1", "/t.jsonl", 99, "u2", 2, True)
    assert store.get_meta("k") == "v2" and store.get_meta("nope", "dflt") == "dflt"


def as_older_cortex_wrote_it(
    store: StoreAdmin, adapter: str, cp: Checkpoint, sqlite_steps: Sequence[str], postgres_step: str
) -> None:
    """Rewrite a checkpoint the way an older schema left it: SQL on the SQLite file, or one
    statement on the PostgreSQL snapshot schema (`{}` stands for `<snapshot>.`)."""
    if adapter == "sqlite":
        with sqlite3.connect(cp.path) as old:
            for step in sqlite_steps:
                old.execute(step)
        return
    with store.session.transaction() as conn:  # type: ignore[attr-defined]
        (snapshot,) = conn.execute("SELECT snapshot FROM checkpoints WHERE name = %s", (cp.name,)).fetchone()
        conn.execute(postgres_step.format(f"{snapshot}."))


def test_read_records_are_kept_once_and_looked_up_in_batches(store: StoreAdmin) -> None:
    assert store.read_records([]) == set() and store.read_records(["u1"]) == set()
    many = [f"rec-{i:05d}" for i in range(1_200)]  # more than one IN list holds
    with store.transaction():
        store.mark_read({"u1", "u2"}, T0)
        store.mark_read(["u1"], T0 + timedelta(days=1))  # read again: nothing changes
        store.mark_read(many, T0)
        store.mark_read([], T0)
    assert store.read_records(["u1", "u3"]) == {"u1"}
    assert store.read_records([*many, "nope"]) == set(many)


def test_read_records_survive_a_checkpoint_and_an_older_one_restores(store: StoreAdmin, adapter: str) -> None:
    # A checkpoint keeps what capture has read. One taken before the upgrade that added the
    # table (SQLite schema 6, PostgreSQL schema 4) restores with none read.
    with store.transaction():
        store.mark_read(["u1"], T0)
    cp = store.write_checkpoint(reason="manual", run="r1", at=T0)
    with store.transaction():
        store.mark_read(["u2"], T0)
    store.restore_checkpoint(cp)
    assert store.read_records(["u1", "u2"]) == {"u1"}
    schema_5 = ["DROP TABLE read_records", "PRAGMA user_version = 5"]
    as_older_cortex_wrote_it(store, adapter, cp, schema_5, "DROP TABLE {}read_records")
    store.restore_checkpoint(cp)
    store.migrate()
    assert store.read_records(["u1", "u2"]) == set()
    with store.transaction():
        store.mark_read(["u2"], T0)
    assert store.read_records(["u1", "u2"]) == {"u2"}


# -- upkeep reads and verbatim imports ------------------------------------------------------------


def test_tick_candidates_are_what_a_tick_could_change(store: StoreAdmin, make_memory: MakeMemory) -> None:
    cutoff = T0 + timedelta(days=10)
    decaying = make_memory("old progress", type=MemoryType.PROGRESS, updated=T0)
    fresh = make_memory("new progress", type=MemoryType.PROGRESS, updated=cutoff + timedelta(days=1))
    pinned = make_memory("pinned progress", type=MemoryType.PROGRESS, pinned=True)
    lasting = make_memory("an architecture note", type=MemoryType.ARCHITECTURE)  # no cutoff: never decays
    low = make_memory("already low", type=MemoryType.ARCHITECTURE, low_since=T0)
    weak = make_memory("barely believed", type=MemoryType.ARCHITECTURE, confidence=0.05)
    stale = make_memory("archived long ago", status=Status.ARCHIVED, updated=T0)
    recent = make_memory("archived lately", status=Status.ARCHIVED, updated=cutoff + timedelta(days=1))
    put(store, decaying, fresh, pinned, lasting, low, weak, stale, recent)
    found = store.tick_candidates({MemoryType.PROGRESS: cutoff}, cutoff, 0.1)
    assert ids(found) == [decaying.id, low.id, weak.id, stale.id]
    assert ids(store.tick_candidates({}, T0 - timedelta(days=1), 0.1)) == [low.id, weak.id]


def test_changed_ids_skip_quiet_operations(store: StoreAdmin, make_memory: MakeMemory) -> None:
    a, b = make_memory("a"), make_memory("b")
    put(store, a)
    seq = store.journal_seq()
    put(store, b)
    with store.transaction():
        store.update_memory(a, replace(a, confidence=0.5), "lifecycle", T0, "decay")
        store.record_access([a.id], T0, "recall")
    assert store.changed_ids(seq) == {b.id}
    assert store.changed_ids(0) == {a.id, b.id}


def test_imports_write_verbatim_and_skip_what_is_there(store: StoreAdmin, make_memory: MakeMemory) -> None:
    a, b = make_memory("a"), make_memory("b")
    with store.transaction():
        store.import_memory(a)
        store.import_memory(b)
        assert store.import_edge(Edge(a.id, b.id, EdgeType.RELATES_TO, 0.5), T0) is True
        assert store.import_edge(Edge(a.id, b.id, EdgeType.RELATES_TO, 0.9), T0) is False
    assert store.all_memories() == sorted([a, b], key=lambda m: m.id)
    assert store.journal_rows() == [] and store.edges()[0].strength == 0.5
    record = {"at": "2025-06-01T12:00:00+00:00", "actor": "elsewhere", "op": "insert", "memory_id": a.id}
    rows = [{**record, "payload": {"n": 1}}, {**record, "payload": {"n": 2}}]
    with store.transaction():
        assert store.append_journal(rows) == 2
        assert store.append_journal(rows) == 0  # already there
    assert [r["payload"] for r in store.journal_rows()] == [{"n": 1}, {"n": 2}]


def test_the_digest_is_the_logical_state(open_fresh: OpenStore, make_memory: MakeMemory) -> None:
    one, two = open_fresh("one"), open_fresh("two")
    a, b = make_memory("a"), make_memory("b")
    for store in (one, two):
        put(store, a, b)
    with two.transaction():
        two.journal("test", "note", None, {}, T0)  # history is not state
    assert one.state_digest() == two.state_digest()
    assert (one.state_digest().memories, one.state_digest().edges) == (2, 0)
    with one.transaction():
        one.upsert_edge(Edge(a.id, b.id, EdgeType.RELATES_TO, 0.5), "test", T0)
    assert one.state_digest() != two.state_digest()


def test_stats_and_migrate(store: StoreAdmin, make_memory: MakeMemory) -> None:
    a, b = make_memory("a"), make_memory("b")
    put(store, a, b)
    with store.transaction():
        store.upsert_edge(Edge(a.id, b.id, EdgeType.RELATES_TO, 0.5), "test", T0)
    stats = store.stats()
    assert (stats.edges, stats.journal, stats.oldest_vector_index) == (1, 3, None)
    assert stats.bytes > 0 and stats.schema >= 1
    assert store.migrate() == stats.schema  # already current: nothing to do


# -- vectors ----------------------------------------------------------------------------------------


def test_vectors_by_memory_id(vec_store: StoreAdmin, make_memory: MakeMemory) -> None:
    store = vec_store
    a, b, c = make_memory("a"), make_memory("b"), make_memory("c")
    code = make_memory("def f(): ...", type=MemoryType.CODE)
    put(store, a, b, c, code)
    assert store.vector_index("fake-4") is None
    assert store.count_unembedded(None) == 3 and store.unembedded(None) == [a.id, b.id, c.id]  # never code
    with store.transaction():
        table = store.ensure_vector_index("fake-4", 4, T0)
        assert store.ensure_vector_index("fake-4", 4, T0) == table
        store.write_vectors(
            table,
            [(a.id, pack([1, 0, 0, 0])), (b.id, pack([0, 1, 0, 0])), ("0000000000", pack([1, 1, 1, 1]))],
        )
    assert store.vector_index("fake-4") == VectorIndex(table, "fake-4", 4)
    assert store.unembedded(table) == [c.id] and store.unembedded(table, limit=0) == []
    assert store.count_unembedded(table) == 1
    near = store.nearest("fake-4", pack([1, 0.1, 0, 0]), 2)
    assert [h.id for h in near] == [a.id, b.id] and all(isinstance(h, VectorHit) for h in near)
    assert near[0].status == "active" and near[0].distance < near[1].distance
    assert store.nearest("other-4", pack([1, 0, 0, 0]), 2) == []
    assert unpack(store.read_vectors(table, [a.id, c.id])[a.id]) == (1.0, 0.0, 0.0, 0.0)
    assert set(store.read_vectors(table, [a.id, c.id], exact=False)) == {a.id}
    with store.transaction():
        store.write_vectors(table, [(a.id, pack([0, 0, 1, 0]))])  # replaces
        store.delete_vectors([b.id])
    assert unpack(store.read_vectors(table, [a.id])[a.id]) == (0.0, 0.0, 1.0, 0.0)
    assert [h.id for h in store.nearest("fake-4", pack([0, 1, 0, 0]), 3)] == [a.id]
    assert store.unembedded(table) == [b.id, c.id]


def two_with_windows(
    store: StoreAdmin, a: Memory, b: Memory, long: Memory, windows: list[bytes]
) -> tuple[str, str]:
    """`a` and `b` stored with a vector each (a: x, b: y) and `long`'s windows; the vector and
    window tables."""
    put(store, a, b)
    with store.transaction():
        table = store.ensure_vector_index("fake-4", 4, T0)
        chunks = store.ensure_chunk_index("fake-4", 4, T0)
        store.write_vectors(table, [(a.id, pack([1, 0, 0, 0])), (b.id, pack([0, 1, 0, 0]))])
        store.write_chunk_vectors(chunks, [(long.id, windows)])
    return table, chunks


def test_windows_of_long_memories_pull_them_nearer(vec_store: StoreAdmin, make_memory: MakeMemory) -> None:
    store = vec_store
    a, b = make_memory("a"), make_memory("b")
    table, chunks = two_with_windows(store, a, b, b, [pack([0, 0, 1, 0]), pack([0.9, 0.1, 0, 0])])
    query = pack([1, 0.05, 0, 0])
    assert [h.id for h in store.nearest("fake-4", query, 2)] == [a.id, b.id]
    pooled = store.nearest("fake-4", query, 2, chunk_k=4)
    assert pooled[1].id == b.id and pooled[1].distance < store.nearest("fake-4", query, 2)[1].distance
    assert {i.name for i in store.vector_indexes()} == {table, chunks}
    with store.transaction():
        store.write_chunk_vectors(chunks, [(b.id, [])])  # cleared
    pooled, plain = store.nearest("fake-4", query, 2, chunk_k=4), store.nearest("fake-4", query, 2)
    # The same hits; one search may come from vec0 and the other from an in-memory copy (float32
    # sums in another order), so distances agree to float precision, not bit for bit.
    assert [(h.id, h.status) for h in pooled] == [(h.id, h.status) for h in plain]
    assert [h.distance for h in pooled] == pytest.approx([h.distance for h in plain], abs=1e-6)


def test_dropping_a_memorys_vectors_drops_its_windows_too(
    vec_store: StoreAdmin, make_memory: MakeMemory
) -> None:
    store = vec_store
    a, b = make_memory("a"), make_memory("b")
    table, chunks = two_with_windows(store, a, b, b, [pack([0, 0, 1, 0]), pack([0.9, 0.1, 0, 0])])
    with store.transaction():
        store.delete_vectors([b.id])
    # No window of the dropped memory is left to pull it into a search.
    assert [h.id for h in store.nearest("fake-4", pack([0.9, 0.1, 0, 0]), 2, chunk_k=4)] == [a.id]
    assert store.unembedded(table) == [b.id] and b.id in store.unembedded(chunks)


def test_a_memory_whose_text_changes_loses_the_vectors_of_its_old_text(
    vec_store: StoreAdmin, make_memory: MakeMemory
) -> None:
    store = vec_store
    a, b = make_memory("cargo build failed: the port is in use"), make_memory("b")
    table, chunks = two_with_windows(store, a, b, a, [pack([0, 0, 1, 0])])
    later = T0 + timedelta(minutes=1)
    kept = replace(b, access_count=3, status=Status.ARCHIVED, updated=later)
    with store.transaction():  # neither the text nor the type: the vectors still say it
        store.update_memory(b, kept, "test", later, "archive")
    assert store.unembedded(table) == []
    content = a.content + "; fixed later"
    with store.transaction():
        store.update_memory(a, replace(a, content=content, updated=later), "test", later, "fixed")
    # Embedded anew by the next pass (the worker's, or `cortex backfill`), never searched by the old text.
    assert store.unembedded(table) == [a.id] and store.unembedded(chunks) == [a.id, b.id]
    assert [h.id for h in store.nearest("fake-4", pack([1, 0, 0, 0]), 2, chunk_k=4)] == [b.id]
    with store.transaction():  # the type is part of what is embedded (`[gotcha] ...`)
        store.update_memory(kept, replace(kept, type=MemoryType.GOTCHA), "test", later, "retype")
    assert set(store.unembedded(table)) == {a.id, b.id}


def test_rebuilding_a_vector_index_keeps_live_vectors(vec_store: StoreAdmin, make_memory: MakeMemory) -> None:
    store = vec_store
    live, gone = make_memory("live"), make_memory("gone", status=Status.PRUNED)
    waiting = make_memory("waiting")
    put(store, live, gone, waiting)
    with store.transaction():
        table = store.ensure_vector_index("fake-4", 4, T0)
        store.write_vectors(table, [(live.id, pack([1, 0, 0, 0])), (gone.id, pack([0, 1, 0, 0]))])
        done = store.rebuild_vector_index(store.vector_indexes()[0], T0)
    assert (done.kept, done.pending, done.problem) == (1, 1, None)
    assert set(store.read_vectors(table, [live.id, gone.id])) == {live.id}
    assert store.stats().oldest_vector_index == table


# -- checkpoints and files ----------------------------------------------------------------------------


def test_checkpoints_restore_the_saved_state(
    store: StoreAdmin, adapter: str, make_memory: MakeMemory
) -> None:
    a, b = make_memory("a"), make_memory("b")
    put(store, a)
    cp = store.write_checkpoint(reason="manual", run="r1", at=T0)
    assert cp.digest == store.state_digest().digest and cp.reason == "manual" and cp.run == "r1"
    assert stores.checkpoint_dir(store.path, kind=adapter) == cp.path.parent
    assert stores.list_checkpoints(store.path, kind=adapter) == [cp]
    assert stores.find_checkpoint([store.path], cp.name[:-3], kind=adapter) == cp
    with pytest.raises(NotFound):
        stores.find_checkpoint([store.path], "no-such-checkpoint", kind=adapter)
    put(store, b)
    store.restore_checkpoint(cp)
    assert store.state_digest().digest == cp.digest and store.get(b.id) is None
    done = stores.mark_restored(cp, T0, kind=adapter)
    assert done.restored_at is not None and stores.list_checkpoints(store.path, kind=adapter) == [done]


def test_a_checkpoint_from_before_the_said_at_columns_restores(
    store: StoreAdmin, adapter: str, make_memory: MakeMemory
) -> None:
    # Taken by the cortex before the upgrade that added `source_time` and `source_record`
    # (SQLite schema 5, PostgreSQL schema 3), restored after it: the memories come back, with
    # no record and no time, and the store is written as before.
    a, b = make_memory("a"), make_memory("b")
    put(store, a)
    cp = store.write_checkpoint(reason="manual", run="r1", at=T0)
    sqlite_steps = [
        "ALTER TABLE memories DROP COLUMN source_time",
        "ALTER TABLE memories DROP COLUMN source_record",
        "DROP TABLE read_records",  # schema 6's
        "PRAGMA user_version = 4",
    ]
    drop = "ALTER TABLE {}memories DROP COLUMN source_time, DROP COLUMN source_record"
    as_older_cortex_wrote_it(store, adapter, cp, sqlite_steps, drop)
    put(store, b)
    store.restore_checkpoint(cp)
    store.migrate()
    back = store.get(a.id)
    assert back is not None and back.content == a.content and store.get(b.id) is None
    assert (back.source.said_at, back.source.record) == (None, None)
    put(store, b)
    assert store.get(b.id) == b


def test_a_store_file_is_checkpointed_as_it_is(
    store: StoreAdmin, adapter: str, make_memory: MakeMemory
) -> None:
    put(store, make_memory("a"))
    cp = stores.checkpoint_file(
        store.scope, store.path, reason="before-upgrade", run="r2", at=T0, kind=adapter
    )
    assert cp.digest == store.state_digest().digest and (cp.reason, cp.run) == ("before-upgrade", "r2")
    assert cp in stores.list_checkpoints(store.path, kind=adapter)


def test_store_files_are_inspected_without_writing(
    open_fresh: OpenStore, adapter: str, tmp_path: Path
) -> None:
    store = open_fresh()
    found = stores.inspect_file(store.path, kind=adapter)
    assert (found.schema, found.problems) == (found.latest, ())
    assert stores.newer_schema(store.path, kind=adapter) is False
    junk = tmp_path / "junk"
    junk.write_bytes(b"definitely not a store" * 100)
    with pytest.raises(CortexError):
        stores.inspect_file(junk, kind=adapter)
    assert junk.read_bytes() == b"definitely not a store" * 100
    runtime = stores.runtime_info(kind=adapter)
    assert runtime.python and isinstance(runtime.vector_search, bool) and runtime.detail


def test_an_unknown_adapter_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown store adapter"):
        stores.adapter("no-such-adapter")


# -- several processes at once ------------------------------------------------------------------------

WRITER = """
import sys
from datetime import UTC, datetime
from pathlib import Path

from cortex.core.model import Memory, MemoryType, Scope, Source, Status
from cortex.core.text import content_hash
from cortex.store.open import open_store

kind, path, worker, count = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
at = datetime(2025, 6, 1, tzinfo=UTC)
store = open_store(Scope.PROJECT, path, kind=kind)
for i in range(count):
    text = f"worker {worker} note {i} about zq{worker}x{i}"
    m = Memory(
        id=f"{worker:04x}{i:06x}", content=text, summary=text, type=MemoryType.CONTEXT,
        scope=Scope.PROJECT, confidence=0.8, priority=5, pinned=False, source=Source(), tags=(),
        access_count=0, last_accessed=None, created=at, updated=at, status=Status.ACTIVE,
        content_hash=content_hash(text),
    )
    with store.transaction():  # one write and one read-modify-write of a shared counter
        store.insert_memory(m, f"worker-{worker}", at)
        store.set_meta("writes", str(int(store.get_meta("writes", "0") or 0) + 1))
store.close()
"""


def test_concurrent_writers_lose_nothing(open_fresh: OpenStore, adapter: str) -> None:
    store = open_fresh()  # created (and migrated) before the writers start
    workers, count = 4, 25
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, adapter, str(store.path), str(w), str(count)],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for w in range(workers)
    ]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0] * workers, json.dumps(outputs)
    assert store.count_active() == workers * count
    assert store.get_meta("writes") == str(workers * count)  # every read-modify-write was isolated
    assert len([r for r in store.journal_rows() if r["op"] == "insert"]) == workers * count
    seqs = [r["seq"] for r in store.journal_rows()]
    assert seqs == list(range(1, len(seqs) + 1))  # gap-free: every writer waited for the last
    hits = store.search_text(TextQuery((f"zq{workers - 1}x{count - 1}",)), 5)
    assert [mid for mid, _ in hits] == [f"{workers - 1:04x}{count - 1:06x}"]


def test_anchors_are_replaced_read_by_memory_and_flagged(store: StoreAdmin, make_memory: MakeMemory) -> None:
    from cortex.core.code.anchors import Anchor

    live, gone = make_memory("Settings in app/config.py reads the URL"), make_memory("the old loader")
    put(store, live, gone)
    with store.transaction():
        store.update_memory(gone, replace(gone, status=Status.ARCHIVED), "test", T0, "archive")
    file_anchor = Anchor("app/config.py", "", "b" * 40, "c" * 40, T0)
    symbol_anchor = Anchor(
        "app/config.py", "Settings", "d" * 40, None, T0 + timedelta(hours=1), blob="a" * 40
    )
    with store.transaction():
        store.write_anchors(live.id, [file_anchor])
        store.write_anchors(live.id, [symbol_anchor, file_anchor])  # replaces, never adds twice
        store.write_anchors(gone.id, [Anchor("app/load.py", "", "e" * 40, None, T0)])
    assert store.read_anchors() == {live.id: [file_anchor, symbol_anchor]}  # active memories only
    assert set(store.read_anchors([live.id, gone.id])) == {live.id, gone.id}
    assert store.anchored_paths() == ["app/config.py", "app/load.py"]
    # Only anchors of active memories whose file is not the blob given there (None: gone).
    assert store.read_moved_anchors({"app/config.py": "a" * 40}) == {live.id: [file_anchor]}
    assert store.read_moved_anchors({"app/config.py": "b" * 40}) == {live.id: [symbol_anchor]}
    assert store.read_moved_anchors({"app/config.py": None, "app/load.py": None}) == {
        live.id: [file_anchor, symbol_anchor]
    }
    with store.transaction():
        store.flag_anchors(live.id, [symbol_anchor], "f" * 40)
    assert store.read_anchors([live.id])[live.id] == [file_anchor, replace(symbol_anchor, flagged="f" * 40)]
    with store.transaction():
        store.write_anchors(live.id, [])
    assert store.read_anchors([live.id]) == {}
