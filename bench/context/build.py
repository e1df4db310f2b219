"""Build the held-out corpus (``cases.jsonl``) and the call distances of every mutant case.

    .venv/bin/python -m bench.context.build [--seed 15] [--per-package 6]   # held-out cases + distances
    .venv/bin/python -m bench.context.build --distances-only                 # outside corpus distances

For each package of :data:`bench.context.corpus.HELD_OUT_PACKAGES`, the mutants are those of
``bench.outside.build`` (six classic operators on single-line sites inside functions), ordered
with ``random.Random(f"{seed}:{package}")``: first up to two sites inside a *large function*
(> 150 lines), then the operators taking turns. A mutant is kept when the package's own test
command, run directly, fails with test failures (pytest exit 1 within the timeout): the suite
detects it. One mutant per function. Every kept case is held out (``split: held_out``): no part of
ARCS is tuned on these packages. Recorded per case: the enclosing function's length, the file's
length, and the call distance from the failing tests (:mod:`bench.context.distance`).
``distances.json`` holds the distances of the outside corpus's cases too.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.context.corpus import CASES_JSONL, HELD_OUT_PACKAGES, HERE
from bench.context.distance import call_distance
from bench.outside.build import BUG_CLASS, Mutant, _fix_edit, _interleave, mutants_of
from bench.outside.corpus import Package, apply_mutation, unpacked
from bench.repair.corpus import load_cases
from bench.repair.isolate import direct_env, run_command

DISTANCES_JSON = HERE / "distances.json"
DETECT_TIMEOUT_S = 90.0
LARGE_FUNCTION = 150
LARGE_FILE = 2000


def function_spans(text: str) -> list[tuple[int, int, str]]:
    """``(first line, last line, name)`` of every function of ``text``."""
    return [
        (node.lineno, node.end_lineno or node.lineno, node.name)
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def enclosing_function(text: str | list[tuple[int, int, str]], line: int) -> tuple[str, int]:
    """``(name, length in lines)`` of the innermost function containing ``line`` (``("", 0)``: none).

    ``text`` is the source or its :func:`function_spans` (parse a large file once, not per line).
    """
    spans = function_spans(text) if isinstance(text, str) else text
    inside = [(end - start, name) for start, end, name in spans if start <= line <= end]
    if not inside:
        return ("", 0)
    length, name = min(inside)
    return (name, length + 1)


def _detect(pkg: Package, m: Mutant, command: str) -> str:
    with tempfile.TemporaryDirectory(prefix="arcs-ctx-detect-") as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(unpacked(pkg), repo)
        apply_mutation(repo, {"path": m.path, "line": m.line, "original": m.original, "mutated": m.mutated})
        code, _, out = run_command(command, repo, direct_env(Path(tmp)), DETECT_TIMEOUT_S)
    if code is None:
        return "hang"
    if code == 0:
        return "pass"
    return "fail" if code == 1 and " failed" in out else "error"


def _distance(pkg_tree: Path, mutation: dict[str, Any], command: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="arcs-ctx-dist-") as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(pkg_tree, repo)
        apply_mutation(repo, mutation)
        return call_distance(repo, command, mutation["path"], int(mutation["line"]))


def build_package(pkg: Package, seed: int, per_package: int, batch: str = "") -> list[dict[str, Any]]:
    """The kept held-out cases of one package (see the module docstring)."""
    tree = unpacked(pkg)
    rng = random.Random(f"{seed}:{pkg.name}")
    texts = {rel: (tree / rel).read_text("utf-8") for rel in sorted(pkg.targets)}
    every = [m for rel in sorted(texts) for m in mutants_of(rel, texts[rel])]
    spans = {rel: function_spans(text) for rel, text in texts.items()}
    sizes = {(m.path, m.line): enclosing_function(spans[m.path], m.line) for m in every}
    large = [m for m in every if sizes[(m.path, m.line)][1] > LARGE_FUNCTION]
    rng.shuffle(large)
    order = large[:2] + [m for m in _interleave(every, rng) if m not in large[:2]]
    kept: list[dict[str, Any]] = []
    used: set[tuple[str, str]] = set()
    tried = 0
    for m in order:
        if len(kept) >= per_package or tried >= 5 * per_package:
            break
        fname, flen = sizes[(m.path, m.line)]
        if (m.path, fname) in used:
            continue
        extra = f"{pkg.pytest_args} " if pkg.pytest_args else ""
        command = f"python -m pytest -q {extra}{pkg.targets[m.path]}"
        tried += 1
        outcome = _detect(pkg, m, command)
        print(f"  {pkg.name} {m.operator:16} {m.path}:{m.line} ({flen} lines) -> {outcome}", file=sys.stderr)
        if outcome != "fail":
            continue
        used.add((m.path, fname))
        fix_edit = _fix_edit(tree, m)
        mutation = {
            "path": m.path,
            "line": m.line,
            "function": fname,
            "operator": m.operator,
            "original": m.original,
            "mutated": m.mutated,
        }
        dist = _distance(tree, mutation, command)
        stem = Path(m.path).stem.replace("__init__", "init").replace("_", "")
        file_lines = texts[m.path].count("\n") + 1
        kept.append(
            {
                "id": f"{pkg.name}-{stem}-L{m.line}-{m.operator.replace('_', '')}",
                "language": "python",
                "bug_class": BUG_CLASS[m.operator],
                "description": f"{m.operator} in {fname}() ({m.path}:{m.line}) of {pkg.name} {pkg.version}.",
                "test_command": command,
                "tags": ["mutant"],
                "split": "held_out",
                "expected_fix": {"path": m.path, "contains": fix_edit["new"]},
                "llm_fix": {"explanation": "Restore the original line.", "edits": [fix_edit]},
                "source": {
                    "package": pkg.name,
                    "version": pkg.version,
                    "sdist": pkg.sdist,
                    "sha256": pkg.sha256,
                    "mutation": mutation,
                },
                "shape": {
                    "function_lines": flen,
                    "file_lines": file_lines,
                    "distance": dist.get("distance"),
                    "failing_tests": len(dist.get("failed") or []),
                },
                "generated": {"seed": seed, "detected_by_command": outcome}
                | ({"batch": batch} if batch else {}),
            }
        )
    return kept


def outside_distances() -> dict[str, Any]:
    """Shape and call distance of every case of the outside corpus (``bench/outside``)."""
    from bench.outside.corpus import BY_NAME

    out: dict[str, Any] = {}
    for case in load_cases(None, ("outside",)):
        if case.source is None or "hang" in case.tags:
            continue
        pkg = BY_NAME[case.source["package"]]
        mutation = case.source["mutation"]
        tree = unpacked(pkg)
        text = (tree / mutation["path"]).read_text("utf-8")
        _, flen = enclosing_function(text, int(mutation["line"]))
        dist = _distance(tree, mutation, case.test_command)
        out[case.id] = {
            "function_lines": flen,
            "file_lines": text.count("\n") + 1,
            "distance": dist.get("distance"),
            "failing_tests": len(dist.get("failed") or []),
        }
        print(f"  {case.id}: {out[case.id]}", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    """Write ``cases.jsonl`` (unless ``--distances-only``) and ``distances.json``."""
    p = argparse.ArgumentParser(prog="python -m bench.context.build", description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=15)
    p.add_argument("--per-package", type=int, default=5)
    p.add_argument("--distances-only", action="store_true")
    p.add_argument("--packages", default="", help="comma-separated subset (default: all)")
    p.add_argument("--out", type=Path, default=CASES_JSONL, help="where the cases go (default cases.jsonl)")
    p.add_argument("--no-distances", action="store_true", help="do not rewrite distances.json")
    p.add_argument("--batch", default="", help='recorded as generated.batch (e.g. "session 6")')
    args = p.parse_args(argv)
    if not args.distances_only:
        wanted = {s for s in args.packages.split(",") if s}
        rows = [
            c
            for pkg in HELD_OUT_PACKAGES
            if not wanted or pkg.name in wanted
            for c in build_package(pkg, args.seed, args.per_package, args.batch)
        ]
        args.out.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows), encoding="utf-8")
        print(f"wrote {len(rows)} held-out cases to {args.out}", file=sys.stderr)
    if args.no_distances:
        return 0
    DISTANCES_JSON.write_text(
        json.dumps(outside_distances(), indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
