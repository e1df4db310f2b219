"""Issue #25's structure numbers, before and after: one command, one JSON file per label.

    python -m bench.structure.run --label before            # writes bench/structure/results/before.json
    python -m bench.structure.run --label after --compare before
    python -m bench.structure.run --no-profile --no-write   # static part only, printed

Measured (see ``static.py`` for how, ``spec.json`` for the hand-made lists, ``README.md``):

1. modules whose code / functions run in ``arcs fix --tier 0`` of the bundled sample's one-line bug
   (``profile_fix.py`` in a child process, so the imports are this checkout's and fresh);
2. lines of the controller (the parts ``spec.json`` names);
3. type conversions between the request and the loop, ``.arcs.yml`` reads, test-command
   resolutions (hand-made lists, each entry anchored in the code);
4. where the budget is written and where the trace is written (AST);
5. files touched by the three "how to add" exercises (hand-made, anchored), and the automatic
   proxies: files keyed by a framework's name, the registries naming one actor;
6. upward imports ``runners``/``indexing`` -> ``jobs``/``bot``; import cycles counting
   ``TYPE_CHECKING`` imports; test-path rules; repeated file names and Protocols; getattr/isinstance
   probes in the controller; functions over 100 lines; compatibility layers and who imports them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.structure import static

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def _git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", *args], cwd=static.ROOT, check=True, capture_output=True, text=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def profile(unsafe: bool) -> dict[str, Any]:
    """Run ``profile_fix`` in a child with this checkout first on ``PYTHONPATH``."""
    env = {
        **os.environ,
        "PYTHONPATH": str(static.ROOT),
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    cmd = [sys.executable, "-m", "bench.structure.profile_fix", *(["--unsafe-no-sandbox"] if unsafe else [])]
    done = subprocess.run(cmd, cwd=static.ROOT, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"profile_fix failed ({done.returncode}): {done.stderr[-2000:]}")
    data: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    fixed = any("FIXED" in line for line in data["output"])
    return {
        "command": data["command"],
        "rc": data["rc"],
        "fixed": fixed,
        "output": data["output"],
        "modules_code_ran": len(data["modules_code"]),
        "modules_functions_ran": len(data["modules_functions"]),
        "modules_imported": len(data["modules_imported"]),
        "by_package": _by_package(data["modules_code"]),
        "not_from_this_checkout": data["not_from_this_checkout"],
        "list_code_ran": data["modules_code"],
        "imported_but_no_function_ran": sorted(set(data["modules_code"]) - set(data["modules_functions"])),
    }


def _by_package(modules: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for m in modules:
        key = "jobs.repair" if m.startswith("jobs.repair") else m.split(".")[0]
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))


def measure(spec: dict[str, Any], *, with_profile: bool) -> dict[str, Any]:
    """Every number of the module docstring."""
    modules = static.product_modules()
    by_rel = {m.rel: m for m in modules}
    out: dict[str, Any] = {
        "label": "",
        "commit": _git("rev-parse", "HEAD"),
        "dirty": bool(_git("status", "--porcelain", "--", "bot", "jobs", "runners", "indexing")),
        "load": os.getloadavg(),
        "product_modules": len(modules),
        "product_lines": sum(len(m.lines) for m in modules),
    }
    if with_profile:
        out["tier0_fix"] = profile(bool(spec.get("profile", {}).get("unsafe_no_sandbox")))
    out["controller"] = static.controller_lines(by_rel, spec["controller"])
    out["controller_probes"] = static.getattr_probes(by_rel, spec["controller_files_for_probes"])
    out["lists"] = static.anchored_lists(by_rel, spec["lists"])
    out["budget_writes"] = static.budget_writes(modules)
    out["trace_writes"] = static.trace_writes(modules, static.trace_fields(by_rel))
    out["framework_keys"] = static.framework_keys(modules, spec["frameworks"])
    out["test_path_rules"] = static.test_path_rules(modules)
    out["actor_registries"] = static.actor_registries(modules, spec["actor"])
    out["names"] = static.repeated_names(modules)
    out["upward_imports"] = static.upward_imports()
    out["typing_cycles"] = static.typing_cycles()
    out["long_functions"] = static.long_functions(modules, 100)
    out["importers"] = static.importers_of(modules, spec["importers"], static.ROOT / "tests")
    return out


def headline(result: dict[str, Any]) -> dict[str, Any]:
    """The numbers the closing note of #25 reports, flat."""
    lists = result["lists"]
    row: dict[str, Any] = {}
    if "tier0_fix" in result:
        row["tier-0 fix: modules whose code ran (issue's count)"] = result["tier0_fix"]["modules_code_ran"]
        row["tier-0 fix: modules whose functions ran"] = result["tier0_fix"]["modules_functions_ran"]
    c = result["controller"]
    row["controller lines (code lines), files"] = f"{c['lines']} ({c['code_lines']}), {c['files']}"
    row["type conversions request -> loop"] = lists["conversions_ci_request_to_loop"]["entries"]
    row[".arcs.yml reads per CI repair"] = lists["config_reads_per_ci_repair"]["entries"]
    row["test-command rules/resolutions"] = lists["test_command_resolution"]["entries"]
    b, t = result["budget_writes"], result["trace_writes"]
    row["budget written: sites, files (outside budget.py/meter.py: writing sites, files)"] = (
        f"{b['sites']}, {b['files']} ({b['writing_sites_outside']}, {len(b['writing_files_outside'])})"
    )
    row["trace written outside trace.py: sites, files (top-level fields: sites, files, fields)"] = (
        f"{t['sites']}, {t['files']} ({t['top_level_sites']}, {t['top_level_files']},"
        f" {t['fields_written']}/{t['fields_total']})"
    )
    for key, title in (
        ("exercise_trigger", "files: add a trigger"),
        ("exercise_test_framework", "files: add a test framework"),
        ("exercise_proposer", "files: add a proposer"),
    ):
        row[title] = lists[key]["files"]
    row['files keyed by "pytest" (exact / mention)'] = (
        f"{result['framework_keys']['pytest']['files_keyed']} / {result['framework_keys']['pytest']['files_mentioning']}"
    )
    a = result["actor_registries"]
    row[f"registries naming actor {a['actor']}: places, files"] = f"{a['registries']}, {a['files']}"
    r = result["test_path_rules"]
    row["test-path rules: regexes (distinct), predicates"] = (
        f"{r['regexes']} ({r['distinct_regexes']}), {r['predicates']}"
    )
    row["upward imports runners/indexing -> jobs/bot"] = result["upward_imports"]["count"]
    y = result["typing_cycles"]
    row["cycles: run-time / counting TYPE_CHECKING (modules)"] = (
        f"{y['runtime_cycles']} / {y['cycles_counting_typing']} ({y['modules_in_cycles']})"
    )
    row["repeated file names"] = result["names"]["file_names_repeated"]
    row["Protocols / public classes declared twice"] = (
        f"{len(result['names']['protocols_declared_twice'])} / {len(result['names']['public_classes_declared_twice'])}"
    )
    p = result["controller_probes"]
    row["controller getattr / isinstance probes"] = f"{p['getattr']['count']} / {p['isinstance']['count']}"
    row["functions >= 100 lines"] = len(result["long_functions"])
    return row


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--label", default="current", help="results/<label>.json")
    parser.add_argument(
        "--no-profile", action="store_true", help="skip the arcs fix run (static numbers only)"
    )
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--compare", metavar="LABEL", help="print this run next to results/<LABEL>.json")
    parser.add_argument("--spec", type=Path, default=HERE / "spec.json")
    args = parser.parse_args(argv)
    spec = json.loads(args.spec.read_text(encoding="utf-8"))
    result = measure(spec, with_profile=not args.no_profile)
    result["label"] = args.label
    result["spec"] = spec
    result["headline"] = headline(result)
    other: dict[str, Any] | None = None
    if args.compare:
        other = json.loads((RESULTS / f"{args.compare}.json").read_text(encoding="utf-8"))
    width = max(len(k) for k in result["headline"])
    for key, value in result["headline"].items():
        before = f"   ({args.compare}: {other['headline'].get(key, '-')})" if other else ""
        print(f"{key:<{width}}  {value}{before}")
    missing = {k: v["missing"] for k, v in result["lists"].items() if v["missing"]}
    if result["controller"]["missing"] or missing:
        print(f"STALE spec entries: {result['controller']['missing']} {missing}", file=sys.stderr)
    if not args.no_write:
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / f"{args.label}.json"
        path.write_text(json.dumps(result, indent=1, sort_keys=False) + "\n", encoding="utf-8")
        print(f"wrote {path.relative_to(static.ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
