"""Checkpoints of a PostgreSQL store: snapshot schemas in the same database, listed, pruned and
restored in one transaction each.

A checkpoint copies every table of the store (memories, edges, journal, cursors, meta, the
records capture read, the vector tables) into a schema of its own while holding the store's
write lock, so it is exactly the state its digest describes; a `checkpoints` row records it.
Its `path` is a name under the store's namespace (`<namespace>/checkpoints/<name>.snapshot`),
not a file. Restoring empties the live tables and copies the snapshot back in one transaction:
other sessions see the old state or the new one, never a mix.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cortex.errors import NotFound, StoreError
from cortex.shell.failpoints import failpoint
from cortex.store.memory_rows import COLUMNS
from cortex.store.port import Checkpoint
from cortex.store.postgres import vectors
from cortex.store.postgres.connection import Session, namespace, resolve_dsn, schema_name

KEEP_CHECKPOINTS = 5  # per store, as in the SQLite adapter
SUFFIX = ".snapshot"
TABLES = ("memories", "edges", "journal", "cursors", "meta", "vec_indexes", "embedded", "read_records")
_SAFE = re.compile(r"[^a-z0-9_]+")
_FIELDS = "name, reason, run, created, digest, restored_at"


def checkpoint_dir(store_path: Path) -> Path:
    """The namespace under which the store's checkpoints are named."""
    return store_path / "checkpoints"


def _session(store_path: Path) -> Session:
    return Session(resolve_dsn(store_path), schema_name(namespace(store_path)), readonly=False)


def _checkpoint(store_path: Path, row: Any) -> Checkpoint:
    path = checkpoint_dir(store_path) / (row[0] + SUFFIX)
    return Checkpoint(path, namespace(store_path), row[1], row[2], row[3], row[4], row[5])


def write_checkpoint(
    session: Session, store_path: Path, *, reason: str, run: str, at: datetime, digest: Callable[[], str]
) -> Checkpoint:
    """Copy the store into a snapshot schema (under its write lock) and keep the newest few."""
    slug = _SAFE.sub("_", reason.lower()).strip("_") or "manual"
    stamp = at.astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    with session.transaction() as conn:
        taken = {r[0] for r in conn.execute("SELECT name FROM checkpoints")}
        name = next(
            f"{store_path.name or 'store'}-{stamp}-{n:03d}-{slug}"
            for n in range(10_000)
            if f"{store_path.name or 'store'}-{stamp}-{n:03d}-{slug}" not in taken
        )
        snapshot = session.schema + "_" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:16]
        conn.execute(f"CREATE SCHEMA {snapshot}")
        for table in (*TABLES, *(r[0] for r in conn.execute("SELECT name FROM vec_indexes"))):
            conn.execute(f"CREATE TABLE {snapshot}.{table} AS TABLE {session.schema}.{table}")
        created = at.astimezone(UTC).isoformat()
        row = (name, reason, run, created, digest(), None)
        conn.execute(
            f"INSERT INTO checkpoints ({_FIELDS}, snapshot) VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (*row, snapshot),
        )
        failpoint("checkpoint.after_backup")
        for (old,) in conn.execute(
            "SELECT snapshot FROM checkpoints ORDER BY name DESC OFFSET %s", (KEEP_CHECKPOINTS,)
        ).fetchall():
            conn.execute(f"DROP SCHEMA IF EXISTS {old} CASCADE")
            conn.execute("DELETE FROM checkpoints WHERE snapshot = %s", (old,))
    return _checkpoint(store_path, row)


def restore_checkpoint(session: Session, cp: Checkpoint) -> None:
    """Replace the live store's content with the checkpoint's, in one transaction."""
    if session.readonly:
        raise StoreError(f"the store {cp.store!r} is open read-only; cannot restore into it", "")
    with session.transaction() as conn:
        row = conn.execute("SELECT snapshot FROM checkpoints WHERE name = %s", (cp.name,)).fetchone()
        if row is None:
            raise StoreError(
                f"{cp.name} is not a checkpoint of the store {cp.store!r}; nothing was restored",
                "pick another checkpoint (`cortex restore --list`)",
            )
        snapshot = row[0]
        for (table,) in conn.execute("SELECT name FROM vec_indexes").fetchall():
            conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute("TRUNCATE " + ", ".join(TABLES))
        # A checkpoint from before an upgrade lacks the columns and tables later schemas added:
        # they stay empty, as the upgrade left them.
        saved = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = %s",
            (snapshot,),
        ).fetchall()
        kept = {column for table, column in saved if table == "memories"}
        columns = ", ".join(c for c in (c.strip() for c in COLUMNS.split(",")) if c in kept)
        conn.execute(
            f"INSERT INTO memories (n, {columns}) OVERRIDING SYSTEM VALUE "
            f"SELECT n, {columns} FROM {snapshot}.memories"
        )
        snapshot_tables = {table for table, _ in saved}
        for table in TABLES[1:]:
            if table != "vec_indexes" and table in snapshot_tables:
                conn.execute(f"INSERT INTO {table} SELECT * FROM {snapshot}.{table}")
        for key, dim, created in conn.execute(
            f"SELECT embedder_key, dim, created FROM {snapshot}.vec_indexes"
        ).fetchall():
            table = vectors.create(conn, key, int(dim), datetime.fromisoformat(created))
            conn.execute(f"INSERT INTO {table} SELECT * FROM {snapshot}.{table}")


def list_checkpoints(store_path: Path) -> list[Checkpoint]:
    """Complete checkpoints of one store, newest first."""
    session = _session(store_path)
    with session.reading() as conn:
        there = conn.execute(
            "SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND table_name = 'checkpoints'",
            (session.schema,),
        ).fetchone()
        if there is None:
            return []
        rows = conn.execute(f"SELECT {_FIELDS} FROM checkpoints ORDER BY name DESC").fetchall()
    return [_checkpoint(store_path, r) for r in rows]


def find_checkpoint(store_paths: list[Path], ref: str) -> Checkpoint:
    """A checkpoint by name, unique name prefix or path, among the checkpoints of these stores."""
    every = [c for p in store_paths for c in list_checkpoints(p)]
    wanted = Path(ref).stem if ref.endswith(SUFFIX) else ref
    exact = [c for c in every if c.name == wanted or str(c.path) == ref]
    matches = exact or [c for c in every if c.name.startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise NotFound(f"no checkpoint named {ref!r}", "list them with `cortex restore --list`")
    shown = ", ".join(c.name for c in matches[:3])
    raise NotFound(f"checkpoint {ref!r} is ambiguous ({shown})", "give the full name")


def mark_restored(cp: Checkpoint, at: datetime) -> Checkpoint:
    """Record that this checkpoint was restored (a rollback happens once)."""
    done = Checkpoint(
        cp.path, cp.store, cp.reason, cp.run, cp.created, cp.digest, at.astimezone(UTC).isoformat()
    )
    with _session(Path(cp.store)).transaction() as conn:
        conn.execute("UPDATE checkpoints SET restored_at = %s WHERE name = %s", (done.restored_at, cp.name))
    return done
