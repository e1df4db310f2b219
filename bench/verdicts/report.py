"""Summarize the verdict bench (issue #23): ``results/{before,after}.jsonl`` -> Markdown + JSON.

    .venv/bin/python -m bench.verdicts.report [--write-results-md]

Per label and mode: fixed / partial / not fixed; every ``fixed`` re-checked outside the loop (the
exact command exits 0 with the patch); every ``partial`` checked against the definition (a
disagreement is listed by id); "best: k of n targets" lines; the behaviour probe against the
original functions (``truth``); wall time per case, after/before, with the load measured.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from bench.common import markdown_table
from bench.verdicts.corpus import MODES
from bench.verdicts.run import RESULTS

BEGIN, END = "<!-- verdicts:begin -->", "<!-- verdicts:end -->"
RESULTS_MD = Path(__file__).resolve().parents[1] / "RESULTS.md"


def _load(label: str) -> list[dict[str, Any]]:
    path = RESULTS / f"{label}.jsonl"
    return (
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []
    )


def _row(label: str, mode: str, rows: list[dict[str, Any]]) -> list[object]:
    fixed = [r for r in rows if r["verdict"] == "fixed"]
    partial = [r for r in rows if r["verdict"] == "partial"]
    fixed_ok = sum(1 for r in fixed if (r.get("recheck") or {}).get("ok"))
    partial_ok = sum(1 for r in partial if (r.get("recheck") or {}).get("ok"))
    best = sum(1 for r in rows if r.get("best"))
    return [
        label,
        mode,
        len(rows),
        len(fixed),
        len(partial),
        len(rows) - len(fixed) - len(partial),
        f"{fixed_ok}/{len(fixed)}",
        f"{partial_ok}/{len(partial)}",
        best,
        round(statistics.median(r["wall_s"] for r in rows if r.get("wall_s") is not None), 1)
        if rows
        else "-",
    ]


def _mark(r: dict[str, Any]) -> str:
    mark = {"fixed": "F", "partial": "P"}.get(str(r.get("verdict")), "-")
    if mark != "-" and not (r.get("recheck") or {}).get("ok"):
        mark += "!"
    if r.get("best"):
        mark += "b"
    return mark


def summarize() -> dict[str, Any]:
    """The numbers (see the module docstring)."""
    out: dict[str, Any] = {"labels": {}}
    for label in ("before", "after"):
        rows = _load(label)
        if not rows:
            continue
        by_mode = {m: [r for r in rows if r["mode"] == m] for m in MODES}
        out["labels"][label] = {
            "cases": len(rows),
            "verdicts": dict(Counter(r["verdict"] for r in rows)),
            "table": [_row(label, m, by_mode[m]) for m in MODES] + [_row(label, "all", rows)],
            "false_fixed": [
                r["id"] for r in rows if r["verdict"] == "fixed" and not (r.get("recheck") or {}).get("ok")
            ],
            "partial_disagreements": [
                {"id": r["id"], **(r.get("recheck") or {})}
                for r in rows
                if r["verdict"] == "partial" and not (r.get("recheck") or {}).get("ok")
            ],
            "load_1m": [min(r["load_1m"] for r in rows), max(r["load_1m"] for r in rows)],
            "by_split": {
                s: dict(Counter(r["verdict"] for r in rows if r["split"] == s))
                for s in ("tuning", "held_out")
            },
        }
    after = _load("after")
    probes = _load("probe")  # this tree's probe on every reported candidate (bench.verdicts.probe)
    cross: Counter[str] = Counter()
    notes: Counter[str] = Counter()
    ratios, costs = [], []
    for r in probes:
        record, t = r.get("probe") or {}, r.get("truth") or {}
        if "unchecked_changes" not in record or not t.get("probed"):
            notes[str(record.get("note") or t.get("note") or "no truth")] += 1
            continue
        flagged = int(record["unchecked_changes"]) > 0
        wrong = int(t["differs_from_original"]) > 0
        cross[
            f"{'flagged' if flagged else 'quiet'}/{'differs from original' if wrong else 'same as original'}"
        ] += 1
        costs.append(float(record.get("duration_s") or 0.0))
        if r.get("baseline_s"):
            ratios.append(float(record.get("duration_s") or 0.0) / float(r["baseline_s"]))
    out["probe"] = {
        "candidates": len(probes),
        "probed": sum(cross.values()),
        "cross": dict(cross),
        "notes": dict(notes),
        "duration_s_median": round(statistics.median(costs), 3) if costs else None,
        "ratio_to_baseline_run_median": round(statistics.median(ratios), 2) if ratios else None,
        "load_1m": [round(min(r["load_1m"] for r in probes), 1), round(max(r["load_1m"] for r in probes), 1)]
        if probes
        else None,
    }
    before_rows = {r["id"]: r for r in _load("before")}
    mutants: dict[str, dict[str, str]] = {}
    splits: dict[str, str] = {}
    for r in after:
        mutant = (
            r["id"].rsplit("-", 1)[0] if not r["id"].endswith("pre_since") else r["id"][: -len("-pre_since")]
        )
        splits[mutant] = r["split"]
        b = before_rows.get(r["id"])
        mutants.setdefault(mutant, {})[r["mode"]] = f"{_mark(b) if b else '?'} -> {_mark(r)}"
    out["cases"] = [[m, splits[m], *(v.get(mode, "") for mode in MODES)] for m, v in sorted(mutants.items())]
    pairs = before_rows
    walls = [(pairs[r["id"]]["wall_s"], r["wall_s"]) for r in after if r["id"] in pairs and r.get("wall_s")]
    if walls:
        out["wall_ratio_median"] = round(statistics.median(a / b for b, a in walls if b), 2)
    return out


def markdown(data: dict[str, Any]) -> str:
    """The RESULTS.md section."""
    header = [
        "label",
        "mode",
        "cases",
        "fixed",
        "partial",
        "not fixed",
        "fixed re-checked ok",
        "partial per definition",
        "'best: k of n'",
        "median wall s",
    ]
    rows = [row for label in data["labels"].values() for row in label["table"]]
    lines = [markdown_table(header, rows), ""]
    if data.get("cases"):
        lines += [
            "Per mutant, before -> after (F fixed, P partial, - not fixed; `!` a re-check or definition "
            "check that failed; `b` a 'best: k of n' line):",
            "",
            markdown_table(["mutant", "split", *MODES], data["cases"]),
            "",
        ]
    for name, label in data["labels"].items():
        lines.append(
            f"- **{name}**: verdicts {label['verdicts']}; false fixed {label['false_fixed'] or 'none'}; "
            f"partial disagreements {[d['id'] for d in label['partial_disagreements']] or 'none'}; "
            f"by split {label['by_split']}; 1-min load {label['load_1m'][0]}-{label['load_1m'][1]}."
        )
    probe = data.get("probe") or {}
    lines.append(
        f"- **behaviour probe** (`bench.verdicts.probe`, this tree, real sandbox): {probe.get('probed', 0)} of "
        f"{probe.get('candidates', 0)} reported candidates probed and compared with the original package: "
        f"{probe.get('cross')}; median cost {probe.get('duration_s_median')} s for its two sandboxed runs, "
        f"{probe.get('ratio_to_baseline_run_median')}x the case's baseline test run (1-min load "
        f"{probe.get('load_1m')}); not probed: {probe.get('notes')}."
    )
    if "wall_ratio_median" in data:
        lines.append(f"- wall time per case, after/before (median of ratios): {data['wall_ratio_median']}.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print (and optionally write) the summary."""
    p = argparse.ArgumentParser(prog="python -m bench.verdicts.report")
    p.add_argument("--write-results-md", action="store_true")
    args = p.parse_args(argv)
    data = summarize()
    (RESULTS / "summary.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    text = markdown(data)
    print(text)
    if args.write_results_md:
        md = RESULTS_MD.read_text(encoding="utf-8")
        if BEGIN in md:
            head, rest = md.split(BEGIN, 1)
            md = head + BEGIN + "\n" + text + "\n" + END + rest.split(END, 1)[1]
        else:
            md += f"\n## Verdicts (issue #23)\n\n{BEGIN}\n{text}\n{END}\n"
        RESULTS_MD.write_text(md, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
