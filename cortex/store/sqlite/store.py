"""One cortex store in one SQLite file: the port's `MemoryStore` and `StoreAdmin` over SQL.

The methods live with the tables they touch: memories (`memories`), the journal, edges,
cursors and meta (`records`), vectors by memory id (`vector_store`), and whole-store upkeep
(`maintenance`); this class opens the file and holds the connection they share.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cortex.core.model import Scope
from cortex.errors import StoreError
from cortex.store.sqlite import connection as db
from cortex.store.sqlite import migrations
from cortex.store.sqlite.anchors import AnchorRows
from cortex.store.sqlite.briefing_rows import BriefingRows
from cortex.store.sqlite.maintenance import Maintenance
from cortex.store.sqlite.memories import MemoryTable
from cortex.store.sqlite.vector_store import VectorMethods


class Store(MemoryTable, VectorMethods, BriefingRows, AnchorRows, Maintenance):
    """One SQLite store (project or global) and every query cortex runs on it."""

    def __init__(self, conn: db.Connection, scope: Scope) -> None:
        self.conn = conn
        self.scope = scope

    @property
    def path(self) -> Path:
        """The store file."""
        return self.conn.path

    @property
    def readonly(self) -> bool:
        """Opened read-only (a read-only directory, a full disk): writes would fail."""
        return self.conn.readonly

    @property
    def vectors(self) -> bool:
        """Whether sqlite-vec is loaded in this store's connection."""
        return self.conn.vectors

    @property
    def vector_note(self) -> str:
        """Which SQLite driver serves vectors, or why none can."""
        return self.conn.driver.note

    @classmethod
    def open(cls, path: Path, scope: Scope, *, readonly: bool = False) -> Store:
        """Open (and migrate) a store; refuses corrupt or foreign files without writing to them."""
        conn = db.connect(path, readonly=readonly)
        try:
            # Identify the file before any pragma: switching a foreign database to WAL rewrites it.
            version = migrations.check_identity(conn)
            if readonly:
                if version != migrations.LATEST_VERSION:
                    raise StoreError(
                        f"{path} needs a schema upgrade but can only be opened read-only",
                        "make its directory writable and run `cortex status` once to upgrade it",
                    )
            else:
                db.apply_pragmas(conn)
                migrations.migrate(conn)
        except StoreError:
            conn.close()
            raise
        except Exception as exc:
            conn.close()
            raise db.translate(exc, path) from exc
        return cls(conn, scope)

    def close(self) -> None:
        """Close the store's connection."""
        self.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[Store]:
        """A short write transaction (BEGIN IMMEDIATE)."""
        with db.transaction(self.conn):
            yield self
