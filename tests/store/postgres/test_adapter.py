"""What the PostgreSQL adapter adds to the storage contract: namespaces in one database, the
journal SQLite would write, bulk vector writes, and refusals that name the fix."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest

from cortex.core.model import Edge, EdgeType, Memory, Scope
from cortex.core.recall.query import TextQuery
from cortex.errors import NotACortexStore, StoreError
from cortex.store import open as stores
from cortex.store.packing import pack
from cortex.store.port import StoreAdmin
from cortex.store.postgres import connection, vectors
from tests.conftest import T0
from tests.support.postgres import free_port

MakeMemory = Callable[..., Memory]


def open_pg(key: str, **kwargs: object) -> StoreAdmin:
    return stores.open_store(Scope.TEAM, Path(key), kind="postgres", **kwargs)  # type: ignore[arg-type]


def unique(tmp_path: Path, name: str) -> str:
    return f"{tmp_path.name}/{name}"  # a fresh namespace per test, relative like a repository key


def test_the_journal_holds_what_sqlite_would_write(
    team_dsn: str, tmp_path: Path, make_memory: MakeMemory
) -> None:
    a, b = make_memory("the queue uses advisory locks"), make_memory("WAL mode for readers")

    def mutate(store: StoreAdmin) -> None:
        with store.transaction():
            store.insert_memory(a, "capture", T0)
            store.insert_memory(b, "capture", T0)
        with store.transaction():
            store.update_memory(a, replace(a, confidence=0.5), "lifecycle", T0 + timedelta(days=1), "decay")
            store.record_access([a.id, b.id], T0, "recall")
            store.upsert_edge(Edge(a.id, b.id, EdgeType.RELATES_TO, 0.5), "links", T0)
            store.delete_edge(a.id, b.id, "relates_to", "links", T0)
            store.journal("user", "note", None, {"ünïcode": [1, 2.5, None]}, T0)

    sqlite = stores.open_store(Scope.PROJECT, tmp_path / "memories.db")
    team = open_pg(unique(tmp_path, "parity"))
    mutate(sqlite)
    mutate(team)
    assert team.journal_rows() == sqlite.journal_rows()
    assert [r["seq"] for r in team.journal_rows()] == list(range(1, 8))
    assert team.state_digest() == sqlite.state_digest()
    sqlite.close()


def test_namespaces_are_stores_of_their_own(team_dsn: str, tmp_path: Path, make_memory: MakeMemory) -> None:
    shop, other = unique(tmp_path, "github.com/acme/shop"), unique(tmp_path, "github.com/acme/other")
    m = make_memory("checkout retries are idempotent")
    first = open_pg(shop)
    with first.transaction():
        first.insert_memory(m, "alice", T0)
    again = open_pg(shop, dsn=team_dsn)  # another clone: the same key names the same store
    assert again.get(m.id) == m and again.path == Path(shop)
    assert open_pg(other).get(m.id) is None
    assert [mid for mid, _ in again.search_text(TextQuery(("idempotent",)), 5)] == [m.id]


def test_a_bulk_vector_write_rebuilds_the_index_and_finds_the_same(
    team_dsn: str, tmp_path: Path, make_memory: MakeMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_pg(unique(tmp_path, "bulk"))
    memories = [make_memory(f"memory number {i}") for i in range(6)]
    with store.transaction():
        for m in memories:
            store.insert_memory(m, "test", T0)
        table = store.ensure_vector_index("fake-4", 4, T0)
    monkeypatch.setattr(vectors, "BULK_ROWS", 3)
    blobs = [pack([1.0, i / 10, 0.0, 0.0]) for i in range(6)]
    with store.transaction():
        store.write_vectors(table, [(m.id, blob) for m, blob in zip(memories, blobs, strict=True)])
    assert [h.id for h in store.nearest("fake-4", pack([1.0, 0.0, 0.0, 0.0]), 3)] == [
        m.id for m in memories[:3]
    ]
    assert store.unembedded(table) == []
    with psycopg.connect(team_dsn) as conn:
        indexes = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND tablename = %s",
            (store.session.schema, table),  # type: ignore[attr-defined]
        ).fetchall()
    assert any("hnsw" in r[0] for r in indexes)


def test_without_a_dsn_the_error_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as caught:
        open_pg(unique(tmp_path, f"nowhere-{free_port()}"))
    assert "CORTEX_TEAM_DSN" in caught.value.fix


def test_an_unreachable_server_is_a_store_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connection, "POOL_WAIT_S", 1.0)
    dsn = f"postgresql://cortex:s3cret@127.0.0.1:{free_port()}/cortex?connect_timeout=1"
    with pytest.raises(StoreError) as caught:
        open_pg(unique(tmp_path, "down"), dsn=dsn)
    assert "cannot reach PostgreSQL" in caught.value.message and "s3cret" not in str(caught.value)


def test_read_only_opens_create_nothing(team_dsn: str, tmp_path: Path) -> None:
    key = unique(tmp_path, "absent")
    with pytest.raises(StoreError, match="read-only"):
        open_pg(key, readonly=True)
    with pytest.raises(NotACortexStore):
        stores.inspect_file(Path(key), kind="postgres")
    with psycopg.connect(team_dsn) as conn:
        found = conn.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname = %s",
            (connection.schema_name(key),),
        ).fetchone()
    assert found == (0,)


def test_foreign_and_newer_schemas_are_refused_untouched(team_dsn: str, tmp_path: Path) -> None:
    foreign, newer = unique(tmp_path, "foreign"), unique(tmp_path, "newer")
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        schema = connection.schema_name(foreign)
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.orders (id int)")
    with pytest.raises(NotACortexStore, match="another program"):
        open_pg(foreign)
    open_pg(newer)
    with psycopg.connect(team_dsn, autocommit=True) as conn:
        conn.execute(f"UPDATE {connection.schema_name(newer)}.cortex_store SET version = 99")
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
        ).fetchall()
    assert tables == [("orders",)]
    assert stores.newer_schema(Path(newer), kind="postgres") is True
    with pytest.raises(NotACortexStore, match="newer cortex"):
        open_pg(newer)
