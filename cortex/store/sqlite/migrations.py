"""Numbered schema migrations, each applied in its own transaction on every open."""

from __future__ import annotations

from collections.abc import Callable

from cortex.errors import NotACortexStore
from cortex.shell.failpoints import failpoint
from cortex.store.sqlite import anchors, briefing_rows, fts, vector_codes
from cortex.store.sqlite.connection import APPLICATION_ID, Connection, transaction

READ_RECORDS_SCHEMA = (
    "CREATE TABLE read_records (record TEXT PRIMARY KEY, first_read TEXT NOT NULL) WITHOUT ROWID"
)


def m001_initial(conn: Connection) -> None:
    """Memories, edges, journal, FTS5 (external content + triggers), cursors, vector bookkeeping."""
    conn.execute(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID
        """
    )
    conn.execute(
        """
        CREATE TABLE memories (
            n INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            content TEXT NOT NULL,
            summary TEXT NOT NULL DEFAULT '',
            type TEXT NOT NULL,
            scope TEXT NOT NULL,
            confidence REAL NOT NULL,
            priority INTEGER NOT NULL,
            pinned INTEGER NOT NULL DEFAULT 0,
            source_session TEXT,
            source_offset INTEGER,
            source_branch TEXT,
            source_commit TEXT,
            source_files TEXT NOT NULL DEFAULT '[]',
            tags TEXT NOT NULL DEFAULT '[]',
            access_count INTEGER NOT NULL DEFAULT 0,
            last_accessed TEXT,
            created TEXT NOT NULL,
            updated TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'active',
            content_hash TEXT NOT NULL,
            low_since TEXT,
            status_changed TEXT,
            centrality REAL NOT NULL DEFAULT 0
        )
        """
    )
    # One live memory per content hash; superseded/pruned rows keep their history.
    conn.execute(
        "CREATE UNIQUE INDEX memories_live_hash ON memories(content_hash) "
        "WHERE status IN ('active', 'archived')"
    )
    conn.execute("CREATE INDEX memories_status_type ON memories(status, type)")
    conn.execute("CREATE INDEX memories_created ON memories(created)")
    conn.execute(
        """
        CREATE TABLE edges (
            source TEXT NOT NULL,
            target TEXT NOT NULL,
            type TEXT NOT NULL,
            strength REAL NOT NULL DEFAULT 0.5,
            status TEXT NOT NULL DEFAULT 'active',
            created TEXT NOT NULL,
            updated TEXT NOT NULL,
            PRIMARY KEY (source, target, type)
        ) WITHOUT ROWID
        """
    )
    conn.execute("CREATE INDEX edges_target ON edges(target)")
    conn.execute(
        """
        CREATE TABLE journal (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            at TEXT NOT NULL,
            actor TEXT NOT NULL,
            op TEXT NOT NULL,
            memory_id TEXT,
            payload TEXT NOT NULL DEFAULT '{}'
        )
        """
    )
    conn.execute("CREATE INDEX journal_memory ON journal(memory_id)")
    for statement in fts.SCHEMA_1:
        conn.execute(statement)
    conn.execute(
        """
        CREATE TABLE cursors (
            session_id TEXT PRIMARY KEY,
            transcript_path TEXT NOT NULL,
            byte_offset INTEGER NOT NULL DEFAULT 0,
            last_uuid TEXT,
            malformed INTEGER NOT NULL DEFAULT 0,
            closed INTEGER NOT NULL DEFAULT 0,
            updated TEXT NOT NULL
        ) WITHOUT ROWID
        """
    )
    conn.execute(
        """
        CREATE TABLE vec_indexes (
            name TEXT PRIMARY KEY,
            embedder_key TEXT NOT NULL UNIQUE,
            dim INTEGER NOT NULL,
            created TEXT NOT NULL
        ) WITHOUT ROWID
        """
    )
    conn.execute(
        """
        CREATE TABLE embedded (
            n INTEGER NOT NULL,
            index_name TEXT NOT NULL,
            PRIMARY KEY (n, index_name)
        ) WITHOUT ROWID
        """
    )


def m002_briefing_indexes(conn: Connection) -> None:
    """Indexes that let the briefing read its top memories in rank order, and the file table."""
    for statement in briefing_rows.SCHEMA_2:
        conn.execute(statement)


def m003_vector_codes(conn: Connection) -> None:
    """Binary codes of every vector index, for the search of large stores (`vector_codes`);
    without sqlite-vec here they are built at the index's next write."""
    for (table,) in conn.execute("SELECT name FROM vec_indexes").fetchall():
        if conn.vectors:
            vector_codes.backfill(conn, table)


def m004_anchors(conn: Connection) -> None:
    """Code anchors: per memory, what it saw of each file and symbol it names (`anchors`)."""
    for statement in anchors.SCHEMA_4:
        conn.execute(statement)


def m005_said_at(conn: Connection) -> None:
    """Which transcript record said each memory (`source_record`, its uuid) and when
    (`source_time`): what held, was replaced, and holds again in a later session is news; the
    same record read again (a resumed session copies the old records, uuids kept) is not.
    Older memories have neither."""
    conn.execute("ALTER TABLE memories ADD COLUMN source_time TEXT")
    conn.execute("ALTER TABLE memories ADD COLUMN source_record TEXT")


def m006_read_records(conn: Connection) -> None:
    """The transcript records capture has taken memories from (`read_records`, by uuid): a record
    read again (a resumed session's copy, an import of a session captured live) is no news."""
    conn.execute(READ_RECORDS_SCHEMA)


MIGRATIONS: tuple[Callable[[Connection], None], ...] = (
    m001_initial,
    m002_briefing_indexes,
    m003_vector_codes,
    m004_anchors,
    m005_said_at,
    m006_read_records,
)
LATEST_VERSION = len(MIGRATIONS)


def check_identity(conn: Connection) -> int:
    """Return the schema version of a cortex store; refuse foreign or newer files without writing."""
    # One statement, so one snapshot: read separately, a store another process is creating can
    # show its tables but not yet its application id, and look foreign.
    app_id, version, tables = conn.execute(
        "SELECT (SELECT application_id FROM pragma_application_id),"
        " (SELECT user_version FROM pragma_user_version),"
        " (SELECT count(*) FROM sqlite_master WHERE type = 'table')"
    ).fetchone()
    version = int(version)
    if app_id == 0 and not tables:
        return 0
    if app_id != APPLICATION_ID:
        raise NotACortexStore(
            f"{conn.path} is an SQLite database of another program, not a cortex store; "
            "cortex left it untouched",
            f"move it aside (mv {conn.path} {conn.path}.other); cortex then starts a new store there",
        )
    if version > LATEST_VERSION:
        raise NotACortexStore(
            f"{conn.path} was written by a newer cortex (schema {version}, this cortex knows "
            f"{LATEST_VERSION})",
            "upgrade cortex: pip install -U cortex-memory",
        )
    return version


def migrate(conn: Connection, upto: int | None = None) -> int:
    """Apply every pending migration (up to `upto`), one transaction each; return the new version."""
    target = LATEST_VERSION if upto is None else upto
    version = check_identity(conn)
    while version < target:
        step = MIGRATIONS[version]
        with transaction(conn):
            # Re-read inside the write lock: another process may have migrated meanwhile.
            current = check_identity(conn)
            if current > version:
                version = current
                continue
            step(conn)
            version += 1
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {version}")
            failpoint("migrate.before_commit")
        failpoint("migrate.after_commit")  # between two numbered migrations
    return version
