"""Before/after table of tier 0 on the injected cases (issue #29): ``bench/results/tier0_injected.json``.

    python -m bench.outside.injected_report BEFORE_REPAIR_JSON AFTER_REPAIR_JSON

Each argument is a ``repair.json`` written by ``bench.repair.run --corpus injected --label X`` (in
an overlay, so the shared ``bench/results/repair.json`` is not touched); the records of
``verdicts[X]["injected"]`` are reduced to: fixed, right (the returned patch is the known fix),
false fixed (the re-check outside the loop did not exit 0), plausible candidates and how many of
them were right, median time to verdict, per split.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT

OUT = REPO_ROOT / "bench" / "results" / "tier0_injected.json"


def _records(path: Path) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    for label, parts in data.get("verdicts", {}).items():
        if "injected" in parts:
            part = parts["injected"]
            return (
                label,
                list(part["cases"]),
                {
                    "date": part.get("date"),
                    "code": part.get("code"),
                    "options": part.get("options"),
                    "loadavg": part.get("loadavg"),
                },
            )
    raise SystemExit(f"{path}: no injected part")


def _right(r: dict[str, Any]) -> bool:
    if "returned_right" in r:
        return bool(r["returned_right"])
    return bool(r.get("fixed") and r.get("matches_expected"))


def summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The counts of one run (all cases, or one split)."""
    fixed = [r for r in records if r.get("verdict") == "fixed"]
    walls = [float(r["wall_s"]) for r in records]
    plausible = sum(int(r.get("plausible", 1 if r.get("fixed") else 0)) for r in records)
    plausible_right = sum(int(r.get("plausible_right", 1 if _right(r) else 0)) for r in records)
    return {
        "cases": len(records),
        "fixed": len(fixed),
        "right": sum(1 for r in fixed if _right(r)),
        "false_fixed": sum(1 for r in fixed if r.get("recheck_exit") != 0),
        "rechecked": sum(1 for r in fixed if "recheck_exit" in r),
        "plausible": plausible,
        "plausible_right": plausible_right,
        "median_time_to_verdict_s": round(statistics.median(walls), 1) if walls else None,
    }


def main(argv: list[str]) -> int:
    """Write the table (see the module docstring) and print it."""
    out: dict[str, Any] = {}
    for arg in argv:
        label, records, meta = _records(Path(arg))
        out[label] = {
            **meta,
            "all": summary(records),
            "by_split": {
                s: summary([r for r in records if r.get("split") == s]) for s in ("tuning", "held_out")
            },
            "cases": [
                {
                    k: r.get(k)
                    for k in (
                        "id",
                        "split",
                        "verdict",
                        "fixed",
                        "recheck_exit",
                        "plausible",
                        "plausible_right",
                        "returned_right",
                        "matches_expected",
                        "final_variant",
                        "candidates",
                        "executions",
                        "wall_s",
                        "patch",
                    )
                }
                for r in records
            ],
        }
        print(label, json.dumps(out[label]["all"]), json.dumps(out[label]["by_split"]))
    OUT.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
