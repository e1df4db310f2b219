"""What the failing tests' call path costs and finds (issue #15, session 6).

Per case: the diagnosis command untraced and the traced run the loop makes
(:meth:`jobs.sandbox_workbench.SandboxWorkbench.spectrum`, whole suite or failing tests with
their neighbours, as the loop decides), alternately, ``--reps`` times each, in the real sandbox;
the ratio traced / untraced is per repetition (the machine is shared: never an absolute time).
Also where the ranking put the mutated line's function (:func:`jobs.repair.spectrum.suspects`,
the order the evidence follows): rank 1 = shown first.

    .venv/bin/python -m bench.context.trace_cost            # one case per package
    .venv/bin/python -m bench.context.trace_cost --cases 'pyflakes-*' --reps 3

Results: ``bench/results/trace_cost.json`` and the table printed (pasted into RESULTS.md).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import markdown_table
from bench.context.corpus import bench_cases, materialize_case, project_of, split_of
from bench.repair.corpus import Case

OUT = Path(__file__).resolve().parents[1] / "results" / "trace_cost.json"
SUITE_MAX_S = 20.0


def _mutated(case: Case, repo: Path) -> tuple[str, int] | None:
    """The mutated line (path, 1-based) of an outside case, else None."""
    mutation = (case.source or {}).get("mutation")
    if not mutation:
        return None
    lines = (repo / mutation["path"]).read_text(encoding="utf-8").split("\n")
    line = next((i + 1 for i, text in enumerate(lines) if text == mutation["mutated"]), 0)
    return (str(mutation["path"]), line) if line else None


def measure(case: Case, reps: int) -> dict[str, Any]:
    """One case: untraced and traced runs, alternately; the mutated function's rank."""
    from jobs.repair.spectrum import suspects
    from jobs.repair.spectrum_context import neighbours
    from jobs.sandbox_workbench import SandboxWorkbench
    from runners.commands import resolve_test_command
    from runners.factory import make_runner
    from runners.toolchains import toolchain_paths

    runner = make_runner(toolchain_paths=tuple(toolchain_paths([])))
    with tempfile.TemporaryDirectory(prefix="arcs-trace-cost-") as tmp:
        repo = materialize_case(case, Path(tmp) / case.id)
        resolved = resolve_test_command(repo, explicit=case.test_command)
        row: dict[str, Any] = {"id": case.id, "project": project_of(case), "split": split_of(case)}
        with SandboxWorkbench(repo, resolved, runner) as wb:
            untraced: list[float] = []
            traced: list[float] = []
            spectrum = None
            for _ in range(reps):
                t0 = time.monotonic()
                base = wb.run_tests(None, timeout_s=900)
                untraced.append(time.monotonic() - t0)
                suite = 0 < base.duration_s <= SUITE_MAX_S
                also = () if suite else neighbours(base.failed, base.passed)
                t0 = time.monotonic()
                spectrum = wb.spectrum(base.failed, suite=suite, timeout_s=900, also=also)
                traced.append(time.monotonic() - t0)
            row.update(
                tests=len(base.passed) + len(base.failed),
                failed=len(base.failed),
                untraced_s=[round(x, 2) for x in untraced],
                ratio=round(statistics.median(t / u for t, u in zip(traced, untraced, strict=True)), 2),
            )
            if spectrum is None:
                row["note"] = "not traced"
                return row
            row.update(scope=spectrum.scope, complete=spectrum.complete, note=spectrum.note)
            ranked = suspects(spectrum, wb.source())
            where = _mutated(case, repo)
            row["rank"] = next(
                (
                    i + 1
                    for i, s in enumerate(ranked)
                    if where and s.path == where[0] and s.start <= where[1] <= s.end
                ),
                None,
            )
            row["suspects"] = len(ranked)
    return row


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.context.trace_cost", description=__doc__.split("\n\n")[0]
    )
    p.add_argument(
        "--cases", default="", help="comma-separated globs (default: the first case of each package)"
    )
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    cases = [c for c in bench_cases() if project_of(c) != "ours"]
    if args.cases:
        globs = [g for g in args.cases.split(",") if g]
        cases = [c for c in cases if any(fnmatch.fnmatch(c.id, g) for g in globs)]
    else:
        firsts: dict[str, Case] = {}
        for c in cases:
            firsts.setdefault(project_of(c), c)
        cases = list(firsts.values())
    rows = []
    for case in cases:
        row = measure(case, args.reps)
        print(json.dumps(row), flush=True)
        rows.append(row)
    args.out.write_text(json.dumps({"reps": args.reps, "rows": rows}, indent=1) + "\n", encoding="utf-8")
    table = [
        [
            r["project"],
            r["id"],
            r["split"],
            r.get("tests", 0),
            r.get("scope", "–"),
            r["ratio"],
            r.get("rank") or "–",
        ]
        for r in rows
    ]
    print(
        markdown_table(
            [
                "project",
                "case",
                "split",
                "tests",
                "scope",
                "traced / untraced (median)",
                "rank of the mutated function",
            ],
            table,
        )
    )
    ratios = [r["ratio"] for r in rows]
    if ratios:
        print(
            f"\nmedian ratio {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f}) over {len(rows)} cases"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
