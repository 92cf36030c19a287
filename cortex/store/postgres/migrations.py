"""Numbered schema migrations of a PostgreSQL store, each in its own transaction, like SQLite's.

A store is one schema; its `cortex_store` row says it is a cortex store and which schema
version it has (SQLite keeps the same in `application_id` and `user_version`). Text columns are
`COLLATE "C"`, so ids and ISO times sort and compare as they do in SQLite whatever the
database's locale.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cortex.errors import NotACortexStore
from cortex.shell.failpoints import failpoint
from cortex.store.postgres import anchors, text_search
from cortex.store.postgres.connection import EXTENSION_LOCK, Session

APPLICATION = "cortex"
T = 'TEXT COLLATE "C"'


def m001_initial(conn: Any) -> None:
    """Memories (with their weighted text-search document), edges, journal, cursors, meta, and
    vector bookkeeping; pgvector tables are created per embedder on first use."""
    conn.execute(f"CREATE TABLE meta (key {T} PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute(
        f"""
        CREATE TABLE memories (
            n BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            id {T} NOT NULL UNIQUE,
            content TEXT NOT NULL,
            summary TEXT NOT NULL DEFAULT '',
            type {T} NOT NULL,
            scope {T} NOT NULL,
            confidence DOUBLE PRECISION NOT NULL,
            priority INTEGER NOT NULL,
            pinned INTEGER NOT NULL DEFAULT 0,
            source_session TEXT,
            source_offset BIGINT,
            source_branch TEXT,
            source_commit TEXT,
            source_files TEXT NOT NULL DEFAULT '[]',
            tags {T} NOT NULL DEFAULT '[]',
            access_count INTEGER NOT NULL DEFAULT 0,
            last_accessed {T},
            created {T} NOT NULL,
            updated {T} NOT NULL,
            status {T} NOT NULL DEFAULT 'active',
            content_hash {T} NOT NULL,
            low_since {T},
            status_changed {T},
            centrality DOUBLE PRECISION NOT NULL DEFAULT 0,
            {text_search.DOCUMENT_COLUMN}
        )
        """
    )
    conn.execute(
        "CREATE UNIQUE INDEX memories_live_hash ON memories(content_hash) "
        "WHERE status IN ('active', 'archived')"
    )
    conn.execute("CREATE INDEX memories_hash ON memories(content_hash)")
    conn.execute("CREATE INDEX memories_status_type ON memories(status, type)")
    conn.execute("CREATE INDEX memories_created ON memories(created)")
    for statement in text_search.INDEXES:
        conn.execute(statement)
    conn.execute(
        f"""
        CREATE TABLE edges (
            source {T} NOT NULL,
            target {T} NOT NULL,
            type {T} NOT NULL,
            strength DOUBLE PRECISION NOT NULL DEFAULT 0.5,
            status {T} NOT NULL DEFAULT 'active',
            created {T} NOT NULL,
            updated {T} NOT NULL,
            PRIMARY KEY (source, target, type)
        )
        """
    )
    conn.execute("CREATE INDEX edges_target ON edges(target)")
    conn.execute(
        f"""
        CREATE TABLE journal (
            seq BIGINT PRIMARY KEY,
            at {T} NOT NULL,
            actor TEXT NOT NULL,
            op {T} NOT NULL,
            memory_id {T},
            payload TEXT NOT NULL DEFAULT '{{}}'
        )
        """
    )
    conn.execute("CREATE INDEX journal_memory ON journal(memory_id)")
    conn.execute(
        f"""
        CREATE TABLE cursors (
            session_id {T} PRIMARY KEY,
            transcript_path TEXT NOT NULL,
            byte_offset BIGINT NOT NULL DEFAULT 0,
            last_uuid TEXT,
            malformed INTEGER NOT NULL DEFAULT 0,
            closed INTEGER NOT NULL DEFAULT 0,
            updated {T} NOT NULL
        )
        """
    )
    conn.execute(
        f"CREATE TABLE vec_indexes (name {T} PRIMARY KEY, embedder_key {T} NOT NULL UNIQUE, "
        f"dim INTEGER NOT NULL, created {T} NOT NULL)"
    )
    conn.execute(
        f"CREATE TABLE embedded (n BIGINT NOT NULL, index_name {T} NOT NULL, PRIMARY KEY (n, index_name))"
    )
    conn.execute(
        f"CREATE TABLE checkpoints (name {T} PRIMARY KEY, snapshot {T} NOT NULL UNIQUE, "
        f"reason TEXT NOT NULL, run TEXT NOT NULL, created {T} NOT NULL, digest TEXT NOT NULL, "
        f"restored_at {T})"
    )


def m002_anchors(conn: Any) -> None:
    """Code anchors: per memory, what it saw of each file and symbol it names (SQLite's schema 4)."""
    for statement in anchors.SCHEMA:
        conn.execute(statement)


def m003_said_at(conn: Any) -> None:
    """Which transcript record said each memory, and when (SQLite's schema 5)."""
    conn.execute("ALTER TABLE memories ADD COLUMN source_time TEXT")
    conn.execute("ALTER TABLE memories ADD COLUMN source_record TEXT")


def m004_read_records(conn: Any) -> None:
    """The transcript records capture has taken memories from (SQLite's schema 6)."""
    conn.execute(f"CREATE TABLE read_records (record {T} PRIMARY KEY, first_read {T} NOT NULL)")


MIGRATIONS: tuple[Callable[[Any], None], ...] = (m001_initial, m002_anchors, m003_said_at, m004_read_records)
LATEST_VERSION = len(MIGRATIONS)


def check_identity(conn: Any, schema: str, key: str) -> int:
    """The schema version of the store in `schema` (0 when there is none yet); refuses a schema
    of another program or of a newer cortex without writing to it."""
    tables = conn.execute(
        "SELECT count(*), count(*) FILTER (WHERE table_name = 'cortex_store') "
        "FROM information_schema.tables WHERE table_schema = %s",
        (schema,),
    ).fetchone()
    if not tables[0]:
        return 0
    if not tables[1]:
        raise NotACortexStore(
            f"schema {schema} (store {key!r}) holds tables of another program; cortex left it untouched",
            f"drop or rename schema {schema}, or use another store name",
        )
    row = conn.execute(f"SELECT application, version FROM {schema}.cortex_store").fetchone()
    if row is None or row[0] != APPLICATION:
        raise NotACortexStore(
            f"schema {schema} (store {key!r}) is not a cortex store", f"drop schema {schema}"
        )
    version = int(row[1])
    if version > LATEST_VERSION:
        raise NotACortexStore(
            f"the store {key!r} was written by a newer cortex (schema {version}, this cortex knows "
            f"{LATEST_VERSION})",
            "upgrade cortex: pip install -U cortex-memory",
        )
    return version


def ensure_extensions(session: Session) -> None:
    """pgvector and pg_trgm in the database (once; concurrent creators queue on a lock)."""
    with session.transaction(lock=False) as conn:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (EXTENSION_LOCK,))
        have = {r[0] for r in conn.execute("SELECT extname FROM pg_extension")}
        for name in ("vector", "pg_trgm"):
            if name not in have:
                conn.execute(f"CREATE EXTENSION IF NOT EXISTS {name} WITH SCHEMA public")


def migrate(session: Session, key: str, upto: int | None = None) -> int:
    """Apply every pending migration (up to `upto`), one transaction each; return the version."""
    target = LATEST_VERSION if upto is None else upto
    schema = session.schema
    with session.reading() as conn:
        version = check_identity(conn, schema, key)
    if version < target:
        ensure_extensions(session)
    while version < target:
        with session.transaction() as conn:  # the store's lock: one migrator at a time
            current = check_identity(conn, schema, key)
            if current > version:
                version = current
                continue
            if current == 0:
                conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
                conn.execute(
                    f"CREATE TABLE {schema}.cortex_store (application TEXT NOT NULL, "
                    "version INTEGER NOT NULL, store_key TEXT NOT NULL)"
                )
                conn.execute(f"INSERT INTO {schema}.cortex_store VALUES (%s, 0, %s)", (APPLICATION, key))
            MIGRATIONS[version](conn)
            version += 1
            conn.execute(f"UPDATE {schema}.cortex_store SET version = %s", (version,))
            failpoint("migrate.before_commit")
        failpoint("migrate.after_commit")
    return version
