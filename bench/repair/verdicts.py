"""Summaries and markdown for the verdict measurements (issue #10): before/after, per corpus part.

A *labelled* run (``--label before`` / ``--label after``) stores its per-case records under
``results["verdicts"][label][part]`` (``part``: ``ours``, ``outside`` or ``scripted``). The numbers:

* fix rate and **false fixed** (verdict ``fixed`` but the bench's own re-run of the exact command
  on a fresh copy with the patch fails), per group of our corpus (``base``, ``fail_fast``,
  ``multi_bug``, ``hang``, ``environment``) and per split of the outside corpus (``tuning``,
  ``held_out``);
* hang cases: time to verdict (the ``fix`` call's wall time, or the bench's cap when the loop never
  returned) and its ratio to the median wall time of the ordinary cases of the same run;
* environment cases: verdict, candidates, sandboxed executions and model calls.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

from bench.common import markdown_table

Record = dict[str, Any]

HANG_TARGET_S = 60.0
GROUPS = ("base", "fail_fast", "multi_bug", "hang", "environment")
SPLITS = ("tuning", "held_out")


def _counts(records: Sequence[Record]) -> Record:
    n = len(records)
    fixed = [r for r in records if r.get("verdict") == "fixed"]
    false_fixed = [r["id"] for r in fixed if r.get("false_fixed") or r.get("recheck_exit") != 0]
    partial = [r for r in records if r.get("verdict") == "partial"]
    return {
        "cases": n,
        "fixed": len(fixed),
        "rate": round(len(fixed) / n, 3) if n else None,
        "rechecked": sum(1 for r in records if "recheck_exit" in r),
        "false_fixed": len(false_fixed),
        "false_fixed_ids": false_fixed,
        "partial": len(partial),
        "true_fixed": len(fixed) - len(false_fixed),
        "true_rate": round((len(fixed) - len(false_fixed)) / n, 3) if n else None,
        "verdicts": dict(sorted(Counter(str(r.get("verdict")) for r in records).items())),
    }


def _ordinary(records: Sequence[Record]) -> list[Record]:
    return [
        r
        for r in records
        if r.get("group") not in ("hang", "environment")
        and "hang" not in r.get("tags", ())
        and r.get("verdict") not in ("error", "no_verdict")
    ]


def summarize_part(records: Sequence[Record]) -> Record:
    """Counts overall, per group and per split; hang and environment details."""
    ordinary = _ordinary(records)
    median = statistics.median(float(r["wall_s"]) for r in ordinary) if ordinary else None
    hangs = [r for r in records if "hang" in r.get("tags", ())]
    envs = [r for r in records if r.get("expect_verdict") == "environment"]
    return {
        "overall": _counts(records),
        "without_environment": _counts([r for r in records if r not in envs]),
        "by_group": {g: _counts([r for r in records if r.get("group") == g]) for g in GROUPS},
        "by_split": {s: _counts([r for r in records if r.get("split") == s]) for s in SPLITS},
        "ordinary_median_wall_s": round(median, 3) if median is not None else None,
        "hangs": [
            {
                "id": r["id"],
                "split": r.get("split", ""),
                "verdict": r.get("verdict"),
                "time_to_verdict_s": round(float(r.get("wall_s", 0.0)), 1),
                "capped": bool(r.get("capped")),
                "ratio_to_median": round(float(r.get("wall_s", 0.0)) / median, 1) if median else None,
                "within_target": not r.get("capped") and float(r.get("wall_s", 0.0)) <= HANG_TARGET_S,
                "executions": r.get("executions", 0),
                "reason": str(r.get("reason", ""))[:200],
            }
            for r in hangs
        ],
        "environment": [
            {
                "id": r["id"],
                "verdict": r.get("verdict"),
                "candidates": r.get("candidates", 0),
                "executions": r.get("executions", 0),
                "llm_calls": r.get("llm_calls", 0),
                "usd": round(float(r.get("usd", 0.0)), 4),
                "ok": r.get("verdict") == "environment" and not r.get("candidates"),
                "reason": str(r.get("reason", ""))[:200],
            }
            for r in envs
        ],
    }


def merge_records(old: Sequence[Record], new: Sequence[Record]) -> list[Record]:
    """``old`` with the records of ``new`` replacing those of the same id, sorted by id."""
    by_id = {r["id"]: r for r in old}
    by_id.update({r["id"]: r for r in new})
    return [by_id[k] for k in sorted(by_id)]


# --------------------------------------------------------------------------- markdown


def _rate(c: Record | None) -> str:
    if not c or not c.get("cases"):
        return "-"
    rate = c.get("rate")
    return f"{c['fixed']}/{c['cases']} ({100 * rate:.0f}%)" if rate is not None else "-"


def _ff(c: Record | None) -> str:
    if not c or not c.get("cases"):
        return "-"
    ids = c.get("false_fixed_ids", [])
    shown = ", ".join(ids[:4]) + (", ..." if len(ids) > 4 else "")
    return f"**{c['false_fixed']}**" + (f" ({shown})" if ids else "")


def _partial(c: Record | None) -> str:
    return "-" if not c or not c.get("cases") else str(c.get("partial", 0))


def _rows_for(part: str, labels: Sequence[str], parts: dict[str, Record]) -> list[list[object]]:
    rows: list[list[object]] = []
    keys: list[tuple[str, str, str]] = [("overall", "", "all")]
    if part == "ours":
        keys += [("by_group", g, g) for g in GROUPS]
    else:
        keys += [("by_split", s, s.replace("held_out", "**held-out**")) for s in SPLITS]
    for section, key, name in keys:
        row: list[object] = [f"{part}: {name}"]
        present = False
        for label in labels:
            summary = parts.get(label, {}).get("summary", {})
            c = summary.get(section, {}).get(key) if key else summary.get(section)
            present = present or bool(c and c.get("cases"))
            row += [_rate(c), _ff(c), _partial(c)]
        if present:
            rows.append(row)
    return rows


def render_verdicts(verdicts: Record) -> str:
    """The before/after block (empty when no labelled run exists)."""
    labels: list[str] = [lb for lb in ("before", "after") if lb in verdicts]
    if not labels:
        return ""
    lines = ["### Trustworthy verdicts (issue #10): before / after", ""]
    for label in labels:
        for part in ("ours", "outside", "scripted"):
            stored = verdicts[label].get(part)
            if not stored:
                continue
            runs = stored.get("runs") or [
                {**stored, "command": stored["options"]["command"], "cases": len(stored.get("cases", []))}
            ]
            for run in runs:
                code = run.get("code", {})
                lines.append(
                    f"* {label}, {part}: run {run['date']}, `{run['command']}` ({run['cases']} cases); code "
                    f"`{code.get('jobs_dir', '?')}` at {code.get('head', '?')[:9]} "
                    f"({code.get('dirty_files', '?')} files changed vs HEAD); load {run['loadavg'][0]:.1f} -> "
                    f"{run['loadavg'][1]:.1f}; {run['elapsed_s']:.0f} s."
                )
    lines.append("")
    headers = ["cases"]
    for label in labels:
        headers += [f"{label}: fixed", f"{label}: false fixed", f"{label}: partial"]
    rows: list[list[object]] = []
    for part in ("ours", "outside"):
        parts = {lb: verdicts[lb][part] for lb in labels if part in verdicts[lb]}
        if parts:
            rows += _rows_for(part, labels, parts)
    lines.append(
        "Fix rate and **false fixed** (verdict `fixed`, but the bench's own run of the exact command on a "
        "fresh copy with the patch fails); tier 0, no model:"
    )
    lines.append("")
    lines.append(markdown_table(headers, rows))
    lines.append("")
    lines += _hang_table(verdicts, labels)
    lines += _env_table(verdicts, labels)
    return "\n".join(lines)


def _hang_table(verdicts: Record, labels: Sequence[str]) -> list[str]:
    rows: list[list[object]] = []
    ids: dict[str, str] = {}
    for label in labels:
        for part in ("ours", "outside"):
            for h in verdicts[label].get(part, {}).get("summary", {}).get("hangs", []):
                ids[h["id"]] = part
    if not ids:
        return []
    for cid, part in sorted(ids.items()):
        row: list[object] = [f"{cid}" + (" (outside)" if part == "outside" else "")]
        for label in labels:
            summary = verdicts[label].get(part, {}).get("summary", {})
            h = next((x for x in summary.get("hangs", []) if x["id"] == cid), None)
            if h is None:
                row += ["-", "-"]
                continue
            t = f"> {h['time_to_verdict_s']:.0f}" if h["capped"] else f"{h['time_to_verdict_s']:.1f}"
            ratio = f" ({h['ratio_to_median']:.0f}x)" if h.get("ratio_to_median") else ""
            row += [t + ratio, str(h["verdict"])]
        rows.append(row)
    headers = ["hang case"]
    for label in labels:
        headers += [f"{label}: s to verdict (x median)", f"{label}: verdict"]
    return [
        f"Hang cases: time to verdict in seconds (target <= {HANG_TARGET_S:g} s on 2 cores) and as a multiple "
        "of the median wall time of the ordinary cases of the same run; `> N`: no verdict before the "
        "bench's cap killed the case:",
        "",
        markdown_table(headers, rows),
        "",
    ]


def _env_table(verdicts: Record, labels: Sequence[str]) -> list[str]:
    rows: list[list[object]] = []
    ids: list[str] = []
    for label in labels:
        for part in ("ours", "scripted"):
            for e in verdicts[label].get(part, {}).get("summary", {}).get("environment", []):
                key = f"{e['id']}|{part}"
                if key not in ids:
                    ids.append(key)
    if not ids:
        return []
    for key in sorted(ids):
        cid, part = key.split("|")
        row: list[object] = [cid, "tier 0" if part == "ours" else "scripted LLM"]
        for label in labels:
            summary = verdicts[label].get(part, {}).get("summary", {})
            e = next((x for x in summary.get("environment", []) if x["id"] == cid), None)
            row += (
                ["-"]
                if e is None
                else [
                    f"{e['verdict']}, {e['candidates']} cand, {e['executions']} runs, "
                    f"{e['llm_calls']} model calls (${e.get('usd', 0.0):.4f})"
                ]
            )
        rows.append(row)
    headers = ["environment case", "tier"] + [
        f"{label}: verdict, candidates, runs, model calls (USD)" for label in labels
    ]
    return [
        "Environment cases (expected: `environment`, zero candidates, zero model calls):",
        "",
        markdown_table(headers, rows),
        "",
    ]
