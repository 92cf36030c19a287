"""The cortex context: paths, settings, clock, stores and embedders shared by every use case."""

from __future__ import annotations

import contextlib
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from cortex.backends import choose
from cortex.backends.port import Choice, Embedder, Reranker
from cortex.config import Settings, load_settings
from cortex.core.model import Memory, Scope, ScopeFilter
from cortex.errors import CortexError, InputError, NotFound, StoreError
from cortex.paths import Paths, ensure_store_dir, resolve_paths
from cortex.store.open import open_store
from cortex.store.port import StoreAdmin

log = logging.getLogger("cortex.app")

TEAM_RETRY_S = 60.0  # an unreachable team store is tried again after this long, not on every call
TEAM_RECHECK_S = 5.0  # a reachable one is probed again before use after this long
ID_BYTES = 5  # 10 hex characters: short enough to type, collisions need ~10^6 memories to matter
MIN_ID_GUESS_CHARS = 6  # shorter hex words ("cafe", "2024") are as likely to be search text


def utcnow() -> datetime:
    """The current time in UTC (the default clock)."""
    return datetime.now(UTC)


def new_id() -> str:
    """A fresh memory id (random hex)."""
    return secrets.token_hex(ID_BYTES)


def looks_like_id(ref: str) -> bool:
    """True for text that can only be meant as a memory id: 6+ hex characters with a digit."""
    text = ref.strip().lower()
    return (
        MIN_ID_GUESS_CHARS <= len(text) <= 2 * ID_BYTES
        and all(c in "0123456789abcdef" for c in text)
        and any(c.isdigit() for c in text)
    )


class TeamLink(NamedTuple):
    """The team store as this context found it: configured? under which key? open, or why not."""

    configured: bool
    key: str | None  # the repository's identity (normalised remote URL)
    store: StoreAdmin | None
    note: str  # why there is no team store ("" when there is one, or none is configured)


def _connect_team(cx: Cortex) -> TeamLink:
    dsn = cx.settings.team_dsn.strip()
    if not dsn:
        return TeamLink(False, None, None, "")
    from cortex.core.team.rules import repo_identity
    from cortex.shell.git import read_remote_url
    from cortex.store.remote import open_shared

    key = repo_identity(read_remote_url(cx.paths.root))
    if key is None:
        return TeamLink(True, None, None, "no team store: this project has no git remote to name it by")
    try:
        store = open_shared(Scope.TEAM, dsn, key, budget_s=cx.settings.team_connect_ms / 1000)
    except CortexError as exc:
        log.info("team store not used: %s", exc.message)
        return TeamLink(True, key, None, exc.message)
    return TeamLink(True, key, store, "")


class _Loading:
    """One call run on a daemon thread; result() waits and returns its value or raises its error."""

    def __init__(self, call: Callable[[], Choice[Embedder]]) -> None:
        self._call = call
        self._value: Choice[Embedder] | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="cortex-load-embedder", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._call()
        except BaseException as exc:  # handed to the waiting caller, raised there
            self._error = exc

    def result(self) -> Choice[Embedder]:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._value is not None
        return self._value


class Cortex:
    """Everything a use case needs for one project; opens stores and models lazily."""

    def __init__(
        self,
        paths: Paths,
        settings: Settings | None = None,
        *,
        clock: Callable[[], datetime] = utcnow,
        actor: str = "cli",
        query_embedder: Choice[Embedder] | None = None,
        bulk_embedder: Choice[Embedder] | None = None,
        reranker: Choice[Reranker] | None = None,
    ) -> None:
        self.paths = paths
        self.settings = settings if settings is not None else load_settings(paths)
        self.clock = clock
        self.actor = actor
        self._stores: dict[Scope, StoreAdmin] = {}
        self._team: TeamLink | None = None
        self._team_tried = 0.0
        self._query_embedder = query_embedder
        self._query_loading: _Loading | None = None
        self._bulk_embedder = bulk_embedder
        self._reranker = reranker

    @classmethod
    def for_cwd(cls, cwd: Path | None = None, **kwargs: Any) -> Cortex:
        """A context for the project that contains `cwd`."""
        return cls(resolve_paths(cwd), **kwargs)

    def now(self) -> datetime:
        """The context's clock."""
        return self.clock()

    @property
    def project_name(self) -> str:
        """The project root's folder name (part of embedded text)."""
        return self.paths.project_name

    # -- stores ----------------------------------------------------------------------------
    def store_path(self, scope: Scope) -> Path:
        """Where the store of `scope` lives (it may not exist yet)."""
        return self.paths.project_db if scope == Scope.PROJECT else self.paths.global_db

    def store(self, scope: Scope, *, create: bool = True) -> StoreAdmin | None:
        """The open store for `scope`; creates it only when `create` (writes), else None if absent."""
        if scope in self._stores:
            return self._stores[scope]
        if scope is Scope.TEAM:  # not a file of this machine: `team_store()` opens it
            if create:
                raise InputError(
                    "memories reach the team store only by sharing", "`cortex share ID` a project memory"
                )
            return self.team_store()
        path = self.store_path(scope)
        if not path.exists():
            if not create:
                return None
            try:
                if scope == Scope.PROJECT:
                    ensure_store_dir(self.paths)
                else:
                    path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"cannot create the {scope.value} store at {path}: {exc.strerror}",
                    "make the directory writable"
                    + (
                        ", or set CORTEX_HOME to a writable directory"
                        if scope == Scope.GLOBAL
                        else ", or keep this memory in the global store (`--global`)"
                    ),
                ) from exc
        try:
            opened = open_store(scope, path)
        except StoreError as exc:
            # Reads go on from a read-only directory or a full disk (SQLite cannot make its -shm).
            if create or not ("read-only" in exc.message or "is full" in exc.message):
                raise
            opened = open_store(scope, path, readonly=True)
        self._stores[scope] = opened
        return opened

    def write_store(self, scope: Scope) -> StoreAdmin:
        """The store a write goes to (created on first write)."""
        store = self.store(scope, create=True)
        assert store is not None
        return store

    def read_stores(self, scope: ScopeFilter = ScopeFilter.ALL) -> list[StoreAdmin]:
        """Existing stores to read for a scope filter: project, global or all (both merged)."""
        out = []
        for s in ScopeFilter(scope).scopes():
            store = self.store(s, create=False)
            if store is not None:
                out.append(store)
        return out

    def team(self) -> TeamLink:
        """The team store link, tried within the `team_connect_ms` budget: once per context, and
        again after TEAM_RETRY_S when it was unreachable (a long-lived MCP server sees it return)."""
        stale = (
            self._team is not None
            and self._team.configured
            and self._team.store is None
            and time.monotonic() - self._team_tried > TEAM_RETRY_S
        )
        if self._team is None or stale:
            self._team_tried = time.monotonic()
            self._team = _connect_team(self)
        elif self._team.store is not None and time.monotonic() - self._team_tried > TEAM_RECHECK_S:
            # An open store whose server went away would make the driver wait seconds for a
            # connection: look again within the budget first (a TCP connect, ~1 ms on a LAN).
            from cortex.store.remote import describe, probe

            self._team_tried = time.monotonic()
            why = probe(self.settings.team_dsn, self.settings.team_connect_ms / 1000)
            if why is not None:
                self.drop_team(f"{describe(self.settings.team_dsn)}: {why}")
        return self._team

    def team_store(self) -> StoreAdmin | None:
        """The team store when one is configured and reachable, else None (`team().note` says why)."""
        return self.team().store

    def drop_team(self, why: str) -> None:
        """Go on without the team store (it failed mid-use): local-only from here, with a note."""
        link = self._team or TeamLink(True, None, None, "")
        if link.store is not None:
            with contextlib.suppress(Exception):
                link.store.close()
        self._team_tried = time.monotonic()
        self._team = TeamLink(link.configured, link.key, None, f"team store unreachable: {why}")

    def close(self) -> None:
        """Close every store this context opened."""
        for store in self._stores.values():
            store.close()
        self._stores.clear()
        if self._team is not None and self._team.store is not None:
            with contextlib.suppress(Exception):
                self._team.store.close()
        self._team = None

    def __enter__(self) -> Cortex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- models ----------------------------------------------------------------------------
    # Which backend, and why, is decided in backends.choose; the context only keeps what it chose.
    def query_embedder(self) -> Choice[Embedder]:
        """The embedder for queries, chosen on first use: cheap to load before fast per text."""
        if self._query_embedder is None and self._query_loading is not None:
            self._query_embedder = self._query_loading.result()
            self._query_loading = None
        if self._query_embedder is None:
            self._query_embedder = choose.choose_embedder(self.settings, self.paths, choose.Purpose.QUERY)
        return self._query_embedder

    def start_loading_query_embedder(self) -> None:
        """Begin loading the query embedder on a thread, for a caller that will embed a query soon.

        Building an ONNX session runs outside the interpreter lock, so a cold `cortex recall`
        opens its stores and runs its keyword search meanwhile; query_embedder() waits for it.
        Only when the load is cheap (an ONNX export): a slow first load stays in plain sight."""
        if self._query_embedder is not None or self._query_loading is not None:
            return
        if choose.query_embedder_is_cheap(self.settings, self.paths):
            self._query_loading = _Loading(
                lambda: choose.choose_embedder(self.settings, self.paths, choose.Purpose.QUERY)
            )

    def bulk_embedder(self) -> Choice[Embedder]:
        """The embedder for many documents, chosen on first use: fast per text before cheap to load."""
        if self._bulk_embedder is None:
            self._bulk_embedder = choose.choose_embedder(self.settings, self.paths, choose.Purpose.BULK)
        return self._bulk_embedder

    def query_embedder_ready(self) -> bool:
        """Whether query_embedder() is cheap here (chosen already, or an ONNX export), never loading."""
        if self._query_embedder is not None:
            return self._query_embedder.backend is not None
        return choose.query_embedder_is_cheap(self.settings, self.paths)

    def embedder_key(self) -> str | None:
        """The vector-index key of the configured embedder, found without loading a model."""
        if self._query_embedder is not None and self._query_embedder.backend is not None:
            return self._query_embedder.backend.key
        return choose.embedder_key(self.settings, self.paths)

    def reranker(self) -> Reranker | None:
        """The optional cross-encoder reranker (None when not installed or not wanted)."""
        if self._reranker is None:
            self._reranker = choose.choose_reranker(self.settings, self.paths)
        return self._reranker.backend

    # -- lookups ---------------------------------------------------------------------------
    def find(self, ref: str) -> tuple[StoreAdmin, Memory]:
        """A memory by id or unique id prefix, from either store."""
        ref = ref.strip().lower()
        matches: list[tuple[StoreAdmin, Memory]] = []
        for store in self.read_stores():
            exact = store.get(ref)
            if exact is not None:
                return store, exact
            matches.extend((store, m) for m in store.find_prefix(ref))
        if not matches and self.settings.team_dsn:  # a teammate's memory, shown by recall
            team = self.team_store()
            if team is not None:
                exact = team.get(ref)
                if exact is not None:
                    return team, exact
                matches.extend((team, m) for m in team.find_prefix(ref))
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise NotFound(
                f"no memory with id {ref!r} in the project or global store",
                "find the id with `cortex recall <topic>` (each result shows its id)",
            )
        shown = ", ".join(m.id for _, m in matches[:5])
        raise NotFound(f"id prefix {ref!r} is ambiguous ({shown})", "type more characters of the id")

    @contextmanager
    def writing(self, scope: Scope) -> Iterator[StoreAdmin]:
        """A write transaction on one store."""
        store = self.write_store(scope)
        with store.transaction():
            yield store
