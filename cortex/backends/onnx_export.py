"""Export the embedding model to ONNX once: verified, atomic, under a lock. Writes files."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import secrets
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

from cortex.backends import bert_graph, bert_weights
from cortex.backends.model_locate import (
    MINILM_SHA256,
    ModelFiles,
    ModelLocation,
    model_label,
    read_model_files,
    read_model_key,
    read_sha256,
)
from cortex.backends.onnx_embed import (
    MANIFEST_FILE,
    ONNX_FILE,
    PROBE_HEAD_DIMS,
    PROBE_TEXT,
    TOKENIZER_FILE,
    ExportManifest,
    export_dir,
    load_onnx_embedder,
    read_export_status,
    read_manifest,
    read_recorded_key,
    render_manifest,
)
from cortex.errors import ModelError

EXPORT_MODULES = ("onnxruntime", "tokenizers")
LOCAL_EXTRA_FIX = "pip install 'cortex-memory[local]'"
MIN_VERIFY_COSINE = 0.9999
LOCK_POLL_S = 0.5
_VERIFY_TEXTS = (
    PROBE_TEXT,
    "x",
    "def plan_briefing(memories: list[Memory]) -> str:  # ünïcödé ✓",
    " ".join(["a long text that the tokenizer has to truncate"] * 80),
)

Progress = Callable[[str], None]


def ensure_onnx_export(model: ModelLocation, data_dir: Path, progress: Progress | None = None) -> Path:
    """Return the directory of a verified ONNX export of `model`, exporting it first if needed."""
    files = read_model_files(model)
    key = read_model_key(model, known=lambda w: read_recorded_key(data_dir, w))
    target = export_dir(data_dir, key)
    if _is_usable(target, files):
        with contextlib.suppress(OSError):  # only spares later hashing; a read-only dir is fine
            _refresh_source_stat(target, files)
        return target
    missing = [m for m in EXPORT_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise ModelError(
            f"preparing the embedding model for onnxruntime needs {', '.join(missing)}, not installed",
            fix=LOCAL_EXTRA_FIX,
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with _exclusive_lock(target.parent / f".{target.name}.lock"):
            # Another process may have finished the export while this one waited for the lock.
            if not _is_usable(target, files):
                _export_locked(target, files, key, model_label(key, model), progress)
    except ModelError:
        raise
    except Exception as exc:
        raise ModelError(
            f"preparing {files.directory} for onnxruntime in {target.parent} failed "
            f"({type(exc).__name__}: {exc})",
            fix=f"check free space and permissions there and that {LOCAL_EXTRA_FIX} is complete; "
            "until it is ready, recall searches by keywords (or through sentence-transformers where "
            "that is installed)",
        ) from exc
    return target


def _export_locked(target: Path, files: ModelFiles, key: str, label: str, progress: Progress | None) -> None:
    for leftover in target.parent.glob(f".{target.name}.*-*"):  # from killed exporters
        shutil.rmtree(leftover, ignore_errors=True)
    _say(progress, f"preparing {label} for onnxruntime (once: its weights, graph and tokenizer)")
    tmp = target.parent / f".{target.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        _build_export(tmp, files, key)
        _publish(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _say(progress, f"model ready for onnxruntime at {target}")


def _say(progress: Progress | None, message: str) -> None:
    if progress is not None:
        progress(message)


def _is_usable(target: Path, files: ModelFiles) -> bool:
    status = read_export_status(target, files)
    if status.state != "ready":
        return False
    try:
        load_onnx_embedder(status)
    except ModelError:
        return False
    return True


def _refresh_source_stat(target: Path, files: ModelFiles) -> None:
    # Same bytes found at a new path or mtime (reinstall): record it so later checks skip hashing.
    manifest = read_manifest(target)
    st = files.weights.stat()
    current = (str(files.weights.resolve()), st.st_size, st.st_mtime_ns)
    if (manifest.source_weights, manifest.source_size, manifest.source_mtime_ns) == current:
        return
    updated = replace(manifest, source_weights=current[0], source_size=current[1], source_mtime_ns=current[2])
    _write_manifest(target, updated)


def _write_manifest(directory: Path, manifest: ExportManifest) -> None:
    tmp = directory / f".{MANIFEST_FILE}.{os.getpid()}-{secrets.token_hex(4)}"
    tmp.write_text(render_manifest(manifest), encoding="utf-8")
    os.replace(tmp, directory / MANIFEST_FILE)


@contextlib.contextmanager
def _exclusive_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock on `path` (flock on POSIX, msvcrt on Windows)."""
    with path.open("a+b") as fh:
        if sys.platform == "win32":
            import msvcrt

            while True:
                try:
                    fh.seek(0)
                    msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)
                    break
                except OSError:
                    time.sleep(LOCK_POLL_S)
            try:
                yield
            finally:
                fh.seek(0)
                msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _publish(tmp: Path, target: Path) -> None:
    # A directory cannot be renamed over a non-empty one: move the old export aside first.
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}-{secrets.token_hex(4)}")
        os.replace(target, old)
    try:
        os.replace(tmp, target)
    except OSError:
        if not (target / MANIFEST_FILE).is_file():
            raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def _build_export(tmp: Path, files: ModelFiles, key: str) -> None:
    """Place the graph and the weights, copy the tokenizer, record the manifest, then check the
    graph on onnxruntime against the same model computed in numpy."""
    import numpy as np
    import onnxruntime
    import tokenizers

    tokenizer_src = files.directory / TOKENIZER_FILE
    if not tokenizer_src.is_file():
        raise ModelError(
            f"{files.directory} has no {TOKENIZER_FILE}, which the ONNX path needs",
            fix="use a model directory saved by a recent sentence-transformers or transformers",
        )
    shape = bert_weights.read_bert_shape(files.directory)
    source_sha = read_sha256(files.weights)
    tmp.mkdir(parents=True)
    _link_or_copy(files.directory / bert_weights.SAFETENSORS_FILE, tmp / bert_weights.SAFETENSORS_FILE)
    weights = bert_weights.read_weights(tmp)
    (tmp / ONNX_FILE).write_bytes(_graph_for(files, source_sha))
    shutil.copyfile(tokenizer_src, tmp / TOKENIZER_FILE)
    for extra in ("sentence_bert_config.json", "config.json"):
        if (files.directory / extra).is_file():
            shutil.copyfile(files.directory / extra, tmp / extra)
    tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_src))
    tokenizer.no_padding()
    tokenizer.enable_truncation(files.max_seq_length)
    rows = []
    for text in _VERIFY_TEXTS:
        enc = tokenizer.encode(text)
        columns = (enc.ids, enc.attention_mask, enc.type_ids)
        ids, mask, types = (np.array([v], dtype=np.int64) for v in columns)
        rows.append(bert_weights.reference_embed(weights, shape, ids, mask, types))
    reference = np.concatenate(rows)
    del weights  # the memory map of the weights

    st = files.weights.stat()
    listed = sorted(p for p in tmp.iterdir() if p.is_file())
    manifest = ExportManifest(
        key=key,
        dim=int(reference.shape[1]),
        max_seq_length=files.max_seq_length,
        inputs=bert_graph.INPUT_NAMES,
        opset=bert_graph.OPSET,
        source_weights=str(files.weights.resolve()),
        source_sha256=source_sha,
        source_size=st.st_size,
        source_mtime_ns=st.st_mtime_ns,
        files=tuple((p.name, p.stat().st_size) for p in listed),
        tools=tuple((m.__name__, str(getattr(m, "__version__", "?"))) for m in (onnxruntime, tokenizers, np)),
        probe_head=tuple(float(x) for x in reference[0, :PROBE_HEAD_DIMS]),
    )
    _write_manifest(tmp, manifest)
    embedder = load_onnx_embedder(read_export_status(tmp, files))
    cosines = (embedder.embed_documents(list(_VERIFY_TEXTS)) * reference).sum(axis=1)
    if float(cosines.min()) < MIN_VERIFY_COSINE:
        raise ModelError(
            f"the ONNX graph for {files.directory} does not reproduce the model "
            f"(cosine {float(cosines.min()):.6f})",
            fix="report this with `cortex doctor` output",
        )


def _graph_for(files: ModelFiles, source_sha: str) -> bytes:
    """The shipped graph for all-MiniLM-L6-v2's exact weights; otherwise one built with `onnx`."""
    if source_sha == MINILM_SHA256:
        return bert_graph.packaged_graph_path().read_bytes()
    if importlib.util.find_spec("onnx") is None:
        raise ModelError(
            f"{files.directory} is not all-MiniLM-L6-v2: building its ONNX graph needs the onnx package",
            fix="pip install onnx (or unset CORTEX_MODEL_PATH to use all-MiniLM-L6-v2)",
        )
    return bert_graph.graph_bytes(files.directory)


def _link_or_copy(src: Path, dst: Path) -> None:
    """A hard link when `src` is on the same file system (no second copy of 90 MB), else a copy."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)
