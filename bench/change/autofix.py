"""Formatter autofix on outside code: pinned PyPI sdists made green for ruff, then broken by a
seeded bad reformat in one commit; tier-0 autofix in the real sandbox must make the CI check pass.

    .venv/bin/python -m bench.change.autofix [--seed 14] [--per-package 6] [--label after]

Per package of :data:`bench.outside.corpus.PACKAGES` (the sdists come from the same pinned cache):

1. **green**: a copy of the sdist, ``ruff check --select I --fix .`` and ``ruff format .`` applied
   (the project "uses ruff"; its own configuration, if any, is kept), committed;
2. **red**: one seeded mutation of one source file, committed: ``indent2`` (4-space indentation
   of code lines -> 2), ``collapse`` (a multi-line statement joined into one line), ``spacing``
   (``, `` -> ``,`` and `` = `` -> ``=`` on code lines), ``quotes`` (double-quoted literals ->
   single), ``blank_lines`` (the blank lines before top-level definitions removed),
   ``trailing`` (trailing spaces on code lines), ``import_order`` (a stdlib import appended out
   of isort order; the lint half of the check). A mutant is kept only if it still parses and the
   check fails on it;
3. the CI check ``ruff check --select I . && ruff format --check .`` runs in the sandbox on red
   (its own time), then :func:`jobs.repair.tier0.autofix.autofix` runs with the files changed
   since green (:func:`jobs.history.read_changeset`), and every ``fixed`` is re-checked
   outside the loop: the change applied to a fresh copy, the check run directly on the host.

Writes ``bench/change/results/autofix-<label>.json`` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tokenize
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

from bench.outside.corpus import PACKAGES, Package, unpacked
from jobs.command_bench import SandboxCommandBench
from jobs.history import read_changeset
from jobs.repair.tier0.autofix import autofix
from jobs.sandbox_workbench import write_change
from runners.factory import make_runner

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
CHECK = "ruff check --select I . && ruff format --check ."
GREEN = "ruff check --select I --fix . && ruff format ."
RUFF_BIN = Path(sys.prefix) / "bin"
KINDS = ("indent2", "collapse", "spacing", "quotes", "blank_lines", "trailing", "import_order")
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@arcs.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@arcs.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
}


@dataclass(frozen=True)
class Case:
    package: str
    path: str
    kind: str
    lines_changed: int


# -- mutations (text -> text | None) -------------------------------------------------------------


def _string_lines(text: str) -> set[int]:
    """1-based lines inside (not starting) a multi-line string token: never touched."""
    inside: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
            inside.update(range(tok.start[0] + 1, tok.end[0] + 1))
    return inside


def _code_lines(text: str) -> list[int]:
    skip = _string_lines(text)
    return [i for i, line in enumerate(text.split("\n"), 1) if line.strip() and i not in skip]


def indent2(text: str, rng: random.Random) -> str | None:
    skip = _string_lines(text)
    out = []
    for i, line in enumerate(text.split("\n"), 1):
        n = len(line) - len(line.lstrip(" "))
        out.append(line if i in skip or n % 4 else " " * (n // 2) + line[n:])
    return "\n".join(out)


def collapse(text: str, rng: random.Random) -> str | None:
    tree = ast.parse(text)
    lines = text.split("\n")
    skip = _string_lines(text)
    spans = [
        (n.lineno, n.end_lineno or n.lineno)
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign | ast.Expr | ast.Return)
        and (n.end_lineno or n.lineno) > n.lineno
        and not any(i in skip for i in range(n.lineno, (n.end_lineno or n.lineno) + 1))
        and not any("#" in lines[i - 1] for i in range(n.lineno, (n.end_lineno or n.lineno) + 1))
    ]
    if not spans:
        return None
    first, last = rng.choice(spans)
    head = lines[first - 1]
    joined = head.rstrip() + " " + " ".join(ln.strip() for ln in lines[first:last])
    return "\n".join([*lines[: first - 1], joined, *lines[last:]])


def spacing(text: str, rng: random.Random) -> str | None:
    lines = text.split("\n")
    code = [i for i in _code_lines(text) if not re.search(r"[\"'#]", lines[i - 1])]
    picked = [i for i in code if ", " in lines[i - 1] or " = " in lines[i - 1]]
    if not picked:
        return None
    for i in rng.sample(picked, min(6, len(picked))):
        lines[i - 1] = lines[i - 1].replace(", ", ",").replace(" = ", "=")
    return "\n".join(lines)


def quotes(text: str, rng: random.Random) -> str | None:
    lines = text.split("\n")
    edits = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        s = tok.string
        if (
            tok.type == tokenize.STRING
            and tok.start[0] == tok.end[0]
            and s.startswith('"')
            and not s.startswith('"""')
            and "'" not in s
            and "\\" not in s
        ):
            edits.append((tok.start, tok.end))
    if not edits:
        return None
    for (row, col), (_, end) in sorted(rng.sample(edits, min(8, len(edits))), reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + "'" + line[col + 1 : end - 1] + "'" + line[end:]
    return "\n".join(lines)


def blank_lines(text: str, rng: random.Random) -> str | None:
    lines = text.split("\n")
    tops = [n.lineno for n in ast.parse(text).body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
    if not tops:
        return None
    starts = set()
    for n in ast.parse(text).body:
        if isinstance(n, ast.FunctionDef | ast.ClassDef):
            starts.add(min([n.lineno, *(d.lineno for d in n.decorator_list)]))
    out: list[str] = []
    for i, line in enumerate(lines, 1):
        out.append(line)
        if i + 1 in starts:
            while len(out) > 1 and not out[-1].strip():
                out.pop()
    return "\n".join(out)


def trailing(text: str, rng: random.Random) -> str | None:
    lines = text.split("\n")
    code = _code_lines(text)
    for i in rng.sample(code, min(8, len(code))):
        lines[i - 1] += "   "
    return "\n".join(lines)


def import_order(text: str, rng: random.Random) -> str | None:
    tree = ast.parse(text)
    imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    names = {a.name for n in imports if isinstance(n, ast.Import) for a in n.names}
    free = [m for m in ("abc", "array", "ast", "base64") if m not in names]
    if not imports or not free:
        return None
    last = max(n.end_lineno or n.lineno for n in imports)
    lines = text.split("\n")
    return "\n".join([*lines[:last], f"import {free[0]}", *lines[last:]])


MUTATORS: dict[str, Callable[[str, random.Random], str | None]] = {
    "indent2": indent2,
    "collapse": collapse,
    "spacing": spacing,
    "quotes": quotes,
    "blank_lines": blank_lines,
    "trailing": trailing,
    "import_order": import_order,
}


# -- the run ------------------------------------------------------------------------------------


def sh(cwd: Path, command: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": f"{RUFF_BIN}:/usr/bin:/bin", "HOME": str(cwd), "NO_COLOR": "1", **GIT_ENV}
    return subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def green_copy(pkg: Package, dest: Path) -> Path:
    shutil.copytree(unpacked(pkg), dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    sh(dest, GREEN)
    if sh(dest, CHECK).returncode != 0:
        raise RuntimeError(f"{pkg.name}: the green copy does not pass {CHECK!r}")
    sh(dest, "git init -q && git add -A && git commit -q -m green")
    return dest


def run_package(
    pkg: Package, per_package: int, seed: int, work: Path, bench_runner: Any
) -> list[dict[str, Any]]:
    rng = random.Random(f"{seed}:{pkg.name}")
    green = green_copy(pkg, work / f"{pkg.name}-green")
    files = sorted(pkg.targets)
    rows: list[dict[str, Any]] = []
    kinds = list(KINDS)
    rng.shuffle(kinds)
    tries = 0
    while len(rows) < per_package and tries < per_package * 4:
        kind = kinds[tries % len(kinds)]
        tries += 1
        path = rng.choice(files)
        before = (green / path).read_text()
        after = MUTATORS[kind](before, rng)
        if after is None or after == before:
            continue
        try:
            ast.parse(after)
        except SyntaxError:
            continue
        repo = work / f"{pkg.name}-{len(rows)}"
        shutil.copytree(green, repo, symlinks=True)
        (repo / path).write_text(after)
        if sh(repo, CHECK).returncode == 0:
            shutil.rmtree(repo)
            continue
        sh(repo, f"git commit -q -am {kind}")
        rows.append(run_case(pkg, repo, path, kind, before, after, bench_runner))
        shutil.rmtree(repo)
    return rows


def run_case(
    pkg: Package, repo: Path, path: str, kind: str, before: str, after: str, runner: Any
) -> dict[str, Any]:
    changes = read_changeset(repo, "HEAD~1")
    bench = SandboxCommandBench(repo, runner)
    own = bench.run_command(CHECK, timeout_s=120)
    start = time.monotonic()
    result = autofix(bench, CHECK, changed_files=changes.paths, timeout_s=120)
    wall = time.monotonic() - start
    rechecked = False
    identical = False
    if result.fixed and result.change is not None:
        with tempfile.TemporaryDirectory() as tmp:
            fresh = Path(tmp) / "r"
            shutil.copytree(repo, fresh, symlinks=True)
            write_change(fresh, result.change)
            rechecked = sh(fresh, CHECK).returncode == 0
            identical = (fresh / path).read_text() == before
    return {
        "package": pkg.name,
        "path": path,
        "kind": kind,
        "lines_changed": sum(a != b for a, b in zip(before.split("\n"), after.split("\n"), strict=False))
        + abs(before.count("\n") - after.count("\n")),
        "check_fails_on_red": not own.ok,
        "fixed": result.fixed,
        "rechecked": rechecked,
        "false_fixed": result.fixed and not rechecked,
        "identical_to_green": identical,
        "scope": result.attempts[-1].scope if result.attempts else "",
        "files": list(result.change.paths) if result.change else [],
        "runs": result.runs,
        "check_s": round(own.duration_s, 3),
        "autofix_s": round(wall, 3),
        "autofix_runs_s": round(
            sum(a.fix.duration_s + (a.check.duration_s if a.check else 0) for a in result.attempts), 3
        ),
        "reason": result.reason,
    }


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    fixed = sum(r["fixed"] for r in rows)
    ratios = [r["autofix_s"] / r["check_s"] for r in rows if r["check_s"] > 0]
    run_ratios = [r["autofix_runs_s"] / r["check_s"] for r in rows if r["check_s"] > 0]
    return {
        "cases": n,
        "fixed": fixed,
        "fix_rate": round(fixed / n, 3) if n else 0.0,
        "rechecked": sum(r["rechecked"] for r in rows),
        "false_fixed": sum(r["false_fixed"] for r in rows),
        "changed_scope": sum(r["scope"] == "changed" and r["fixed"] for r in rows),
        "identical_to_green": sum(r["identical_to_green"] for r in rows),
        "median_check_s": round(median(r["check_s"] for r in rows), 3) if rows else 0.0,
        "median_autofix_s": round(median(r["autofix_s"] for r in rows), 3) if rows else 0.0,
        "median_ratio": round(median(ratios), 2) if ratios else 0.0,
        "median_runs_ratio": round(median(run_ratios), 2) if run_ratios else 0.0,
        "median_runs": median(r["runs"] for r in rows) if rows else 0,
    }


def table(rows: list[dict[str, Any]]) -> str:
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(r["kind"], []).append(r)
    out = [
        "| mutation | cases | fixed | re-checked | false-fixed | changed files only | identical to green "
        "| autofix / check (wall) | (sandboxed runs only) |",
        "| :--- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for kind in [*sorted(by), "all"]:
        group = rows if kind == "all" else by[kind]
        s = summarize(group)
        out.append(
            f"| {kind} | {s['cases']} | {s['fixed']} | {s['rechecked']} | {s['false_fixed']} | "
            f"{s['changed_scope']} | {s['identical_to_green']} | {s['median_ratio']}x | {s['median_runs_ratio']}x |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--per-package", type=int, default=6)
    parser.add_argument("--label", default="after")
    args = parser.parse_args(argv)
    runner = make_runner(toolchain_paths=[Path(sys.prefix)])
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="arcs-bench-change-") as tmp:
        for pkg in PACKAGES:
            rows += run_package(pkg, args.per_package, args.seed, Path(tmp), runner)
            print(f"{pkg.name}: {sum(r['package'] == pkg.name for r in rows)} cases", file=sys.stderr)
    ruff = sh(Path.cwd(), "ruff --version").stdout.strip()
    doc = {
        "label": args.label,
        "seed": args.seed,
        "check": CHECK,
        "tool": ruff,
        "summary": summarize(rows),
        "cases": rows,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"autofix-{args.label}.json").write_text(json.dumps(doc, indent=2) + "\n")
    print(table(rows))
    print(json.dumps(doc["summary"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
