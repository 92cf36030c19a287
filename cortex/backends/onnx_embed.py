"""Check an ONNX export of the embedding model and run it on onnxruntime, no torch. Reads files."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from cortex.backends.model_locate import ModelFiles, read_sha256
from cortex.errors import ModelError

if TYPE_CHECKING:
    import numpy as np

MANIFEST_FILE = "manifest.json"
MANIFEST_FORMAT = 1
ONNX_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
OUTPUT_NAME = "sentence_embedding"  # "embedding" collides with an initializer name in the graph
BATCH_SIZE = 32  # measured best throughput for this model on 2 cores
PROBE_TEXT = "cortex probe: the export must reproduce the source model"
PROBE_HEAD_DIMS = 16
PROBE_TOLERANCE = 1e-4

ExportState = Literal["ready", "missing", "stale", "broken"]


@dataclass(frozen=True, slots=True)
class ExportManifest:
    """What `manifest.json` records about an export: its source, files, and a probe vector."""

    key: str
    dim: int
    max_seq_length: int
    inputs: tuple[str, ...]
    opset: int
    source_weights: str
    source_sha256: str
    source_size: int
    source_mtime_ns: int
    files: tuple[tuple[str, int], ...]
    tools: tuple[tuple[str, str], ...]
    probe_head: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class ExportStatus:
    """Whether an export directory can serve queries, and if not, why in words."""

    path: Path
    state: ExportState
    problem: str
    manifest: ExportManifest | None
    size_bytes: int


def export_dir(data_dir: Path, key: str) -> Path:
    """Where the ONNX export of the model with this key lives."""
    return Path(data_dir) / "models" / f"{key}-onnx"


def parse_manifest(data: object) -> ExportManifest:
    """Manifest JSON -> ExportManifest; ValueError when a field is missing or mistyped."""
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        raise ValueError(f"not a format-{MANIFEST_FORMAT} export manifest")
    try:
        source, files, tools = data["source"], data["files"], data["tools"]
        manifest = ExportManifest(
            key=str(data["key"]),
            dim=int(data["dim"]),
            max_seq_length=int(data["max_seq_length"]),
            inputs=tuple(str(i) for i in data["inputs"]),
            opset=int(data["opset"]),
            source_weights=str(source["weights"]),
            source_sha256=str(source["sha256"]),
            source_size=int(source["size"]),
            source_mtime_ns=int(source["mtime_ns"]),
            files=tuple((str(k), int(v)) for k, v in files.items()),
            tools=tuple((str(k), str(v)) for k, v in tools.items()),
            probe_head=tuple(float(x) for x in data["probe_head"]),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"malformed manifest ({type(exc).__name__}: {exc})") from exc
    if len(manifest.probe_head) != PROBE_HEAD_DIMS or not manifest.files:
        raise ValueError("malformed manifest (probe vector or file list missing)")
    return manifest


def render_manifest(m: ExportManifest) -> str:
    """ExportManifest -> the JSON text written beside the export."""
    return json.dumps(
        {
            "format": MANIFEST_FORMAT,
            "key": m.key,
            "dim": m.dim,
            "max_seq_length": m.max_seq_length,
            "inputs": list(m.inputs),
            "output": OUTPUT_NAME,
            "opset": m.opset,
            "source": {
                "weights": m.source_weights,
                "sha256": m.source_sha256,
                "size": m.source_size,
                "mtime_ns": m.source_mtime_ns,
            },
            "files": dict(m.files),
            "tools": dict(m.tools),
            "probe_head": list(m.probe_head),
        },
        indent=2,
    )


def read_manifest(directory: Path) -> ExportManifest:
    """Read and parse `manifest.json`; OSError or ValueError when unreadable."""
    return parse_manifest(json.loads((directory / MANIFEST_FILE).read_text(encoding="utf-8")))


def source_matches(manifest: ExportManifest, files: ModelFiles) -> bool:
    """True when the export was made from these weights (stat first, hash only if stat differs)."""
    st = files.weights.stat()
    if (st.st_size, st.st_mtime_ns) == (manifest.source_size, manifest.source_mtime_ns):
        return True
    if st.st_size != manifest.source_size:
        return False
    return read_sha256(files.weights) == manifest.source_sha256


def read_export_status(directory: Path, files: ModelFiles) -> ExportStatus:
    """Check an export cheaply (manifest, file sizes, source identity) without loading it."""
    if not directory.is_dir():
        problem = f"no ONNX export yet (looked in {directory})"
        return ExportStatus(directory, "missing", problem, None, 0)
    try:
        manifest = read_manifest(directory)
    except (OSError, ValueError) as exc:
        problem = f"unreadable manifest in {directory}: {exc}"
        return ExportStatus(directory, "broken", problem, None, 0)
    size = 0
    for name, expected in manifest.files:
        try:
            actual = (directory / name).stat().st_size
        except OSError:
            problem = f"{name} is missing from {directory}"
            return ExportStatus(directory, "broken", problem, manifest, 0)
        if actual != expected:
            problem = f"{name} in {directory} is {actual} bytes, expected {expected} (truncated?)"
            return ExportStatus(directory, "broken", problem, manifest, 0)
        size += actual
    if not source_matches(manifest, files):
        problem = f"the export at {directory} was made from a different model file"
        return ExportStatus(directory, "stale", problem, manifest, size)
    return ExportStatus(directory, "ready", "", manifest, size)


def read_recorded_key(data_dir: Path, weights: Path) -> str | None:
    """The key an export recorded for exactly this weights file (same path, size and mtime)."""
    st = weights.stat()
    for path in sorted((Path(data_dir) / "models").glob("*-onnx/" + MANIFEST_FILE)):
        try:
            m = read_manifest(path.parent)
        except (OSError, ValueError):
            continue
        same = (m.source_weights, m.source_size, m.source_mtime_ns) == (
            str(weights.resolve()),
            st.st_size,
            st.st_mtime_ns,
        )
        if same:
            return m.key
    return None


class OnnxEmbedder:
    """The exported model run by onnxruntime; pooling and L2 normalisation are inside the graph."""

    backend = "onnx"

    def __init__(self, directory: Path, manifest: ExportManifest) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.key = manifest.key
        self.dim = manifest.dim
        self.directory = directory
        options = ort.SessionOptions()
        options.intra_op_num_threads = min(2, os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # onnxruntime warnings would land on a hook's stderr
        # Idle pool threads would otherwise spin for a while after each run, burning the CPU
        # that the session and the other cortex processes need on a small machine.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # The graph is written already fused (backends.bert_graph): onnxruntime's own rewrites
        # find nothing to gain (same vectors to 1e-7, same speed per batch) but cost every new
        # process ~10-15 ms of CPU while the session is built, which a cold recall waits for.
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        self._session = ort.InferenceSession(
            str(directory / ONNX_FILE), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_file(str(directory / TOKENIZER_FILE))
        padding: dict[str, Any] = self._tokenizer.padding or {}
        self._pad_id = int(padding.get("pad_id", 0))
        self._pad_type_id = int(padding.get("pad_type_id", 0))
        # Padding is done per length-sorted batch below; the tokenizer only truncates.
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(manifest.max_seq_length)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts as unit-norm float32 rows, batching texts of similar token length."""
        import numpy as np

        if isinstance(texts, str):
            raise TypeError("embed_documents takes a sequence of texts, not one string")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(list(texts))
        lengths = np.array([len(e.ids) for e in encodings])
        order = np.argsort(lengths, kind="stable")
        for start in range(0, len(order), BATCH_SIZE):
            rows = order[start : start + BATCH_SIZE]
            width = int(lengths[rows].max())
            ids = np.full((len(rows), width), self._pad_id, dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            types = np.full((len(rows), width), self._pad_type_id, dtype=np.int64)
            for r, i in enumerate(rows):
                enc = encodings[i]
                n = len(enc.ids)
                ids[r, :n], mask[r, :n], types[r, :n] = enc.ids, enc.attention_mask, enc.type_ids
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            result = self._session.run([OUTPUT_NAME], {k: v for k, v in feeds.items() if k in self._inputs})
            out[rows] = result[0]
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one text as a unit-norm float32 vector."""
        return self.embed_documents([text]).reshape(self.dim)


def load_onnx_embedder(status: ExportStatus) -> OnnxEmbedder:
    """Load a ready export and check it still reproduces its probe vector; ModelError if not."""
    if status.state != "ready" or status.manifest is None:
        raise ModelError(f"no usable ONNX export: {status.problem}", fix="run `cortex init` to prepare it")
    try:
        embedder = OnnxEmbedder(status.path, status.manifest)
        head = embedder.embed_query(PROBE_TEXT)[:PROBE_HEAD_DIMS]
    except Exception as exc:  # onnxruntime raises its own exception types for corrupt files
        raise ModelError(
            f"the ONNX export at {status.path} could not be loaded ({type(exc).__name__}: {exc})",
            fix="run `cortex init` to rebuild it",
        ) from exc
    diffs = [abs(float(a) - b) for a, b in zip(head, status.manifest.probe_head, strict=True)]
    if not all(d <= PROBE_TOLERANCE for d in diffs):  # written so that NaN fails too
        worst = "NaN" if any(math.isnan(d) for d in diffs) else f"{max(diffs):.2g}"
        raise ModelError(
            f"the ONNX export at {status.path} no longer reproduces its probe vector "
            f"(difference {worst}); its files are corrupt",
            fix="run `cortex init` to rebuild it",
        )
    return embedder
