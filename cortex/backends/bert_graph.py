"""The ONNX graph of a BERT sentence encoder over its safetensors weights, without torch.

The graph is written node by node with the `onnx` package's helpers: embeddings, the encoder
layers, mean pooling over the attention mask and L2 normalisation (what sentence-transformers
does for all-MiniLM-L6-v2), so one model file serves documents and queries. Its initializers
are not copied: each points at its bytes inside `model.safetensors` (ONNX external data), so
onnxruntime maps the weights file the model package ships and nothing is stored twice. The
graph for all-MiniLM-L6-v2 ships with cortex (`cortex/data/`, written by `python -m
cortex.backends.bert_graph`), so running it needs only onnxruntime; `onnx` is needed only to
build a graph for another BERT model. `reference_embed` runs the same arithmetic in numpy: an
independent check that a graph computes the model. Reads files; writes only when run as a script.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cortex.errors import ModelError

if TYPE_CHECKING:
    import numpy as np

OPSET = 18
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
SAFETENSORS_FILE = "model.safetensors"
NORMALIZE_EPS = 1e-12  # torch.nn.functional.normalize's default, as sentence-transformers uses
POOL_EPS = 1e-9  # sentence-transformers' clamp on the token count
MAX_HEADER_BYTES = 100_000_000  # the safetensors format's own limit
PACKAGED_GRAPH = "minilm-l6-v2-384.onnx"
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


def _layer(i: int, name: str) -> str:
    return f"encoder.layer.{i}.{name}"


def _required(weights: Mapping[str, Any], shape: BertShape) -> list[str]:
    names = [
        "embeddings.word_embeddings.weight",
        "embeddings.position_embeddings.weight",
        "embeddings.token_type_embeddings.weight",
        "embeddings.LayerNorm.weight",
        "embeddings.LayerNorm.bias",
    ]
    parts = (
        "attention.self.query",
        "attention.self.key",
        "attention.self.value",
        "attention.output.dense",
        "intermediate.dense",
        "output.dense",
    )
    for i in range(shape.layers):
        for part in parts:
            names += [_layer(i, f"{part}.weight"), _layer(i, f"{part}.bias")]
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            names += [_layer(i, f"{norm}.weight"), _layer(i, f"{norm}.bias")]
    missing = [n for n in names if n not in weights]
    if missing:
        raise ModelError(
            f"the model's weights lack {len(missing)} BERT tensors (first: {missing[0]})", fix=UNSUPPORTED_FIX
        )
    return names


class _Graph:
    """Accumulates nodes and initializers; every intermediate gets a fresh name."""

    def __init__(self, index: Mapping[str, Tensor], weights_file: str) -> None:
        import onnx.helper

        self.helper = onnx.helper
        self.index = index
        self.weights_file = weights_file
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0
        self._constants: dict[tuple[str, bytes], str] = {}
        self._weights: set[str] = set()

    def op(self, op_type: str, *inputs: str, **attrs: Any) -> str:
        self._count += 1
        out = f"{op_type.lower()}_{self._count}"
        self.nodes.append(self.helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def weight(self, name: str) -> str:
        """An initializer whose bytes stay in the weights file (external data, by offset)."""
        from onnx import TensorProto

        if name not in self._weights:
            t = self.index[name]
            if t.dtype != "F32":
                raise ModelError(f"{name} is {t.dtype}, not float32", fix=UNSUPPORTED_FIX)
            tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=list(t.shape))
            tensor.data_location = TensorProto.EXTERNAL
            for key, value in (("location", self.weights_file), ("offset", t.offset), ("length", t.length)):
                entry = tensor.external_data.add()
                entry.key, entry.value = key, str(value)
            self.initializers.append(tensor)
            self._weights.add(name)
        return name

    def const(self, value: Sequence[float] | Sequence[int] | float, dtype: str) -> str:
        import numpy as np
        from onnx import numpy_helper

        array = np.asarray(value, dtype=np.dtype(dtype))
        key = (dtype + str(array.shape), array.tobytes())
        if key not in self._constants:
            name = f"c{len(self._constants)}"
            self.initializers.append(numpy_helper.from_array(array, name))
            self._constants[key] = name
        return self._constants[key]

    def linear(self, x: str, name: str) -> str:
        # x is [tokens, in]; the weight is stored [out, in], as torch's Linear keeps it.
        return self.op("Gemm", x, self.weight(f"{name}.weight"), self.weight(f"{name}.bias"), transB=1)

    def layer_norm(self, x: str, name: str, eps: float) -> str:
        weight, bias = self.weight(f"{name}.weight"), self.weight(f"{name}.bias")
        return self.op("LayerNormalization", x, weight, bias, axis=-1, epsilon=eps)


def build_bert_graph(
    index: Mapping[str, Tensor], shape: BertShape, weights_file: str = SAFETENSORS_FILE
) -> Any:
    """The onnx ModelProto: token ids, mask and types [batch, seq] -> unit-norm embeddings
    [batch, hidden], its weights read from `weights_file` beside the graph."""
    from onnx import TensorProto

    _required(index, shape)
    g = _Graph(index, weights_file)
    batch_seq = g.op("Shape", "input_ids")
    x = _embeddings(g, shape, batch_seq)  # [batch * seq, hidden]
    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    # 0 where a token may be attended to, a large negative number on padding: [batch, 1, 1, seq].
    blocked = g.op("Mul", g.op("Sub", g.const(1.0, "float32"), mask), g.const(-1e9, "float32"))
    additive = g.op("Unsqueeze", blocked, g.const([1, 2], "int64"))
    split = g.op("Concat", batch_seq, g.const([shape.heads, shape.head_dim], "int64"), axis=0)
    for i in range(shape.layers):
        x = _encoder_layer(g, x, additive, split, i, shape)
    hidden = g.op("Reshape", x, g.op("Concat", batch_seq, g.const([shape.hidden], "int64"), axis=0))
    pooled = _mean_pool(g, hidden, mask)
    l2 = g.op("ReduceL2", pooled, g.const([1], "int64"), keepdims=1)
    norm = g.op("Max", l2, g.const(NORMALIZE_EPS, "float32"))
    g.nodes.append(g.helper.make_node("Div", [pooled, norm], ["sentence_embedding"]))
    dims = ["batch", "sequence"]
    inputs = [g.helper.make_tensor_value_info(n, TensorProto.INT64, dims) for n in INPUT_NAMES]
    output = g.helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", shape.hidden])
    graph = g.helper.make_graph(g.nodes, "sentence_encoder", inputs, [output], g.initializers)
    model = g.helper.make_model(
        graph, opset_imports=[g.helper.make_opsetid("", OPSET)], producer_name="cortex", ir_version=8
    )
    return model  # checked where it is used: onnxruntime runs it against `reference_embed`


def _embeddings(g: _Graph, shape: BertShape, batch_seq: str) -> str:
    seq_len = g.op("Gather", batch_seq, g.const(1, "int64"), axis=0)
    positions = g.op("Range", g.const(0, "int64"), seq_len, g.const(1, "int64"))
    words = g.op("Gather", g.weight("embeddings.word_embeddings.weight"), "input_ids", axis=0)
    where = g.op("Gather", g.weight("embeddings.position_embeddings.weight"), positions, axis=0)
    types = g.op("Gather", g.weight("embeddings.token_type_embeddings.weight"), "token_type_ids", axis=0)
    summed = g.op("Add", g.op("Add", words, where), types)
    flat = g.op("Reshape", summed, g.const([-1, shape.hidden], "int64"))
    return g.layer_norm(flat, "embeddings.LayerNorm", shape.eps)


def _encoder_layer(g: _Graph, x: str, additive: str, split: str, i: int, shape: BertShape) -> str:
    def heads(name: str, perm: list[int]) -> str:
        return g.op("Transpose", g.op("Reshape", g.linear(x, _layer(i, name)), split), perm=perm)

    query = heads("attention.self.query", [0, 2, 1, 3])
    key = heads("attention.self.key", [0, 2, 3, 1])
    value = heads("attention.self.value", [0, 2, 1, 3])
    scores = g.op("Mul", g.op("MatMul", query, key), g.const(1.0 / math.sqrt(shape.head_dim), "float32"))
    probs = g.op("Softmax", g.op("Add", scores, additive), axis=-1)
    context = g.op("Transpose", g.op("MatMul", probs, value), perm=[0, 2, 1, 3])
    merged = g.op("Reshape", context, g.const([-1, shape.hidden], "int64"))
    attended = g.linear(merged, _layer(i, "attention.output.dense"))
    x = g.layer_norm(g.op("Add", attended, x), _layer(i, "attention.output.LayerNorm"), shape.eps)
    inner = g.linear(x, _layer(i, "intermediate.dense"))
    # Exact GELU, as BERT's "gelu": x * 0.5 * (1 + erf(x / sqrt(2))).
    erf = g.op("Erf", g.op("Mul", inner, g.const(1.0 / math.sqrt(2.0), "float32")))
    gelu = g.op("Mul", g.op("Mul", inner, g.const(0.5, "float32")), g.op("Add", erf, g.const(1.0, "float32")))
    out = g.linear(gelu, _layer(i, "output.dense"))
    return g.layer_norm(g.op("Add", out, x), _layer(i, "output.LayerNorm"), shape.eps)


def _mean_pool(g: _Graph, x: str, mask: str) -> str:
    weights = g.op("Unsqueeze", mask, g.const([2], "int64"))
    axis = g.const([1], "int64")
    summed = g.op("ReduceSum", g.op("Mul", x, weights), axis, keepdims=0)
    count = g.op("Max", g.op("ReduceSum", weights, axis, keepdims=0), g.const(POOL_EPS, "float32"))
    return g.op("Div", summed, count)


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
            return v @ w[_layer(i, f"{name}.weight")].T + w[_layer(i, f"{name}.bias")]

        def split(v: np.ndarray) -> np.ndarray:
            return v.reshape(v.shape[0], v.shape[1], shape.heads, shape.head_dim).transpose(0, 2, 1, 3)

        q, k, v = (split(lin(x, f"attention.self.{n}")) for n in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(shape.head_dim) + additive
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        context = (scores / scores.sum(axis=-1, keepdims=True)) @ v
        merged = context.transpose(0, 2, 1, 3).reshape(x.shape)
        x = _np_norm(
            lin(merged, "attention.output.dense") + x, w, _layer(i, "attention.output.LayerNorm"), shape.eps
        )
        inner = lin(x, "intermediate.dense")
        gelu = 0.5 * inner * (1.0 + _erf(inner / math.sqrt(2.0)))
        x = _np_norm(lin(gelu, "output.dense") + x, w, _layer(i, "output.LayerNorm"), shape.eps)
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


def packaged_graph_path() -> Path:
    """The graph of all-MiniLM-L6-v2 that ships with cortex (valid for its exact weights file)."""
    return Path(__file__).resolve().parents[1] / "data" / PACKAGED_GRAPH


def graph_bytes(directory: Path) -> bytes:
    """The serialised graph for the model in `directory` (needs the `onnx` package)."""
    model = build_bert_graph(read_safetensors_index(directory / SAFETENSORS_FILE), read_bert_shape(directory))
    data: bytes = model.SerializeToString(deterministic=True)
    return data


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m cortex.backends.bert_graph [MODEL_DIR] [--out FILE]`: (re)write the shipped graph."""
    import argparse

    from cortex.backends.model_locate import read_model_files, resolve_model

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("model_dir", nargs="?", type=Path, help="default: the installed all-MiniLM-L6-v2")
    parser.add_argument("--out", type=Path, default=packaged_graph_path())
    args = parser.parse_args(argv)
    directory = read_model_files(resolve_model(args.model_dir)).directory
    args.out.write_bytes(graph_bytes(directory))
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes) for {directory}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
