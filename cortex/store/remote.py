"""Open a shared (team) store from a DSN, within a connect budget.

A `postgresql://` (or `postgres://`, or libpq `key=value`) DSN opens the PostgreSQL adapter's
store named by `key`; a `sqlite:///DIR` DSN opens a SQLite store file under DIR (one file per
key), for trying team memory out on one machine and for tests. Before the adapter connects (its
pool waits seconds for a server), a plain TCP connect to the DSN's host must succeed within the
budget, so an unreachable server costs recall and the hooks' worker at most that long.
"""

from __future__ import annotations

import hashlib
import socket
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

from cortex.core.model import Scope
from cortex.errors import StoreError
from cortex.store.open import open_store
from cortex.store.port import StoreAdmin

SQLITE_PREFIX = "sqlite://"
DEFAULT_PG_PORT = 5432
_FIX = "check that the team's database server runs and that team_dsn / CORTEX_TEAM_DSN is right"


def kind_of(dsn: str) -> str:
    """The adapter a DSN names: `sqlite` or `postgres`."""
    return "sqlite" if dsn.strip().lower().startswith(SQLITE_PREFIX) else "postgres"


def describe(dsn: str) -> str:
    """The DSN without its password, for messages and `cortex doctor`."""
    text = dsn.strip()
    if kind_of(text) == "sqlite":
        return text
    if "://" in text:
        parts = urlsplit(text)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
        user = f"{unquote(parts.username)}@" if parts.username else ""
        return f"{parts.scheme}://{user}{host}{port}{parts.path}"
    return " ".join(w for w in text.split() if not w.lower().startswith("password="))


def _endpoints(dsn: str) -> list[tuple[str, int]]:
    """(host, port) pairs a PostgreSQL DSN names; a Unix socket is (directory, port)."""
    text = dsn.strip()
    if "://" in text:
        parts = urlsplit(text)
        hosts = [h for h in (parts.netloc.rsplit("@", 1)[-1]).split(",") if h]
        out = []
        for h in hosts:
            host, _, port = h.partition(":") if not h.startswith("[") else (h, "", "")
            out.append((unquote(host), int(port) if port.isdigit() else DEFAULT_PG_PORT))
        return out
    words = dict(w.split("=", 1) for w in text.split() if "=" in w)
    host = words.get("host") or words.get("hostaddr") or ""
    port = words.get("port", "")
    return [(h, int(port) if port.isdigit() else DEFAULT_PG_PORT) for h in host.split(",") if h]


def probe(dsn: str, budget_s: float) -> str | None:
    """None when the DSN's server accepts a connection within `budget_s`, else why not."""
    if kind_of(dsn) == "sqlite":
        folder = Path(dsn.strip()[len(SQLITE_PREFIX) :])
        return None if folder.is_dir() else f"no directory {folder}"
    deadline = time.monotonic() + budget_s
    problems = []
    for host, port in _endpoints(dsn) or [("", DEFAULT_PG_PORT)]:
        left = deadline - time.monotonic()
        if left <= 0:
            problems.append("no answer within the connect budget")
            break
        try:
            if not host or host.startswith("/"):
                sockets = host or "/var/run/postgresql"
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                    sock.settimeout(left)
                    sock.connect(f"{sockets}/.s.PGSQL.{port}")
            else:
                socket.create_connection((host, port), timeout=left).close()
            return None
        except OSError as exc:
            problems.append(f"{host or 'local socket'}:{port}: {exc.strerror or exc}")
    return "; ".join(problems) or "no server named"


def store_key_path(dsn: str, key: str) -> Path:
    """The path the adapter opens for `key`: a file under the DSN's directory for SQLite, the key
    itself (the adapter derives its schema from it) for PostgreSQL."""
    if kind_of(dsn) == "sqlite":
        name = hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]
        return Path(dsn.strip()[len(SQLITE_PREFIX) :]) / f"team-{name}.db"
    return Path(key)


def open_shared(scope: Scope, dsn: str, key: str, *, budget_s: float) -> StoreAdmin:
    """The store `key` on the server `dsn` names; StoreError when it cannot be reached in time."""
    why = probe(dsn, budget_s)
    if why is not None:
        raise StoreError(f"the team store is unreachable ({describe(dsn)}): {why}", _FIX)
    kind = kind_of(dsn)
    path = store_key_path(dsn, key)
    return open_store(scope, path, kind=kind, dsn=dsn.strip() if kind == "postgres" else None)
