"""Sandbox overhead: wall time of a trivial command through LocalSandbox vs. run directly.

For each command (``true``, ``python3 -c pass``) and each variant, ``--runs`` timed runs after a
warm-up, measured on the host from just before the call to just after it returns:

* ``direct``: ``subprocess.run(["/bin/sh", "-c", CMD])`` with a minimal environment (the baseline);
* ``unsafe``: :class:`UnsafeLocalRunner` (same supervision, limits and output capture, no sandbox);
* ``sandbox-<mode>``: :class:`LocalSandbox` in each isolation mode that works on this machine.

Overhead is the sandbox's median (and p95) minus the direct median (p95). Writes
``bench/results/sandbox.json`` and replaces the ``## Sandbox`` section of ``bench/RESULTS.md``.

    python -m bench.sandbox.run [--runs 50] [--no-write]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, RESULTS_DIR, machine_info, markdown_table, percentile, today
from runners.sandbox import (
    SYSTEM_PATH,
    LocalSandbox,
    Privilege,
    SandboxUnavailable,
    UnsafeLocalRunner,
    sandbox_env,
)

COMMANDS = ("true", "python3 -c pass")
TARGET_MS = 50.0
SECTION = "## Sandbox"


def measure(calls: dict[str, Callable[[], object]], runs: int, warmup: int = 3) -> dict[str, list[float]]:
    """Wall-clock milliseconds of ``runs`` calls of each variant, after ``warmup`` untimed rounds.

    Rounds are interleaved (every variant once per round, in rotating order) so that load from
    other processes on the machine affects all variants alike.
    """
    names = list(calls)
    for _ in range(warmup):
        for name in names:
            calls[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_no in range(runs):
        shift = round_no % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            calls[name]()
            times[name].append((time.perf_counter() - start) * 1000)
    return times


def summary(times: list[float]) -> dict[str, float]:
    return {
        "median_ms": round(statistics.median(times), 2),
        "p95_ms": round(percentile(times, 95), 2),
        "min_ms": round(min(times), 2),
    }


def run_bench(runs: int) -> dict[str, Any]:
    """Measure every variant; return the JSON-ready result."""
    path = f"{Path(sys.base_prefix) / 'bin'}:{SYSTEM_PATH}"
    direct_env = sandbox_env(path, None, home=tempfile.gettempdir())
    variants: dict[str, Callable[[Path, str], object]] = {}

    def direct(ws: Path, command: str) -> object:
        return subprocess.run(["/bin/sh", "-c", command], cwd=ws, env=direct_env, check=True)

    variants["direct"] = direct
    unsafe = UnsafeLocalRunner(warn_stream=sys.stderr)
    variants["unsafe"] = functools.partial(unsafe.run, timeout_s=60)
    modes: dict[str, str] = {}
    privileges: tuple[Privilege, ...] = ("setpriv", "userns")
    for privilege in privileges:
        try:
            box = LocalSandbox(privilege=privilege)
            box.check()
        except SandboxUnavailable as exc:
            modes[privilege] = f"unavailable: {exc.message}"
            continue
        modes[privilege] = "ok"
        variants[f"sandbox-{privilege}"] = functools.partial(box.run, timeout_s=60)

    results: dict[str, dict[str, dict[str, float]]] = {}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="arcs-bench-sandbox-") as tmp:
        ws = Path(tmp)
        for command in COMMANDS:
            calls: dict[str, Callable[[], object]] = {
                name: functools.partial(call, ws, command) for name, call in variants.items()
            }
            results[command] = {name: summary(times) for name, times in measure(calls, runs).items()}
    overhead: dict[str, dict[str, dict[str, float]]] = {}
    for command, by_variant in results.items():
        base = by_variant["direct"]
        overhead[command] = {
            name: {
                "median_ms": round(stats["median_ms"] - base["median_ms"], 2),
                "p95_ms": round(stats["p95_ms"] - base["p95_ms"], 2),
            }
            for name, stats in by_variant.items()
            if name != "direct"
        }
    return {
        "date": today(),
        "runs": runs,
        "target_overhead_ms": TARGET_MS,
        "bwrap": _bwrap_version(),
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "modes": modes,
        "machine": machine_info(),
        "results": results,
        "overhead": overhead,
    }


def _bwrap_version() -> str:
    try:
        return subprocess.run(
            ["bwrap", "--version"], capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        return "not installed"


def render(result: dict[str, Any]) -> str:
    """The ``## Sandbox`` section of RESULTS.md."""
    rows = []
    for command, by_variant in result["results"].items():
        for name, stats in by_variant.items():
            extra = result["overhead"][command].get(name)
            rows.append(
                [
                    f"`{command}`",
                    name,
                    stats["median_ms"],
                    stats["p95_ms"],
                    extra["median_ms"] if extra else "-",
                    extra["p95_ms"] if extra else "-",
                ]
            )
    table = markdown_table(
        ["command", "variant", "median ms", "p95 ms", "overhead median ms", "overhead p95 ms"], rows
    )
    worst = max(
        (
            stats["median_ms"]
            for by in result["overhead"].values()
            for name, stats in by.items()
            if name != "unsafe"
        ),
        default=float("nan"),
    )
    verdict = "meets" if worst <= result["target_overhead_ms"] else "MISSES"
    machine = result["machine"]
    load = result["load_average_1min"]
    modes = ", ".join(f"{mode}: {state}" for mode, state in result["modes"].items())
    return "\n".join(
        [
            SECTION,
            "",
            f"Overhead of one sandboxed run (LocalSandbox, {result['bwrap']}) over the same trivial command run "
            f"directly: start to exit, measured on the host, {result['runs']} interleaved runs after 3 warm-ups, "
            f"{result['date']}, {machine['cpu']} ({machine['cpus_available']} CPUs), Python {machine['python']}, "
            f"1-minute load average {load[0]} before and {load[1]} after (other jobs shared the machine). "
            f"Modes: {modes}.",
            "",
            table,
            "",
            f"Worst median overhead of a sandbox mode: **{worst:.1f} ms**, which {verdict} the "
            f"{result['target_overhead_ms']:.0f} ms target. `unsafe` is UnsafeLocalRunner (same supervision and "
            "limits, no isolation), so `sandbox - unsafe` is what bubblewrap itself costs. Reproduce with "
            "`python -m bench.sandbox.run`; raw numbers in `bench/results/sandbox.json`.",
            "",
        ]
    )


def replace_section(document: str, section: str) -> str:
    """Replace the ``## Sandbox`` section of ``document`` (or append it), leaving the rest intact."""
    lines = document.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip() == SECTION), None)
    if start is None:
        prefix = document if document.endswith("\n") or not document else document + "\n"
        return prefix + ("\n" if prefix else "") + section
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    tail = "".join(lines[end:])
    return "".join(lines[:start]) + section + ("\n" + tail if tail else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--no-write", action="store_true", help="print only; do not update results files")
    args = parser.parse_args(argv)
    result = run_bench(args.runs)
    section = render(result)
    print(section)
    if not args.no_write:
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        (RESULTS_DIR / "sandbox.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        results_md = REPO_ROOT / "bench" / "RESULTS.md"
        existing = results_md.read_text(encoding="utf-8") if results_md.exists() else "# Benchmark results\n"
        results_md.write_text(replace_section(existing, section), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
