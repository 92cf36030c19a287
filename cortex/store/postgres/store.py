"""One cortex store in one schema of a PostgreSQL database: the port's `StoreAdmin` over SQL.

The methods live with the tables they touch, as in the SQLite adapter: memories (`memories`),
the journal, edges, cursors and meta (`records`), vectors (`vectors`), and upkeep
(`maintenance`, `checkpoint`); this class opens the store and holds the session they share.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from cortex.core.model import Scope
from cortex.errors import StoreError
from cortex.store.port import Checkpoint
from cortex.store.postgres import checkpoint, migrations
from cortex.store.postgres.anchors import AnchorRows
from cortex.store.postgres.connection import Session, namespace, redacted, resolve_dsn, schema_name
from cortex.store.postgres.maintenance import Maintenance
from cortex.store.postgres.memories import MemoryTable
from cortex.store.postgres.vectors import VectorMethods


class Store(MemoryTable, VectorMethods, AnchorRows, Maintenance):
    """One PostgreSQL store (its namespace's schema) and every query cortex runs on it."""

    def __init__(self, session: Session, scope: Scope, path: Path) -> None:
        self.session = session
        self.scope = scope
        self._path = path
        self.key = namespace(path)

    @property
    def path(self) -> Path:
        """The store's namespace, as it was opened."""
        return self._path

    @property
    def readonly(self) -> bool:
        """Opened for reading only: every write transaction is READ ONLY."""
        return self.session.readonly

    @property
    def vectors(self) -> bool:
        """pgvector is installed in the database (migrations create it)."""
        return True

    @property
    def vector_note(self) -> str:
        """How vectors are searched here."""
        return f"pgvector HNSW (cosine) in PostgreSQL ({redacted(self.session.dsn)})"

    @classmethod
    def open(cls, path: Path, scope: Scope, *, readonly: bool = False, dsn: str | None = None) -> Store:
        """Open (and migrate, unless read-only) the store of namespace `path`."""
        key = namespace(path)
        session = Session(resolve_dsn(path, dsn), schema_name(key), readonly=readonly)
        if readonly:
            with session.reading() as conn:
                version = migrations.check_identity(conn, session.schema, key)
            if version != migrations.LATEST_VERSION:
                raise StoreError(
                    f"the store {key!r} needs creating or a schema upgrade but was opened read-only",
                    "open it once for writing (`cortex status`)",
                )
        else:
            migrations.migrate(session, key)
        return cls(session, scope, path)

    def close(self) -> None:
        """Nothing to release: connections go back to the process's pool after each use."""

    @contextmanager
    def transaction(self) -> Iterator[Store]:
        """One write transaction under the store's lock (as SQLite's BEGIN IMMEDIATE)."""
        with self.session.transaction():
            yield self

    def write_checkpoint(self, *, reason: str, run: str, at: datetime) -> Checkpoint:
        """Snapshot the store in its database, with the digest of exactly what was saved."""
        return checkpoint.write_checkpoint(
            self.session, self._path, reason=reason, run=run, at=at, digest=lambda: self.state_digest().digest
        )

    def restore_checkpoint(self, cp: Checkpoint) -> None:
        """Replace the store's content with a checkpoint's, in one transaction."""
        checkpoint.restore_checkpoint(self.session, cp)
