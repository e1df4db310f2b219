"""The ONNX graph of a BERT sentence encoder (all-MiniLM-L6-v2), written node by node with the
``onnx`` helper API from the weights alone: no torch, no transformers.

The graph is the function sentence-transformers computes for this model: BERT embeddings (word +
token type 0 + absolute position, LayerNorm), ``num_hidden_layers`` post-LayerNorm encoder layers
(multi-head self-attention with the padding mask as an additive bias, exact erf GELU), then the mean
of the token vectors under the attention mask. Inputs ``input_ids`` and ``attention_mask``
(int64, ``[batch, tokens]``), output ``embedding`` (float32, ``[batch, hidden]``, not normalised).

It follows the layout torch's exporter produced for the same model (same operators, the same order
of additions, node names in its ``/encoder/layer.N/...`` style), so ONNX Runtime fuses it the same way
and the int8 quantisation rules that pick nodes by name keep working; the vectors match the torch
model's to float rounding (tests/indexing/test_onnx_embed.py holds it to recorded reference vectors).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

OPSET = 17
"""LayerNormalization is a standard operator from opset 17 on."""

Array = npt.NDArray[Any]


class _Builder:
    """Collects nodes and initializers; every name is unique by construction."""

    def __init__(self) -> None:
        from onnx import TensorProto, helper, numpy_helper

        self.helper = helper
        self.numpy_helper = numpy_helper
        self.float = TensorProto.FLOAT
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._names: dict[str, int] = {}

    def const(self, name: str, value: Array) -> str:
        self.inits.append(self.numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op: str, scope: str, inputs: list[str], **attrs: Any) -> str:
        base = f"{scope}/{op}"
        k = self._names.get(base, 0)
        self._names[base] = k + 1
        name = f"{base}_{k}" if k else base  # a second node of a type in a scope: _1, _2 as torch names them
        out = f"{name}_output_0"
        self.nodes.append(self.helper.make_node(op, inputs, [out], name=name, **attrs))
        return out


def _f32(x: Array) -> Array:
    return np.asarray(x, dtype=np.float32)


def _linear(b: _Builder, scope: str, x: str, weight: Array, bias: Array, prefix: str) -> str:
    """``x @ weight.T + bias`` (torch's Linear stores ``[out, in]``)."""
    w = b.const(f"{prefix}.weight.T", _f32(weight).T)
    y = b.op("MatMul", scope, [x, w])
    return b.op("Add", scope, [b.const(f"{prefix}.bias", _f32(bias)), y])


def build_bert_mean_pooling(
    tensors: dict[str, Array], config: dict[str, Any], *, producer: str = "arcs"
) -> Any:
    """The ``onnx.ModelProto`` of BERT + attention-masked mean pooling for these weights.

    ``tensors`` are the model's (``embeddings.*``, ``encoder.layer.N.*``; a ``bert.`` prefix is
    accepted); ``config`` its ``config.json``. Raises :class:`ValueError` for a model this builder does
    not implement (another architecture, activation or position embedding) or a missing tensor.
    """
    from onnx import TensorProto, checker, helper

    hidden = int(config.get("hidden_size", 0))
    heads = int(config.get("num_attention_heads", 0))
    layers = int(config.get("num_hidden_layers", 0))
    eps = float(config.get("layer_norm_eps", 1e-12))
    unsupported = {
        "model_type": (config.get("model_type"), "bert"),
        "hidden_act": (config.get("hidden_act"), "gelu"),
        "position_embedding_type": (config.get("position_embedding_type", "absolute"), "absolute"),
    }
    for key, (got, want) in unsupported.items():
        if got != want:
            raise ValueError(f"config {key}={got!r}: only {want!r} is implemented")
    if hidden <= 0 or heads <= 0 or layers <= 0 or hidden % heads:
        raise ValueError(f"config hidden_size={hidden}, num_attention_heads={heads}, layers={layers}")
    head_dim = hidden // heads

    def t(name: str) -> Array:
        for key in (name, f"bert.{name}"):
            if key in tensors:
                return tensors[key]
        raise ValueError(f"the weights have no tensor {name!r}")

    b = _Builder()
    # Embeddings: word + token type 0 (ARCS never sends segment ids) + position, then LayerNorm.
    scope = "/embeddings"
    word = b.op(
        "Gather",
        f"{scope}/word_embeddings",
        [b.const("word_embeddings", _f32(t("embeddings.word_embeddings.weight"))), "input_ids"],
    )
    token_type0 = b.const("token_type_embeddings.0", _f32(t("embeddings.token_type_embeddings.weight"))[0])
    x = b.op("Add", scope, [word, token_type0])
    # The first ``tokens`` rows of the position table, as a Slice: the Range + Gather torch exports
    # is what ONNX Runtime rewrites into this anyway, and its rewrite mishandles scalar initializers.
    tokens = b.op("Shape", scope, ["input_ids"], start=1, end=2)
    pos = b.op(
        "Slice",
        f"{scope}/position_embeddings",
        [
            b.const("position_embeddings", _f32(t("embeddings.position_embeddings.weight"))),
            b.const("slice_start", np.array([0], dtype=np.int64)),
            tokens,
            b.const("slice_axis", np.array([0], dtype=np.int64)),
        ],
    )
    x = b.op("Add", scope, [x, pos])
    x = _layer_norm(b, f"{scope}/LayerNorm", x, t, "embeddings.LayerNorm", eps)

    # The padding mask as an additive bias on the attention scores: 0 where attended, the float32
    # minimum where padded (softmax then gives exactly 0 there), shaped [batch, 1, 1, tokens].
    mask = b.op("Cast", "/mask", ["attention_mask"], to=TensorProto.FLOAT)
    inverted = b.op("Sub", "/mask", [b.const("one_f", np.array(1.0, dtype=np.float32)), mask])
    bias = b.op(
        "Mul", "/mask", [inverted, b.const("float_min", np.array(np.finfo(np.float32).min, dtype=np.float32))]
    )
    bias = b.op("Unsqueeze", "/mask", [bias, b.const("axes_1_2", np.array([1, 2], dtype=np.int64))])

    split_heads = b.const("split_heads", np.array([0, 0, heads, head_dim], dtype=np.int64))
    merge_heads = b.const("merge_heads", np.array([0, 0, hidden], dtype=np.int64))
    scale = b.const("scale", np.array(1.0 / math.sqrt(head_dim), dtype=np.float32))
    sqrt2 = b.const("sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    half = b.const("half", np.array(0.5, dtype=np.float32))
    for i in range(layers):
        p, s = f"encoder.layer.{i}", f"/encoder/layer.{i}"
        att = f"{s}/attention/self"
        q = _linear(
            b,
            f"{att}/query",
            x,
            t(f"{p}.attention.self.query.weight"),
            t(f"{p}.attention.self.query.bias"),
            f"{p}.attention.self.query",
        )
        k = _linear(
            b,
            f"{att}/key",
            x,
            t(f"{p}.attention.self.key.weight"),
            t(f"{p}.attention.self.key.bias"),
            f"{p}.attention.self.key",
        )
        v = _linear(
            b,
            f"{att}/value",
            x,
            t(f"{p}.attention.self.value.weight"),
            t(f"{p}.attention.self.value.bias"),
            f"{p}.attention.self.value",
        )
        q = b.op("Transpose", att, [b.op("Reshape", att, [q, split_heads])], perm=[0, 2, 1, 3])
        v = b.op("Transpose", att, [b.op("Reshape", att, [v, split_heads])], perm=[0, 2, 1, 3])
        k = b.op("Transpose", att, [b.op("Reshape", att, [k, split_heads])], perm=[0, 2, 3, 1])
        scores = b.op("Mul", att, [b.op("MatMul", att, [q, k]), scale])
        probs = b.op("Softmax", att, [b.op("Add", att, [scores, bias])], axis=-1)
        ctx = b.op("Transpose", att, [b.op("MatMul", att, [probs, v])], perm=[0, 2, 1, 3])
        ctx = b.op("Reshape", att, [ctx, merge_heads])
        out = _linear(
            b,
            f"{s}/attention/output/dense",
            ctx,
            t(f"{p}.attention.output.dense.weight"),
            t(f"{p}.attention.output.dense.bias"),
            f"{p}.attention.output.dense",
        )
        x = _layer_norm(
            b,
            f"{s}/attention/output/LayerNorm",
            b.op("Add", f"{s}/attention/output", [out, x]),
            t,
            f"{p}.attention.output.LayerNorm",
            eps,
        )
        inner = _linear(
            b,
            f"{s}/intermediate/dense",
            x,
            t(f"{p}.intermediate.dense.weight"),
            t(f"{p}.intermediate.dense.bias"),
            f"{p}.intermediate.dense",
        )
        act = f"{s}/intermediate/intermediate_act_fn"  # exact GELU: x * (1 + erf(x / sqrt 2)) * 0.5
        gelu = b.op("Erf", act, [b.op("Div", act, [inner, sqrt2])])
        gelu = b.op("Mul", act, [b.op("Mul", act, [inner, b.op("Add", act, [gelu, "one_f"])]), half])
        out = _linear(
            b,
            f"{s}/output/dense",
            gelu,
            t(f"{p}.output.dense.weight"),
            t(f"{p}.output.dense.bias"),
            f"{p}.output.dense",
        )
        x = _layer_norm(
            b, f"{s}/output/LayerNorm", b.op("Add", f"{s}/output", [out, x]), t, f"{p}.output.LayerNorm", eps
        )

    # Mean pooling: the sum of the attended token vectors over their count (at least 1e-9).
    weights = b.op("Unsqueeze", "/pool", [mask, b.const("axis_last", np.array([-1], dtype=np.int64))])
    tokens_axis = b.const("axis_tokens", np.array([1], dtype=np.int64))
    summed = b.op("ReduceSum", "/pool", [b.op("Mul", "/pool", [x, weights]), tokens_axis], keepdims=0)
    count = b.op("ReduceSum", "/pool", [weights, tokens_axis], keepdims=0)
    count = b.op("Clip", "/pool", [count, b.const("tiny", np.array(1e-9, dtype=np.float32)), ""])
    b.nodes.append(helper.make_node("Div", [summed, count], ["embedding"], name="/pool/Div"))

    graph = helper.make_graph(
        b.nodes,
        "all-MiniLM-L6-v2 mean pooling",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"]),
        ],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", hidden])],
        initializer=b.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name=producer)
    model.ir_version = 8  # what ONNX Runtime releases back to 1.14 read
    checker.check_model(model)
    return model


def _layer_norm(b: _Builder, scope: str, x: str, t: Any, prefix: str, eps: float) -> str:
    gamma = b.const(f"{prefix}.weight", _f32(t(f"{prefix}.weight")))
    beta = b.const(f"{prefix}.bias", _f32(t(f"{prefix}.bias")))
    return b.op("LayerNormalization", scope, [x, gamma, beta], axis=-1, epsilon=eps)
