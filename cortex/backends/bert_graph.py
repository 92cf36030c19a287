"""The ONNX graph of a BERT sentence encoder over its safetensors weights, without torch.

The graph is written node by node with the `onnx` package's helpers: embeddings, the encoder
layers, mean pooling over the attention mask and L2 normalisation (what sentence-transformers
does for all-MiniLM-L6-v2), so one model file serves documents and queries. Its initializers
are not copied: each points at its bytes inside `model.safetensors` (ONNX external data), so
onnxruntime maps the weights file the model package ships and nothing is stored twice. The
graph for all-MiniLM-L6-v2 ships with cortex (`cortex/data/`, written by `python -m
cortex.backends.bert_graph`), so running it needs only onnxruntime; `onnx` is needed only to
build a graph for another BERT model; `bert_weights.reference_embed` checks a graph against the
same model computed in numpy. Reads files; writes only when run as a script.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cortex.backends.bert_weights import (
    NORMALIZE_EPS,
    POOL_EPS,
    SAFETENSORS_FILE,
    UNSUPPORTED_FIX,
    BertShape,
    Tensor,
    layer,
    read_bert_shape,
    read_safetensors_index,
)
from cortex.errors import ModelError

OPSET = 18
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
PACKAGED_GRAPH = "minilm-l6-v2-384.onnx"


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
            names += [layer(i, f"{part}.weight"), layer(i, f"{part}.bias")]
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            names += [layer(i, f"{norm}.weight"), layer(i, f"{norm}.bias")]
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
        x = _encoderlayer(g, x, additive, split, i, shape)
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


def _encoderlayer(g: _Graph, x: str, additive: str, split: str, i: int, shape: BertShape) -> str:
    def heads(name: str, perm: list[int]) -> str:
        return g.op("Transpose", g.op("Reshape", g.linear(x, layer(i, name)), split), perm=perm)

    query = heads("attention.self.query", [0, 2, 1, 3])
    key = heads("attention.self.key", [0, 2, 3, 1])
    value = heads("attention.self.value", [0, 2, 1, 3])
    scores = g.op("Mul", g.op("MatMul", query, key), g.const(1.0 / math.sqrt(shape.head_dim), "float32"))
    probs = g.op("Softmax", g.op("Add", scores, additive), axis=-1)
    context = g.op("Transpose", g.op("MatMul", probs, value), perm=[0, 2, 1, 3])
    merged = g.op("Reshape", context, g.const([-1, shape.hidden], "int64"))
    attended = g.linear(merged, layer(i, "attention.output.dense"))
    x = g.layer_norm(g.op("Add", attended, x), layer(i, "attention.output.LayerNorm"), shape.eps)
    inner = g.linear(x, layer(i, "intermediate.dense"))
    # Exact GELU, as BERT's "gelu": x * 0.5 * (1 + erf(x / sqrt(2))).
    erf = g.op("Erf", g.op("Mul", inner, g.const(1.0 / math.sqrt(2.0), "float32")))
    gelu = g.op("Mul", g.op("Mul", inner, g.const(0.5, "float32")), g.op("Add", erf, g.const(1.0, "float32")))
    out = g.linear(gelu, layer(i, "output.dense"))
    return g.layer_norm(g.op("Add", out, x), layer(i, "output.LayerNorm"), shape.eps)


def _mean_pool(g: _Graph, x: str, mask: str) -> str:
    weights = g.op("Unsqueeze", mask, g.const([2], "int64"))
    axis = g.const([1], "int64")
    summed = g.op("ReduceSum", g.op("Mul", x, weights), axis, keepdims=0)
    count = g.op("Max", g.op("ReduceSum", weights, axis, keepdims=0), g.const(POOL_EPS, "float32"))
    return g.op("Div", summed, count)


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
