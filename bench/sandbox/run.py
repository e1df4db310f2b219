"""Sandbox overhead: wall time of a trivial command through LocalSandbox vs. run directly.

For each command (``true``, ``python3 -c pass``) and each variant, ``--runs`` timed runs after a
warm-up, measured on the host from just before the call to just after it returns:

* ``direct``: ``subprocess.run(["/bin/sh", "-c", CMD])`` with a minimal environment (the baseline);
* ``unsafe``: :class:`UnsafeLocalRunner` (same supervision, limits and output capture, no sandbox);
* ``sandbox-<mode>``: :class:`LocalSandbox` in each isolation mode that works on this machine, with
  only the rlimits (the sandbox before per-run limits: ``SandboxLimits.off()``);
* ``sandbox-<mode>+limits``: the same with the default per-run limits (#22): its cgroups (created,
  entered before bwrap starts, read and removed per run) and the disk quota's watcher.

Overhead is the sandbox's median (and p95) minus the direct median (p95); the cost of the limits is
the ratio ``+limits`` / plain, same run. Because the disk watcher walks the workspace (at the start
and the end of a run), ``true`` also runs in a workspace holding a copy of this repository's tracked
files. Last, what the sandbox's tmpfs costs in RAM: the run's cgroup memory peak with and without
32 MiB written to ``/tmp``. Writes ``bench/results/sandbox.json`` and replaces the ``## Sandbox``
section of ``bench/RESULTS.md``.

    python -m bench.sandbox.run [--runs 50] [--no-write]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, RESULTS_DIR, git, machine_info, markdown_table, percentile, today
from runners.limits import SandboxLimits
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
    mechanisms: dict[str, str] = {}
    limited: LocalSandbox | None = None
    privileges: tuple[Privilege, ...] = ("setpriv", "userns")
    for privilege in privileges:
        try:
            box = LocalSandbox(privilege=privilege, limits=SandboxLimits.off())
            box.check()
            with_limits = LocalSandbox(privilege=privilege, limits=SandboxLimits())
            with_limits.check()
        except SandboxUnavailable as exc:
            modes[privilege] = f"unavailable: {exc.message}"
            continue
        modes[privilege] = "ok"
        mechanisms = with_limits.limit_mechanisms()
        limited = limited or with_limits
        variants[f"sandbox-{privilege}"] = functools.partial(box.run, timeout_s=60)
        variants[f"sandbox-{privilege}+limits"] = functools.partial(with_limits.run, timeout_s=60)

    results: dict[str, dict[str, dict[str, float]]] = {}
    uptime_before = _uptime()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="arcs-bench-sandbox-") as tmp:
        ws = Path(tmp) / "empty"
        ws.mkdir()
        for command in COMMANDS:
            calls: dict[str, Callable[[], object]] = {
                name: functools.partial(call, ws, command) for name, call in variants.items()
            }
            results[command] = {name: summary(times) for name, times in measure(calls, runs).items()}
        repo_ws, files = _repo_copy(Path(tmp) / "repo")
        sandboxes = {name: call for name, call in variants.items() if name.startswith("sandbox-")}
        calls = {name: functools.partial(call, repo_ws, "true") for name, call in sandboxes.items()}
        results[REPO_SCENARIO] = {name: summary(times) for name, times in measure(calls, runs).items()}
        tmpfs = _tmpfs_ram(limited, Path(tmp) / "tmpfs") if limited is not None else {}
    overhead: dict[str, dict[str, dict[str, float]]] = {}
    for command, by_variant in results.items():
        if "direct" not in by_variant:
            continue
        base = by_variant["direct"]
        overhead[command] = {
            name: {
                "median_ms": round(stats["median_ms"] - base["median_ms"], 2),
                "p95_ms": round(stats["p95_ms"] - base["p95_ms"], 2),
            }
            for name, stats in by_variant.items()
            if name != "direct"
        }
    ratios = {
        scenario: {
            name: round(by_variant[f"{name}+limits"]["median_ms"] / by_variant[name]["median_ms"], 2)
            for name in by_variant
            if f"{name}+limits" in by_variant and by_variant[name]["median_ms"] > 0
        }
        for scenario, by_variant in results.items()
    }
    return {
        "date": today(),
        "runs": runs,
        "target_overhead_ms": TARGET_MS,
        "bwrap": _bwrap_version(),
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "uptime": [uptime_before, _uptime()],
        "modes": modes,
        "limits": mechanisms,
        "repo_files": files,
        "machine": machine_info(),
        "results": results,
        "overhead": overhead,
        "limits_ratio": ratios,
        "tmpfs_ram": tmpfs,
    }


REPO_SCENARIO = "true (workspace: this repository's tracked files)"


def _repo_copy(dest: Path) -> tuple[Path, int]:
    """A copy of this repository's tracked files (what the disk watcher walks in a real run)."""
    names = [n for n in git(REPO_ROOT, "ls-files", "-z").split("\0") if n]
    copied = 0
    for name in names:
        source = REPO_ROOT / name
        if source.is_file() and not source.is_symlink():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            copied += 1
    return dest, copied


def _tmpfs_ram(box: LocalSandbox, ws: Path) -> dict[str, int]:
    """The run's cgroup memory peak (bytes) with nothing and with 32 MiB written to /tmp."""
    ws.mkdir()
    quiet = box.run(ws, "true", timeout_s=60).usage.get("memory_peak_bytes", -1)
    written = box.run(ws, "head -c 32M /dev/zero > /tmp/fill", timeout_s=60).usage.get(
        "memory_peak_bytes", -1
    )
    return {"memory_peak_true_bytes": quiet, "memory_peak_32mib_in_tmp_bytes": written}


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""


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
            extra = result["overhead"].get(command, {}).get(name)
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
            if name != "unsafe" and not name.endswith("+limits")
        ),
        default=float("nan"),
    )
    ratio_rows = [
        [
            f"`{scenario}`" if scenario in COMMANDS else scenario,
            name,
            result["results"][scenario][name]["median_ms"],
            result["results"][scenario][f"{name}+limits"]["median_ms"],
            f"**{ratio:.2f}x**",
        ]
        for scenario, by_mode in result["limits_ratio"].items()
        for name, ratio in by_mode.items()
    ]
    ratio_table = markdown_table(
        ["command", "mode", "median ms, rlimits only", "median ms, +limits", "ratio"], ratio_rows
    )
    tmpfs = result.get("tmpfs_ram") or {}
    mib = 1 << 20
    tmpfs_line = (
        f"RAM of the temp space: the run's cgroup memory peak was {tmpfs['memory_peak_true_bytes'] / mib:.1f} MiB "
        f"for `true` and {tmpfs['memory_peak_32mib_in_tmp_bytes'] / mib:.1f} MiB after writing 32 MiB to `/tmp`: "
        "tmpfs costs the RAM of what is written to it (nothing up front), charged to the run's memory limit."
        if tmpfs.get("memory_peak_true_bytes", -1) >= 0
        and tmpfs.get("memory_peak_32mib_in_tmp_bytes", -1) >= 0
        else "RAM of the temp space: not measured (no memory cgroup here)."
    )
    limits = "; ".join(f"{k}: {v}" for k, v in result.get("limits", {}).items())
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
            f"Worst median overhead of a sandbox mode (rlimits only): **{worst:.1f} ms**, which {verdict} the "
            f"{result['target_overhead_ms']:.0f} ms target. `unsafe` is UnsafeLocalRunner (same supervision and "
            "limits, no isolation), so `sandbox - unsafe` is what bubblewrap itself costs. Reproduce with "
            "`python -m bench.sandbox.run`; raw numbers in `bench/results/sandbox.json`.",
            "",
            "### Per-run limits (#22)",
            "",
            f"Start-to-exit cost of the per-run limits (`+limits`: default `SandboxLimits`; {limits}) against "
            "the same sandbox with the rlimits only, same interleaved runs; the last rows run `true` in a "
            f"workspace holding {result.get('repo_files', 0)} files (this repository's tracked files), which "
            f"the disk watcher walks at the start and the end of the run. `uptime` before: "
            f"`{result.get('uptime', ['', ''])[0]}`; after: `{result.get('uptime', ['', ''])[1]}`.",
            "",
            ratio_table,
            "",
            tmpfs_line,
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
