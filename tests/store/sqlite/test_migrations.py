"""Numbered migrations: from blank and from every older version, transactional, never on foreign files."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path

import pytest

from cortex.core.model import Scope
from cortex.core.recall.query import TextQuery
from cortex.errors import NotACortexStore, StoreError
from cortex.store.sqlite import connection as db
from cortex.store.sqlite import migrations
from cortex.store.sqlite.store import Store


def schema(conn: db.Connection) -> list[tuple[str, str, str]]:
    """Every table, index, trigger and view (name, type, normalised SQL), sorted."""
    rows = conn.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall()
    return sorted((r[1], r[0], " ".join(str(r[2]).split())) for r in rows)


def fresh(path: Path, upto: int | None = None) -> db.Connection:
    conn = db.connect(path)
    db.apply_pragmas(conn)
    migrations.migrate(conn, upto)
    return conn


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_blank_file_migrates_to_the_latest_version(tmp_path: Path) -> None:
    conn = fresh(tmp_path / "s.db")
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == migrations.LATEST_VERSION
        assert conn.execute("PRAGMA application_id").fetchone()[0] == db.APPLICATION_ID
        tables = {name for name, kind, _ in schema(conn) if kind == "table"}
        assert {"memories", "edges", "journal", "memories_fts", "cursors", "meta", "vec_indexes"} <= tables
    finally:
        conn.close()


def test_migrate_twice_is_a_no_op(tmp_path: Path) -> None:
    conn = fresh(tmp_path / "s.db")
    try:
        before = schema(conn)
        assert migrations.migrate(conn) == migrations.LATEST_VERSION
        assert schema(conn) == before
    finally:
        conn.close()


@pytest.mark.parametrize("start", range(migrations.LATEST_VERSION + 1))
def test_every_older_version_upgrades_to_the_same_schema_as_a_fresh_store(tmp_path: Path, start: int) -> None:
    reference = fresh(tmp_path / "fresh.db")
    old = fresh(tmp_path / "old.db", upto=start)
    try:
        assert old.execute("PRAGMA user_version").fetchone()[0] == start
        assert migrations.migrate(old) == migrations.LATEST_VERSION
        assert schema(old) == schema(reference)
    finally:
        reference.close()
        old.close()


def test_store_data_survives_the_upgrade_path(tmp_path: Path) -> None:
    # Data written at version 1 is still readable and searchable after every later migration.
    conn = fresh(tmp_path / "s.db", upto=1)
    conn.execute(
        "INSERT INTO memories (id, content, type, scope, confidence, priority, created, updated, "
        "content_hash) VALUES ('abc123def0', 'we use WAL mode', 'decision', 'project', 0.9, 7, "
        "'2025-01-01T00:00:00.000000Z', '2025-01-01T00:00:00.000000Z', 'h1')"
    )
    conn.close()
    store = Store.open(tmp_path / "s.db", Scope.PROJECT)
    try:
        memory = store.get("abc123def0")
        assert memory is not None and memory.content == "we use WAL mode"
        assert [mid for mid, _ in store.search_text(TextQuery(("wal",)), 5)] == ["abc123def0"]
    finally:
        store.close()


def test_a_failing_migration_leaves_the_previous_version_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(conn: db.Connection) -> None:
        conn.execute("CREATE TABLE half_done (x INTEGER)")
        raise RuntimeError("migration bug")

    conn = fresh(tmp_path / "s.db")
    monkeypatch.setattr(migrations, "MIGRATIONS", (*migrations.MIGRATIONS, broken))
    monkeypatch.setattr(migrations, "LATEST_VERSION", migrations.LATEST_VERSION + 1)
    try:
        with pytest.raises(RuntimeError, match="migration bug"):
            migrations.migrate(conn)
        assert conn.execute("PRAGMA user_version").fetchone()[0] == migrations.LATEST_VERSION - 1
        assert "half_done" not in {name for name, _, _ in schema(conn)}
    finally:
        conn.close()


@pytest.mark.parametrize("attempt", range(8))
def test_two_processes_migrating_at_once_both_succeed(tmp_path: Path, attempt: int) -> None:
    # Each attempt races fresh openers on a new file: the window is a few microseconds wide.
    path = tmp_path / f"race{attempt}.db"
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def open_store() -> None:
        try:
            start.wait(10)
            Store.open(path, Scope.PROJECT).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_store) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    conn = db.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == migrations.LATEST_VERSION
    finally:
        conn.close()


def test_a_foreign_sqlite_database_is_refused_and_left_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "cortex.db"
    other = sqlite3.connect(path)
    other.execute("CREATE TABLE notes (body TEXT)")
    other.execute("INSERT INTO notes VALUES ('mine')")
    other.commit()
    other.close()
    before = digest(path)
    with pytest.raises(NotACortexStore) as err:
        Store.open(path, Scope.PROJECT)
    assert "another program" in err.value.message and "mv" in err.value.fix
    assert digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cortex.db"]


def test_a_store_from_a_newer_cortex_is_refused_without_writing(tmp_path: Path) -> None:
    path = tmp_path / "cortex.db"
    fresh(path).close()
    conn = db.connect(path)
    conn.execute(f"PRAGMA user_version = {migrations.LATEST_VERSION + 5}")
    conn.close()
    before = digest(path)
    with pytest.raises(NotACortexStore) as err:
        Store.open(path, Scope.PROJECT)
    assert "newer cortex" in err.value.message and "upgrade" in err.value.fix
    assert digest(path) == before


def test_readonly_open_of_an_old_store_asks_for_an_upgrade(tmp_path: Path) -> None:
    if migrations.LATEST_VERSION < 2:
        old = tmp_path / "blank.db"
        old.write_bytes(b"")  # version 0: a blank file
    else:
        old = tmp_path / "old.db"
        fresh(old, upto=1).close()
    with pytest.raises(StoreError, match="schema upgrade"):
        Store.open(old, Scope.PROJECT, readonly=True)
