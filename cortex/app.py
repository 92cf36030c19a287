"""The cortex context: paths, settings, clock, stores and embedders shared by every use case."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cortex.config import Settings, load_settings
from cortex.core.model import Memory, Scope
from cortex.errors import CortexError, NotFound, StoreError
from cortex.paths import Paths, ensure_store_dir, resolve_paths
from cortex.store.sqlite.store import Store

log = logging.getLogger("cortex.app")

# Optional backends by config name -> "module:function(cx, query=bool) -> EmbedderChoice".
EMBEDDER_BACKENDS: dict[str, str] = {"voyage": "cortex.backends.voyage:load_voyage_embedder"}
RERANKER_BACKENDS: dict[str, str] = {"default": "cortex.backends.rerank:load_reranker"}

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


@dataclass(frozen=True, slots=True)
class EmbedderChoice:
    """An embedder (or None) and, in words, why this one."""

    embedder: Any
    note: str
    fix: str = ""


class Cortex:
    """Everything a use case needs for one project; opens stores and models lazily."""

    def __init__(
        self,
        paths: Paths,
        settings: Settings | None = None,
        *,
        clock: Callable[[], datetime] = utcnow,
        actor: str = "cli",
        query_embedder: EmbedderChoice | None = None,
        bulk_embedder: EmbedderChoice | None = None,
        reranker: Any = None,
    ) -> None:
        self.paths = paths
        self.settings = settings if settings is not None else load_settings(paths)
        self.clock = clock
        self.actor = actor
        self._stores: dict[Scope, Store] = {}
        self._query_embedder = query_embedder
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

    def store(self, scope: Scope, *, create: bool = True) -> Store | None:
        """The open store for `scope`; creates it only when `create` (writes), else None if absent."""
        if scope in self._stores:
            return self._stores[scope]
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
            opened = Store.open(path, scope)
        except StoreError as exc:
            # Reads go on from a read-only directory or a full disk (SQLite cannot make its -shm).
            if create or not ("read-only" in exc.message or "is full" in exc.message):
                raise
            opened = Store.open(path, scope, readonly=True)
        self._stores[scope] = opened
        return opened

    def write_store(self, scope: Scope) -> Store:
        """The store a write goes to (created on first write)."""
        store = self.store(scope, create=True)
        assert store is not None
        return store

    def read_stores(self, scope: str = "all") -> list[Store]:
        """Existing stores to read for a scope filter: project, global or all (both merged)."""
        wanted = {"project": [Scope.PROJECT], "global": [Scope.GLOBAL]}.get(
            scope, [Scope.PROJECT, Scope.GLOBAL]
        )
        out = []
        for s in wanted:
            store = self.store(s, create=False)
            if store is not None:
                out.append(store)
        return out

    def close(self) -> None:
        """Close every store this context opened."""
        for store in self._stores.values():
            store.close()
        self._stores.clear()

    def __enter__(self) -> Cortex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- models ----------------------------------------------------------------------------
    def query_embedder(self) -> EmbedderChoice:
        """The embedder for queries: the ONNX export, else sentence-transformers, else none."""
        if self._query_embedder is None:
            self._query_embedder = self._load_embedder(query=True)
        return self._query_embedder

    def bulk_embedder(self) -> EmbedderChoice:
        """The embedder for many documents: sentence-transformers, else the ONNX export, else none."""
        if self._bulk_embedder is None:
            self._bulk_embedder = self._load_embedder(query=False)
        return self._bulk_embedder

    def _load_embedder(self, *, query: bool) -> EmbedderChoice:
        if self.settings.embedder == "none":
            return EmbedderChoice(None, "embeddings disabled in config (embedder = none)")
        if self.settings.embedder != "local":
            return self._load_plugin_backend(EMBEDDER_BACKENDS, self.settings.embedder, query=query)
        try:
            from cortex.backends import local as embed

            model_path = Path(self.settings.model_path) if self.settings.model_path else None
            loader = embed.load_query_embedder if query else embed.load_bulk_embedder
            choice = loader(model_path, self.paths.home)
            return EmbedderChoice(choice.embedder, choice.note)
        except CortexError as exc:  # a broken model must not break keyword recall
            log.warning("embedder unavailable: %s", exc.message)
            return EmbedderChoice(None, f"no embedder: {exc.message}", exc.fix)
        except Exception as exc:
            log.warning("embedder unavailable: %s", exc)
            return EmbedderChoice(None, f"no embedder: {type(exc).__name__}: {exc}")

    def embedder_key(self) -> str | None:
        """The vector-index key of the configured embedder, found without loading a model."""
        if self._query_embedder is not None and self._query_embedder.embedder is not None:
            return str(self._query_embedder.embedder.key)
        if self.settings.embedder == "none":
            return None
        if self.settings.embedder == "voyage":
            from cortex.backends import voyage

            if not voyage.voyage_unavailable():
                return voyage.voyage_key(self.settings.voyage_model)
            # Voyage configured but unusable: recall falls back to the local model's index.
        try:
            from cortex.backends import local as embed

            model_path = Path(self.settings.model_path) if self.settings.model_path else None
            key = embed.describe_embedders(model_path, self.paths.home).get("key")
            return str(key) if key else None
        except Exception:
            return None

    def reranker(self) -> Any:
        """The optional cross-encoder reranker (None when not installed or not wanted)."""
        if self._reranker is None:
            choice = self._load_plugin_backend(RERANKER_BACKENDS, "default", query=True)
            self._reranker = choice
        return self._reranker.embedder if isinstance(self._reranker, EmbedderChoice) else self._reranker

    def _load_plugin_backend(self, table: dict[str, str], name: str, *, query: bool) -> EmbedderChoice:
        """Load an optional backend named in `table` ("module:function"), lazily and fail-soft."""
        target = table.get(name)
        if target is None:
            return EmbedderChoice(None, f"unknown backend {name!r}; known: {', '.join(sorted(table))}")
        module_name, func_name = target.split(":")
        try:
            import importlib

            loader = getattr(importlib.import_module(module_name), func_name)
            result = loader(self, query=query)
        except ImportError as exc:
            return EmbedderChoice(None, f"{name} backend unavailable: {exc}")
        except Exception as exc:
            log.warning("%s backend failed to load: %s", name, exc)
            return EmbedderChoice(None, f"{name} backend failed: {exc}")
        return result if isinstance(result, EmbedderChoice) else EmbedderChoice(result, name)

    # -- lookups ---------------------------------------------------------------------------
    def find(self, ref: str) -> tuple[Store, Memory]:
        """A memory by id or unique id prefix, from either store."""
        ref = ref.strip().lower()
        matches: list[tuple[Store, Memory]] = []
        for store in self.read_stores("all"):
            exact = store.get(ref)
            if exact is not None:
                return store, exact
            matches.extend((store, m) for m in store.find_prefix(ref))
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
    def writing(self, scope: Scope) -> Iterator[Store]:
        """A write transaction on one store."""
        store = self.write_store(scope)
        with store.transaction():
            yield store
