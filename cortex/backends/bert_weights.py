"""A BERT sentence encoder's files read without torch: its shape, its safetensors weights (as
memory-mapped numpy views, with each tensor's byte range), and the encoder computed in numpy
(`reference_embed`), the independent check of any ONNX graph cortex runs. Reads files only.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cortex.errors import ModelError

if TYPE_CHECKING:
    import numpy as np

SAFETENSORS_FILE = "model.safetensors"
NORMALIZE_EPS = 1e-12  # torch.nn.functional.normalize's default, as sentence-transformers uses
POOL_EPS = 1e-9  # sentence-transformers' clamp on the token count
MAX_HEADER_BYTES = 100_000_000  # the safetensors format's own limit
UNSUPPORTED_FIX = (
    "pip install 'cortex-memory[sentence-transformers]' to embed this model with "
    "sentence-transformers, or unset CORTEX_MODEL_PATH to use all-MiniLM-L6-v2"
)


@dataclass(frozen=True, slots=True)
class BertShape:
    """What the graph needs from the model's config.json and pooling config."""

    hidden: int
    heads: int
    layers: int
    intermediate: int
    eps: float
    max_positions: int

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


def read_bert_shape(directory: Path) -> BertShape:
    """Read config.json (and the pooling config) and check this builder can express the model."""
    try:
        config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(
            f"cannot read {directory / 'config.json'} ({type(exc).__name__}: {exc})", fix=UNSUPPORTED_FIX
        ) from exc
    model_type, act = config.get("model_type"), config.get("hidden_act", "gelu")
    position = config.get("position_embedding_type", "absolute")
    if model_type != "bert" or act != "gelu" or position != "absolute":
        raise ModelError(
            f"{directory} holds a {model_type!r} model ({act}, {position} positions); the built-in "
            "ONNX builder handles BERT encoders with GELU and absolute positions only",
            fix=UNSUPPORTED_FIX,
        )
    _check_mean_pooling(directory)
    try:
        shape = BertShape(
            hidden=int(config["hidden_size"]),
            heads=int(config["num_attention_heads"]),
            layers=int(config["num_hidden_layers"]),
            intermediate=int(config["intermediate_size"]),
            eps=float(config.get("layer_norm_eps", 1e-12)),
            max_positions=int(config["max_position_embeddings"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelError(f"{directory / 'config.json'} lacks {exc}", fix=UNSUPPORTED_FIX) from exc
    if shape.hidden % shape.heads:
        raise ModelError(f"{directory}: hidden size not divisible by the head count", fix=UNSUPPORTED_FIX)
    return shape


def _check_mean_pooling(directory: Path) -> None:
    pooling = directory / "1_Pooling" / "config.json"
    if not pooling.is_file():
        return  # a bare transformers directory: sentence-transformers would mean-pool it too
    try:
        modes = json.loads(pooling.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot read {pooling} ({exc})", fix=UNSUPPORTED_FIX) from exc
    others = [
        k for k, v in modes.items() if k.startswith("pooling_mode_") and v and k != "pooling_mode_mean_tokens"
    ]
    if not modes.get("pooling_mode_mean_tokens") or others:
        raise ModelError(
            f"{pooling} asks for {', '.join(others) or 'no mean'} pooling; the built-in ONNX builder "
            "does mean pooling only",
            fix=UNSUPPORTED_FIX,
        )


@dataclass(frozen=True, slots=True)
class Tensor:
    """Where one tensor's bytes lie in a safetensors file (absolute offsets)."""

    dtype: str
    shape: tuple[int, ...]
    offset: int
    length: int


_DTYPES = {"F32": "float32", "I64": "int64"}


def read_safetensors_index(path: Path) -> dict[str, Tensor]:
    """The tensors of a safetensors file (header only): name (without `bert.`) -> Tensor."""
    if not path.is_file():
        raise ModelError(
            f"{path.parent} has no {SAFETENSORS_FILE} (the built-in ONNX builder reads safetensors only)",
            fix=UNSUPPORTED_FIX,
        )
    try:
        with path.open("rb") as fh:
            size = int.from_bytes(fh.read(8), "little")
            if not 0 < size <= MAX_HEADER_BYTES:
                raise ValueError(f"header size {size}")
            header = json.loads(fh.read(size))
        index = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            start, end = (int(x) for x in info["data_offsets"])
            index[name.removeprefix("bert.")] = Tensor(
                str(info["dtype"]), tuple(int(d) for d in info["shape"]), 8 + size + start, end - start
            )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        problem = f"{path} is not a readable safetensors file ({exc})"
        raise ModelError(problem, fix="reinstall the model") from exc
    file_size = path.stat().st_size
    if any(t.offset + t.length > file_size for t in index.values()):
        raise ModelError(f"{path} is shorter than its header says (truncated?)", fix="reinstall the model")
    return index


def read_weights(directory: Path) -> dict[str, np.ndarray]:
    """The model's float32 tensors as read-only numpy views of the file (nothing is copied)."""
    import numpy as np

    path = directory / SAFETENSORS_FILE
    index = read_safetensors_index(path)
    mapped = np.memmap(path, dtype=np.uint8, mode="r")
    out = {}
    for name, t in index.items():
        if t.dtype in _DTYPES:
            dtype = np.dtype(_DTYPES[t.dtype]).newbyteorder("<")
            out[name] = mapped[t.offset : t.offset + t.length].view(dtype).reshape(t.shape)
    return out


def layer(i: int, name: str) -> str:
    """The weight-name prefix of encoder layer `i`."""
    return f"encoder.layer.{i}.{name}"


def reference_embed(
    weights: Mapping[str, np.ndarray], shape: BertShape, ids: np.ndarray, mask: np.ndarray, types: np.ndarray
) -> np.ndarray:
    """The same encoder in numpy (float64): an independent check of the built graph."""
    import numpy as np

    w = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items()}
    positions = np.arange(ids.shape[1])
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][positions]
    x = _np_norm(
        x + w["embeddings.token_type_embeddings.weight"][types], w, "embeddings.LayerNorm", shape.eps
    )
    additive = (1.0 - mask[:, None, None, :].astype(np.float64)) * -1e9
    for i in range(shape.layers):

        def lin(v: np.ndarray, name: str, i: int = i) -> np.ndarray:
            return v @ w[layer(i, f"{name}.weight")].T + w[layer(i, f"{name}.bias")]

        def split(v: np.ndarray) -> np.ndarray:
            return v.reshape(v.shape[0], v.shape[1], shape.heads, shape.head_dim).transpose(0, 2, 1, 3)

        q, k, v = (split(lin(x, f"attention.self.{n}")) for n in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(shape.head_dim) + additive
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        context = (scores / scores.sum(axis=-1, keepdims=True)) @ v
        merged = context.transpose(0, 2, 1, 3).reshape(x.shape)
        x = _np_norm(
            lin(merged, "attention.output.dense") + x, w, layer(i, "attention.output.LayerNorm"), shape.eps
        )
        inner = lin(x, "intermediate.dense")
        gelu = 0.5 * inner * (1.0 + _erf(inner / math.sqrt(2.0)))
        x = _np_norm(lin(gelu, "output.dense") + x, w, layer(i, "output.LayerNorm"), shape.eps)
    weights3 = mask[:, :, None].astype(np.float64)
    pooled = (x * weights3).sum(axis=1) / np.maximum(weights3.sum(axis=1), POOL_EPS)
    norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), NORMALIZE_EPS)
    return (pooled / norms).astype(np.float32)


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to within 1.5e-7 (Abramowitz and Stegun 7.1.26): numpy has none of its own."""
    import numpy as np

    t = 1.0 / (1.0 + 0.3275911 * np.abs(x))
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return np.sign(x) * (1.0 - poly * np.exp(-x * x))


def _np_norm(x: np.ndarray, w: Mapping[str, np.ndarray], name: str, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / (var + eps) ** 0.5 * w[f"{name}.weight"] + w[f"{name}.bias"]
