"""Export the embedding model to ONNX once: verified, atomic, under a lock. Writes files."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import secrets
import shutil
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from cortex.backends.model_locate import (
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
    OUTPUT_NAME,
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

OPSET = 18
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
EXPORT_MODULES = ("torch", "transformers", "onnx", "onnxscript", "onnxruntime", "tokenizers")
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
            f"exporting the embedding model to ONNX needs {', '.join(missing)}, not installed",
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
            f"exporting {files.directory} to ONNX in {target.parent} failed ({type(exc).__name__}: {exc})",
            fix=f"check free space and permissions there and that {LOCAL_EXTRA_FIX} is complete; "
            "queries use sentence-transformers until an export exists",
        ) from exc
    return target


def _export_locked(target: Path, files: ModelFiles, key: str, label: str, progress: Progress | None) -> None:
    for leftover in target.parent.glob(f".{target.name}.*-*"):  # from killed exporters
        shutil.rmtree(leftover, ignore_errors=True)
    _say(progress, f"exporting {label} to ONNX for fast queries (once)")
    tmp = target.parent / f".{target.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        _build_export(tmp, files, key)
        _publish(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _say(progress, f"ONNX export ready at {target}")


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


@contextlib.contextmanager
def _quiet_export() -> Iterator[None]:
    """Keep the exporters' warnings, log lines and progress bars off the user's terminal."""
    loggers = [logging.getLogger(n) for n in ("torch.onnx", "torch.export", "transformers")]
    levels = [lg.level for lg in loggers]
    with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
        warnings.simplefilter("ignore")
        for lg in loggers:
            lg.setLevel(logging.ERROR)
        try:
            yield
        finally:
            for lg, level in zip(loggers, levels, strict=True):
                lg.setLevel(level)


def _build_export(tmp: Path, files: ModelFiles, key: str) -> None:
    """Export, copy the tokenizer, record the manifest, then check ONNX matches torch."""
    import numpy as np
    import onnx
    import onnxruntime
    import onnxscript
    import tokenizers
    import torch
    import transformers

    tokenizer_src = files.directory / TOKENIZER_FILE
    if not tokenizer_src.is_file():
        raise ModelError(
            f"{files.directory} has no {TOKENIZER_FILE}, which the ONNX query path needs",
            fix="use a model directory saved by a recent sentence-transformers or transformers",
        )
    tmp.mkdir(parents=True)
    shutil.copyfile(tokenizer_src, tmp / TOKENIZER_FILE)
    for extra in ("sentence_bert_config.json", "config.json"):
        if (files.directory / extra).is_file():
            shutil.copyfile(files.directory / extra, tmp / extra)
    tokenizer = tokenizers.Tokenizer.from_file(str(tokenizer_src))
    tokenizer.no_padding()
    tokenizer.enable_truncation(files.max_seq_length)

    with _quiet_export():
        hf_logging: Any = transformers.logging  # untyped module: keep mypy's strict mode quiet
        hf_logging.disable_progress_bar()
        bert = transformers.AutoModel.from_pretrained(str(files.directory))
        encoder = _pooled_encoder(bert)
        sample = _tensors(tokenizer, ["export sample one", "a second, longer export sample"])
        batch = torch.export.Dim("batch")
        seq = torch.export.Dim("sequence", max=int(encoder.max_positions))
        axes = {name: {0: batch, 1: seq} for name in INPUT_NAMES}
        torch.onnx.export(
            encoder,
            tuple(sample[n] for n in INPUT_NAMES),
            str(tmp / ONNX_FILE),
            dynamo=True,
            external_data=True,
            opset_version=OPSET,
            input_names=list(INPUT_NAMES),
            output_names=[OUTPUT_NAME],
            dynamic_shapes=axes,
            verbose=False,
        )
        with torch.no_grad():
            rows = [encoder(*_tensors(tokenizer, [t]).values()) for t in _VERIFY_TEXTS]
        reference = np.concatenate([r.numpy() for r in rows]).astype(np.float32)

    st = files.weights.stat()
    listed = sorted(p for p in tmp.iterdir() if p.is_file())
    manifest = ExportManifest(
        key=key,
        dim=int(reference.shape[1]),
        max_seq_length=files.max_seq_length,
        inputs=INPUT_NAMES,
        opset=OPSET,
        source_weights=str(files.weights.resolve()),
        source_sha256=read_sha256(files.weights),
        source_size=st.st_size,
        source_mtime_ns=st.st_mtime_ns,
        files=tuple((p.name, p.stat().st_size) for p in listed),
        tools=tuple(
            (m.__name__, str(getattr(m, "__version__", "?")))
            for m in (torch, transformers, onnx, onnxscript, onnxruntime, tokenizers)
        ),
        probe_head=tuple(float(x) for x in reference[0, :PROBE_HEAD_DIMS]),
    )
    _write_manifest(tmp, manifest)
    embedder = load_onnx_embedder(read_export_status(tmp, files))
    cosines = (embedder.embed_documents(list(_VERIFY_TEXTS)) * reference).sum(axis=1)
    if float(cosines.min()) < MIN_VERIFY_COSINE:
        raise ModelError(
            f"the ONNX export of {files.directory} does not reproduce the model "
            f"(cosine {float(cosines.min()):.6f})",
            fix="report this with `cortex doctor` output; queries keep using sentence-transformers",
        )


def _tensors(tokenizer: Any, texts: list[str]) -> dict[str, Any]:
    import torch

    encodings = tokenizer.encode_batch(texts)
    width = max(len(e.ids) for e in encodings)
    out = {n: torch.zeros((len(texts), width), dtype=torch.int64) for n in INPUT_NAMES}
    for r, enc in enumerate(encodings):
        n = len(enc.ids)
        out["input_ids"][r, :n] = torch.tensor(enc.ids)
        out["attention_mask"][r, :n] = torch.tensor(enc.attention_mask)
        out["token_type_ids"][r, :n] = torch.tensor(enc.type_ids)
    return out


def _pooled_encoder(bert: Any) -> Any:
    """Wrap the transformer so the graph ends in mean pooling + L2 normalisation, as ST does."""
    import torch

    class PooledEncoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert
            self.max_positions = bert.config.max_position_embeddings

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    return PooledEncoder().eval()
