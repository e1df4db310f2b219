"""Reference vectors of all-MiniLM-L6-v2 on a fixed text set: what the ONNX graph built without torch
must reproduce (cosine > 0.9999) so that caches and indexes written by earlier versions stay valid.

The fixture (``fixtures/minilm_reference.json`` + ``.npz``) was recorded on the commit before the graph
was built without torch (1b28552), with the ``minilm`` extra installed::

    python -m tests.indexing.minilm_reference tests/indexing/fixtures/minilm_reference

``minilm`` / ``minilm@256`` are sentence-transformers on torch (the vectors every cache of the
``all-MiniLM-L6-v2`` identity holds); ``onnx`` and ``onnx-int8`` are that commit's ONNX Runtime graphs,
exported with ``torch.onnx.export`` (then int8-quantised). Re-running it on a later commit records that
commit's ``onnx`` graphs instead, so re-record only on purpose and keep the note in the JSON honest.
"""

from __future__ import annotations

import json
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

import numpy as np

_LONG_PROSE = (
    "The index keeps one vector per chunk of code. A chunk is a function, a method or a class header "
    "with its docstring, and the text that is embedded starts with the path and the qualified name so "
    "that a query naming a module finds it even when the code itself never says the word. "
) * 6
_LONG_CODE = "app/billing/invoice.py\nclass app.billing.invoice.Invoice\n" + "".join(
    f"    def line_{i}(self, amount: float, rate: float = 0.2) -> float:\n"
    f'        """Line {i}: the amount with VAT at the given rate."""\n'
    f"        return round(amount * (1 + rate), 2)\n"
    for i in range(12)
)

TEXTS: list[str] = [
    "compute the value added tax of an invoice amount",
    "def compute_vat(amount, rate):\n    return round(amount * rate, 2)",
    "class Session:\n    def expire(self):\n        self.alive = False",
    "function debounce(fn, ms) {\n  let t;\n  return (...a) => { clearTimeout(t); t = setTimeout(() => fn(...a), ms); };\n}",
    'func (s *Server) Close() error {\n\tif s.ln == nil {\n\t\treturn errors.New("not started")\n\t}\n\treturn s.ln.Close()\n}',
    "impl Drop for Guard {\n    fn drop(&mut self) { self.lock.release(); }\n}",
    "SELECT customer_id, SUM(total) FROM invoices WHERE paid = false GROUP BY customer_id;",
    'Traceback (most recent call last):\n  File "app/tax.py", line 7, in compute_vat\n'
    '    raise ValueError("negative tax rate")\nValueError: negative tax rate',
    "Le café coûte trois euros à Genève, n'est-ce pas ?",
    "日本語のテキストを埋め込む。検索は意味で行う。",
    "🚀 deploy ✅ tests passed 🎉",
    "∑ αβγ — Привет, мир! naïve façade “quoted” ‘text’ … ß",
    "",
    "\t\n   x = 1\n\n",
    "invoice",
    "# Shop\n\nA tiny shop backend: authentication, billing and geometry helpers.\n",
    "services:\n  qdrant:\n    image: qdrant/qdrant:v1.17.0\n    ports: ['6333:6333']\n",
    "app/billing/tax.py\nfunction app.billing.tax.compute_vat\nValue added tax for an amount at a rate.",
    "Users report that the login page times out after upgrading the session library.",
    _LONG_PROSE,
    _LONG_CODE,
]
"""Code in five languages, prose, a traceback, accents, CJK, emoji, mixed scripts, the empty text,
whitespace, one word, Markdown, YAML, an embedding header, and two texts far past 128 word pieces
(truncation; ``minilm@256`` covers the positions past 128). One batch: lengths differ, so padding and
the attention mask are exercised."""


def record(dest: Path) -> None:
    """Write ``dest``.json (texts, provenance) and ``dest``.npz (one float32 array per variant)."""
    from indexing.embed import MiniLMEmbedder
    from indexing.onnx_embed import OnnxMiniLMEmbedder

    arrays: dict[str, np.ndarray] = {
        "minilm": MiniLMEmbedder().embed(TEXTS),
        "minilm@256": MiniLMEmbedder(max_seq_length=256).embed(TEXTS),
    }
    with tempfile.TemporaryDirectory() as tmp:
        arrays["onnx"] = OnnxMiniLMEmbedder(Path(tmp), threads=1).embed(TEXTS)
        arrays["onnx-int8"] = OnnxMiniLMEmbedder(Path(tmp), quantize=True, threads=1).embed(TEXTS)
    dest.parent.mkdir(parents=True, exist_ok=True)
    np.savez(dest.with_suffix(".npz"), **{k: v.astype(np.float32) for k, v in arrays.items()})
    meta = {
        "note": __doc__.split("\n\n")[0] if __doc__ else "",
        "versions": {
            d: version(d) for d in ("torch", "sentence-transformers", "transformers", "onnxruntime", "onnx")
        },
        "variants": sorted(arrays),
        "texts": TEXTS,
    }
    dest.with_suffix(".json").write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n")


def load(path: Path) -> tuple[list[str], dict[str, np.ndarray]]:
    """The texts and the reference arrays of the fixture at ``path`` (without suffix)."""
    meta = json.loads(path.with_suffix(".json").read_text())
    with np.load(path.with_suffix(".npz")) as npz:
        arrays = {k: np.asarray(npz[k], dtype=np.float32) for k in npz.files}
    return list(meta["texts"]), arrays


if __name__ == "__main__":
    record(Path(sys.argv[1]))
