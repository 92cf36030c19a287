"""Opening SQLite files: validation before any write, pragmas, transactions, error translation."""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from cortex.errors import NotACortexStore, StoreError
from cortex.store.sqlite import connection as db


def open_db(path: Path) -> db.Connection:
    conn = db.connect(path)
    db.apply_pragmas(conn)
    return conn


def test_connect_creates_the_file_with_wal_and_a_busy_timeout(tmp_path: Path) -> None:
    conn = open_db(tmp_path / "a.db")
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal"
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == db.BUSY_TIMEOUT_MS
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert not conn.readonly
    finally:
        conn.close()
    assert (tmp_path / "a.db").exists()


def test_wal_mode_persists_in_the_file(tmp_path: Path) -> None:
    open_db(tmp_path / "a.db").close()
    again = db.connect(tmp_path / "a.db")
    try:
        assert again.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal"
    finally:
        again.close()


def test_check_file_refuses_random_bytes_without_touching_them(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    junk = os.urandom(4096)
    path.write_bytes(junk)
    with pytest.raises(NotACortexStore) as err:
        db.connect(path)
    assert "not an SQLite database" in err.value.message and "mv" in err.value.fix
    assert path.read_bytes() == junk
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junk.db"]  # no -wal/-shm either


def test_check_file_refuses_a_directory(tmp_path: Path) -> None:
    (tmp_path / "store.db").mkdir()
    with pytest.raises(NotACortexStore, match="is a directory"):
        db.check_file(tmp_path / "store.db")


@pytest.mark.parametrize("content", [None, b""], ids=["missing", "empty"])
def test_check_file_accepts_a_missing_or_empty_file(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "new.db"
    if content is not None:
        path.write_bytes(content)
    db.check_file(path)  # an empty file is an empty database


@pytest.mark.parametrize(
    ("exc", "cls", "says"),
    [
        (OSError(errno.ENOSPC, "No space left on device"), StoreError, "is full"),
        (Exception("database or disk is full"), StoreError, "is full"),
        (Exception("attempt to write a readonly database"), StoreError, "read-only"),
        (PermissionError(errno.EACCES, "Permission denied"), StoreError, "read-only"),
        (Exception("database disk image is malformed"), NotACortexStore, "corrupt"),
        (Exception("file is not a database"), NotACortexStore, "corrupt"),
        (Exception("database is locked"), StoreError, "locked by another writer"),
        (Exception("unable to open database file"), StoreError, "cannot open"),
        (Exception("something else"), StoreError, "something else"),
    ],
)
def test_translate_names_the_problem_and_a_fix(
    tmp_path: Path, exc: BaseException, cls: type[StoreError], says: str
) -> None:
    err = db.translate(exc, tmp_path / "x.db")
    assert type(err) is cls
    assert says in err.message and str(tmp_path / "x.db") in err.message
    assert err.fix


def test_transaction_commits_on_success_and_rolls_back_on_error(tmp_path: Path) -> None:
    conn = open_db(tmp_path / "t.db")
    try:
        conn.execute("CREATE TABLE t (x INTEGER)")
        with db.transaction(conn):
            conn.execute("INSERT INTO t VALUES (1)")
        with pytest.raises(RuntimeError), db.transaction(conn):
            conn.execute("INSERT INTO t VALUES (2)")
            raise RuntimeError("boom")
        assert [r[0] for r in conn.execute("SELECT x FROM t")] == [1]
    finally:
        conn.close()


def test_driver_errors_inside_a_transaction_become_store_errors(tmp_path: Path) -> None:
    conn = open_db(tmp_path / "t.db")
    try:
        conn.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
        with pytest.raises(StoreError), db.transaction(conn):
            conn.execute("INSERT INTO t VALUES (1)")
            conn.execute("INSERT INTO t VALUES (1)")  # constraint violation
        assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 0
    finally:
        conn.close()


def test_a_second_writer_waits_for_the_first_instead_of_failing(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    first = open_db(path)
    first.execute("CREATE TABLE t (x INTEGER)")
    second = open_db(path)
    started, done = threading.Event(), threading.Event()

    def write_later() -> None:
        started.wait(10)
        with db.transaction(second):
            second.execute("INSERT INTO t VALUES (2)")
        done.set()

    worker = threading.Thread(target=write_later)
    worker.start()
    try:
        with db.transaction(first):
            first.execute("INSERT INTO t VALUES (1)")
            started.set()
            assert not done.wait(0.3)  # blocked on the write lock while we hold it
        worker.join(30)
        assert done.is_set()
        assert sorted(r[0] for r in first.execute("SELECT x FROM t")) == [1, 2]
    finally:
        worker.join(30)
        first.close()
        second.close()


def test_a_writer_that_times_out_gets_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    holder = open_db(path)
    holder.execute("CREATE TABLE t (x INTEGER)")
    waiter = open_db(path)
    waiter.execute("PRAGMA busy_timeout = 50")
    try:
        with db.transaction(holder):
            with pytest.raises(StoreError) as err, db.transaction(waiter):
                pass
            assert "locked" in err.value.message
    finally:
        holder.close()
        waiter.close()


def test_readonly_connection_reads_but_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    conn = open_db(path)
    conn.execute("CREATE TABLE t (x INTEGER)")
    conn.execute("INSERT INTO t VALUES (7)")
    conn.close()
    ro = db.connect(path, readonly=True)
    try:
        assert ro.readonly
        assert ro.execute("SELECT x FROM t").fetchone()[0] == 7
        with pytest.raises(StoreError, match="read-only"), db.transaction(ro):
            ro.execute("INSERT INTO t VALUES (8)")
    finally:
        ro.close()


def test_connections_get_sqlite_vec_when_the_driver_has_it(tmp_path: Path) -> None:
    conn = open_db(tmp_path / "v.db")
    try:
        assert conn.vectors is conn.driver.vectors
        if conn.vectors:
            assert conn.execute("SELECT vec_version()").fetchone()[0].startswith("v")
    finally:
        conn.close()
