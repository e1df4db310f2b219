"""Build the outside corpus: seeded mutants of pinned PyPI packages that their own tests detect.

    .venv/bin/python -m bench.outside.build [--seed 10] [--per-package 6] [--dry-run]

For every package of :data:`bench.outside.corpus.PACKAGES`, every single-line site inside a
function of a mutated source file is a candidate mutation under six classic operators:

* ``cmp_boundary`` ``<``/``<=``, ``>``/``>=`` swapped; ``cmp_negate`` ``==``/``!=``, ``is``/``is not``,
  ``in``/``not in`` swapped (comparison swap);
* ``const_off_by_one`` a small integer constant ``n`` becomes ``n + 1`` (or ``n - 1``);
* ``negate_cond`` an ``if``/``while``/conditional-expression test ``t`` becomes ``not t``;
* ``arith_swap`` ``+``/``-`` and ``*``/``//`` swapped;
* ``remove_not`` ``not x`` becomes ``x``;
* ``bool_swap`` ``and``/``or`` swapped.

The candidates are shuffled with ``random.Random(f"{seed}:{package}")``, the operators taking turns
(small integer constants would otherwise dominate), and tried in that order;
a mutant is kept when the case's test command, run directly, fails with test failures (pytest
exit 1) within 30 s. At most one mutant that makes the suite hang (timeout) is kept per package,
tagged ``hang``. At most one mutant per function is kept. Each kept mutant gets, from the same
seeded generator, a test command as a CI would run it (half ``-x``, some ``--maxfail=1``, the
rest plain) and a split: kept mutants alternate ``tuning`` / ``held_out`` in their seeded order,
so the split is fixed before ARCS ever sees a case. The output is
``bench/outside/cases/<id>/case.json`` (metadata only; the sources come from the pinned sdist).
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.outside.corpus import HERE, PACKAGES, Package, apply_mutation, unpacked
from bench.repair.isolate import direct_env, run_command

CASES = HERE / "cases"
DETECT_TIMEOUT_S = 30.0
BUG_CLASS = {
    "cmp_boundary": "off_by_one",
    "cmp_negate": "wrong_operator",
    "const_off_by_one": "off_by_one",
    "negate_cond": "negated_condition",
    "arith_swap": "wrong_operator",
    "remove_not": "negated_condition",
    "bool_swap": "wrong_operator",
}
_CMP = {
    ast.Lt: ("<", "<=", "cmp_boundary"),
    ast.LtE: ("<=", "<", "cmp_boundary"),
    ast.Gt: (">", ">=", "cmp_boundary"),
    ast.GtE: (">=", ">", "cmp_boundary"),
    ast.Eq: ("==", "!=", "cmp_negate"),
    ast.NotEq: ("!=", "==", "cmp_negate"),
    ast.Is: ("is", "is not", "cmp_negate"),
    ast.IsNot: ("is not", "is", "cmp_negate"),
    ast.In: ("in", "not in", "cmp_negate"),
    ast.NotIn: ("not in", "in", "cmp_negate"),
}
_ARITH = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "//"), ast.FloorDiv: ("//", "*")}


@dataclass(frozen=True)
class Mutant:
    """One single-line mutation of a source file."""

    path: str
    line: int
    original: str
    mutated: str
    operator: str
    function: str


def _replace_token(segment: str, old: str, new: str) -> str | None:
    """``segment`` with its one operator token ``old`` replaced (None when not exactly one)."""
    word = old[0].isalpha()
    pattern = r"(?<![\w])" + re.escape(old).replace(r"\ ", r"\s+") + r"(?![\w])" if word else re.escape(old)
    if not word:
        # Do not take '<' out of '<=' or '*' out of '**'.
        pattern = r"(?<![<>=!*/])" + pattern + r"(?![=*/])"
    hits = list(re.finditer(pattern, segment))
    if len(hits) != 1:
        return None
    m = hits[0]
    return segment[: m.start()] + new + segment[m.end() :]


def _splice(line: bytes, start: int, end: int, text: str) -> str:
    return (line[:start] + text.encode() + line[end:]).decode()


def _functions(tree: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node.name, node


def mutants_of(rel: str, text: str) -> list[Mutant]:
    """Every mutant of ``text`` (the file ``rel``) under the six operators, in source order."""
    tree = ast.parse(text)
    lines = text.split("\n")
    out: dict[tuple[int, str, str], Mutant] = {}
    for fname, func in _functions(tree):
        for node in ast.walk(func):
            # An if/while statement spans lines: its test must fit on one.
            anchor = node.test if isinstance(node, ast.If | ast.While) else node
            lineno = getattr(anchor, "lineno", None)
            if lineno is None or lineno != getattr(anchor, "end_lineno", None):
                continue
            raw = lines[lineno - 1].encode()
            for new_line, op in _node_mutants(node, raw):
                if new_line is not None and new_line != raw.decode():
                    m = Mutant(rel, lineno, raw.decode(), new_line, op, fname)
                    out.setdefault((m.line, m.mutated, op), m)
    return [out[k] for k in sorted(out)]


def _node_mutants(node: ast.AST, raw: bytes) -> Iterator[tuple[str | None, str]]:
    def text(n: ast.AST) -> str:
        return raw[n.col_offset : n.end_col_offset].decode()  # type: ignore[attr-defined]

    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMP:
        old, new, op = _CMP[type(node.ops[0])]
        a, b = node.left.end_col_offset, node.comparators[0].col_offset
        assert a is not None
        seg = _replace_token(raw[a:b].decode(), old, new)
        if seg is not None:
            yield _splice(raw, a, b, seg), op
    elif isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
        if any(isinstance(s, ast.Constant) and isinstance(s.value, str) for s in (node.left, node.right)):
            return
        if isinstance(node.left, ast.JoinedStr) or isinstance(node.right, ast.JoinedStr):
            return
        old, new = _ARITH[type(node.op)]
        a, b = node.left.end_col_offset, node.right.col_offset
        assert a is not None
        seg = _replace_token(raw[a:b].decode(), old, new)
        if seg is not None:
            yield _splice(raw, a, b, seg), "arith_swap"
    elif isinstance(node, ast.BoolOp) and len(node.values) == 2:
        old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        a, b = node.values[0].end_col_offset, node.values[1].col_offset
        assert a is not None
        seg = _replace_token(raw[a:b].decode(), old, new)
        if seg is not None:
            yield _splice(raw, a, b, seg), "bool_swap"
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        body = text(node)
        if body.startswith("not"):
            assert node.end_col_offset is not None
            yield _splice(raw, node.col_offset, node.end_col_offset, body[3:].lstrip()), "remove_not"
    elif isinstance(node, ast.If | ast.While | ast.IfExp) and node.test.lineno == node.test.end_lineno:
        test = node.test
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return  # remove_not covers it
        t = text(test)
        neg = f"not {t}" if isinstance(test, ast.Name | ast.Call | ast.Attribute) else f"not ({t})"
        assert test.end_col_offset is not None
        yield _splice(raw, test.col_offset, test.end_col_offset, neg), "negate_cond"
    elif isinstance(node, ast.Constant) and type(node.value) is int and 0 <= node.value <= 8:
        assert node.end_col_offset is not None
        if text(node) == str(node.value):
            # The direction is a property of the site (deterministic without a generator).
            bumped = node.value + 1 if node.value == 0 or node.lineno % 2 else node.value - 1
            yield _splice(raw, node.col_offset, node.end_col_offset, str(bumped)), "const_off_by_one"


def _command(pkg: Package, target: str, rng: random.Random) -> tuple[str, bool]:
    r = rng.random()
    flag = "-x " if r < 0.5 else "--maxfail=1 " if r < 0.65 else ""
    extra = f"{pkg.pytest_args} " if pkg.pytest_args else ""
    return f"python -m pytest -q {flag}{extra}{target}", bool(flag)


def _detect(pkg: Package, m: Mutant, command: str) -> tuple[str, str]:
    """``("fail" | "pass" | "hang" | "error", output tail)`` of ``command`` on the mutated tree."""
    with tempfile.TemporaryDirectory(prefix="arcs-outside-") as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(unpacked(pkg), repo)
        apply_mutation(repo, {"path": m.path, "line": m.line, "original": m.original, "mutated": m.mutated})
        code, _, out = run_command(command, repo, direct_env(Path(tmp)), DETECT_TIMEOUT_S)
    if code is None:
        return "hang", out
    if code == 0:
        return "pass", out
    if code == 1 and re.search(r"\d+ failed", out):
        return "fail", out
    return "error", out


def _fix_edit(tree: Path, m: Mutant) -> dict[str, Any]:
    """A replace edit restoring the original line, with enough context to be unique."""
    lines = (tree / m.path).read_text(encoding="utf-8").split("\n")
    lines[m.line - 1] = m.mutated
    text = "\n".join(lines)
    i = m.line - 1
    for ctx in range(0, 6):
        lo, hi = max(0, i - ctx), min(len(lines), i + ctx + 1)
        old = "\n".join(lines[lo:hi])
        new = "\n".join([*lines[lo:i], m.original, *lines[i + 1 : hi]])
        # Unique in the broken file, and the fixed text absent from it (it is `expected_fix.contains`).
        if text.count(old) == 1 and new not in text:
            return {"path": m.path, "kind": "replace", "old": old, "new": new}
    raise ValueError(f"{m.path}:{m.line}: no unique context")


def _interleave(mutants: list[Mutant], rng: random.Random) -> list[Mutant]:
    """Seeded order, operators taking turns (constants would otherwise dominate every sample)."""
    by_op: dict[str, list[Mutant]] = {}
    for m in mutants:
        by_op.setdefault(m.operator, []).append(m)
    ops = sorted(by_op)
    rng.shuffle(ops)
    for op in ops:
        rng.shuffle(by_op[op])
    out: list[Mutant] = []
    while any(by_op.values()):
        for op in ops:
            if by_op[op]:
                out.append(by_op[op].pop(0))
    return out


def build_package(pkg: Package, seed: int, per_package: int, log: bool = True) -> list[dict[str, Any]]:
    """The kept cases of one package (see the module docstring)."""
    tree = unpacked(pkg)
    rng = random.Random(f"{seed}:{pkg.name}")
    every = [m for rel in sorted(pkg.targets) for m in mutants_of(rel, (tree / rel).read_text("utf-8"))]
    candidates = _interleave(every, rng)
    kept: list[dict[str, Any]] = []
    used_functions: set[tuple[str, str]] = set()
    hangs = tried = 0
    for m in candidates:
        if len(kept) >= per_package or tried >= 8 * per_package:
            break
        if (m.path, m.function) in used_functions:
            continue
        command, fail_fast = _command(pkg, pkg.targets[m.path], rng)
        tried += 1
        outcome, _ = _detect(pkg, m, command)
        if log:
            print(f"  {pkg.name} {m.operator:16} {m.path}:{m.line} -> {outcome}", file=sys.stderr)
        if outcome == "hang" and hangs == 0:
            hangs += 1
        elif outcome != "fail":
            continue
        used_functions.add((m.path, m.function))
        fix_edit = _fix_edit(tree, m)
        stem = Path(m.path).stem.replace("__init__", "init").replace("_", "")
        cid = f"{pkg.name}-{stem}-L{m.line}-{m.operator.replace('_', '')}"
        tags = ["mutant"] + (["fail_fast"] if fail_fast else []) + (["hang"] if outcome == "hang" else [])
        kept.append(
            {
                "id": cid,
                "language": "python",
                "bug_class": BUG_CLASS[m.operator],
                "description": f"{m.operator} in {m.function}() ({m.path}:{m.line}) of {pkg.name} {pkg.version}.",
                "test_command": command,
                "tags": tags,
                "split": "tuning" if len(kept) % 2 == 0 else "held_out",
                "expected_fix": {"path": m.path, "contains": fix_edit["new"]},
                "llm_fix": {"explanation": "Restore the original line.", "edits": [fix_edit]},
                "source": {
                    "package": pkg.name,
                    "version": pkg.version,
                    "sdist": pkg.sdist,
                    "sha256": pkg.sha256,
                    "mutation": {
                        "path": m.path,
                        "line": m.line,
                        "function": m.function,
                        "operator": m.operator,
                        "original": m.original,
                        "mutated": m.mutated,
                    },
                },
                "generated": {"seed": seed, "detected_by_command": outcome},
            }
        )
    return kept


def main(argv: list[str] | None = None) -> int:
    """Build (or rebuild) ``bench/outside/cases``."""
    p = argparse.ArgumentParser(prog="python -m bench.outside.build", description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=10)
    p.add_argument("--per-package", type=int, default=6)
    p.add_argument("--dry-run", action="store_true", help="print the cases, write nothing")
    args = p.parse_args(argv)
    cases = [c for pkg in PACKAGES for c in build_package(pkg, args.seed, args.per_package)]
    if args.dry_run:
        print(json.dumps(cases, indent=1))
        return 0
    if CASES.is_dir():
        shutil.rmtree(CASES)
    for c in cases:
        folder = CASES / c["id"]
        folder.mkdir(parents=True)
        (folder / "case.json").write_text(json.dumps(c, indent=2) + "\n", encoding="utf-8")
    split = {s: sum(1 for c in cases if c["split"] == s) for s in ("tuning", "held_out")}
    print(f"wrote {len(cases)} cases to {CASES} ({split})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
