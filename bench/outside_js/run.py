"""Outside npm packages read per test (issue 30): run the cases of ``cases.json`` once, then parse
the saved outputs with any checkout of ``runners`` (before/after) and print what was read.

    python -m bench.outside_js.run record PKGROOT OUTDIR   # run every case's commands, save outputs
    python -m bench.outside_js.run resolved PKGROOT OUTDIR # also the command ARCS resolves per case
    PYTHONPATH=<checkout> python -m bench.outside_js.run parse OUTDIR   # per-command metrics (JSON lines)

``PKGROOT`` holds the installed packages as ``<name>-<version>/`` (``npm pack`` + ``npm install``,
see ``cases.json``). Each case is applied to a fresh copy (``node_modules`` symlinked: the runs only
read it). Commands run on the host, not in the sandbox: this measures the parsers, not isolation.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CASES = Path(__file__).with_name("cases.json")


def _commands(case: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for c in case["commands"]:
        if "(second run" in c:
            out.append(c.split(" (", 1)[0] + " #2")
        else:
            out.append(c)
    return out


def _apply(case: dict[str, Any], src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns("node_modules"))
    (dst / "node_modules").symlink_to(src / "node_modules")
    path = dst / case["file"]
    lines = path.read_text().splitlines(keepends=True)
    if "after_line" in case:
        lines.insert(case["after_line"], "    " + case["test"] + "\n")
    else:
        i = case["line"] - 1
        assert case["original"] in lines[i], (case["id"], lines[i])
        lines[i] = lines[i].replace(case["original"], case["mutated"], 1)
    path.write_text("".join(lines))


def record(pkgroot: Path, outdir: Path) -> None:
    """Run every case's commands and save ``<case>__<n>.json`` (command, exit, stdout, stderr)."""
    spec = json.loads(CASES.read_text())
    outdir.mkdir(parents=True, exist_ok=True)
    for case in spec["cases"]:
        version = spec["packages"][case["package"]]["version"]
        src = pkgroot / f"{case['package']}-{version}"
        work = outdir / "work" / case["id"]
        shutil.rmtree(work, ignore_errors=True)
        _apply(case, src, work)
        for n, command in enumerate(_commands(case)):
            shell = command.removesuffix(" #2")
            env = {**os.environ, "CI": "true", "NO_COLOR": "1"}
            t0 = time.monotonic()
            done = subprocess.run(
                shell, shell=True, cwd=work, env=env, capture_output=True, text=True, timeout=300
            )
            doc = {
                "case": case["id"],
                "command": command,
                "exit_code": done.returncode,
                "stdout": done.stdout,
                "stderr": done.stderr,
                "duration_s": time.monotonic() - t0,
            }
            (outdir / f"{case['id']}__{n}.json").write_text(json.dumps(doc))
            print(case["id"], command, "exit", done.returncode, f"{doc['duration_s']:.1f}s", flush=True)


def resolved(pkgroot: Path, outdir: Path) -> None:
    """Run, per case, the command ARCS resolves for the package by convention (``<case>__r.json``):
    what a new user's ``arcs test`` runs (added after the first measured run, not in cases.json)."""
    from runners.commands import resolve_test_command

    spec = json.loads(CASES.read_text())
    done_cases: set[str] = set()
    for case in spec["cases"]:
        if case["id"] in done_cases:
            continue
        done_cases.add(case["id"])
        version = spec["packages"][case["package"]]["version"]
        work = outdir / "work" / case["id"]
        shutil.rmtree(work, ignore_errors=True)
        _apply(case, pkgroot / f"{case['package']}-{version}", work)
        command = resolve_test_command(work).command
        env = {**os.environ, "CI": "true", "NO_COLOR": "1"}
        t0 = time.monotonic()
        done = subprocess.run(
            command, shell=True, cwd=work, env=env, capture_output=True, text=True, timeout=300
        )
        doc = {
            "case": case["id"],
            "command": command,
            "exit_code": done.returncode,
            "stdout": done.stdout,
            "stderr": done.stderr,
            "duration_s": time.monotonic() - t0,
        }
        (outdir / f"{case['id']}__r.json").write_text(json.dumps(doc))
        print(case["id"], command, "exit", done.returncode, f"{doc['duration_s']:.1f}s", flush=True)


def parse(outdir: Path) -> None:
    """Parse every saved output with the ``runners`` on ``sys.path``; one JSON line per command."""
    from runners.base import Execution
    from runners.commands import resolve_test_command
    from runners.results import framework_of_command, parse_output

    runs: dict[str, Any] = {}
    for path in sorted(outdir.glob("*__*.json")):
        doc = json.loads(path.read_text())
        shell = doc["command"].removesuffix(" #2")
        execution = Execution(shell, doc["exit_code"], doc["stdout"], doc["stderr"], doc["duration_s"])
        work = outdir / "work" / doc["case"]
        # The framework ARCS itself would read the output as (npm test: from package.json).
        hint = resolve_test_command(work, explicit=shell).framework if work.is_dir() else None
        run = parse_output(execution, hint or framework_of_command(shell))
        ids = [r.id for r in run.results]
        failures = run.failures
        row = {
            "case": doc["case"],
            "command": doc["command"],
            "exit": doc["exit_code"],
            "framework": run.framework,
            "tests": len(ids),
            "failed": run.failed_ids,
            "duplicate_ids": len(ids) - len(set(ids)),
            "with_message": sum(bool(f.message) for f in failures),
            "with_repo_frame": sum(
                bool(f.file and f.line and "node_modules" not in f.file) for f in failures
            ),
            "where": [f"{f.file}:{f.line}" for f in failures],
            "messages": [f"{f.type}: {f.message.splitlines()[0] if f.message else ''}" for f in failures],
            "run_errors": [
                f"{e.id} {e.type}: {(e.message.splitlines() or [''])[0][:80]}" for e in run.errors
            ],
        }
        runs[doc["command"] + doc["case"]] = (set(run.failed_ids), set(run.passed_ids))
        if doc["command"].endswith(" #2"):
            first = runs.get(doc["command"].removesuffix(" #2") + doc["case"])
            row["ids_stable_across_runs"] = first == runs[doc["command"] + doc["case"]]
        print(json.dumps(row))


def main(argv: list[str]) -> int:
    """Entry point."""
    if argv[:1] == ["record"] and len(argv) == 3:
        record(Path(argv[1]), Path(argv[2]))
    elif argv[:1] == ["resolved"] and len(argv) == 3:
        resolved(Path(argv[1]), Path(argv[2]))
    elif argv[:1] == ["parse"] and len(argv) == 2:
        parse(Path(argv[1]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
