"""Summaries and markdown tables of the context bench (``bench/results/context.{json,md}``)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.common import markdown_table

Record = dict[str, Any]
LABELS = ("before", "session5", "after")
"""``session5``: the session-5 ``after`` records (the code this session started from, for the cases
of sessions 4-5); ``before`` of the session-6 batches is the same code (81f4721)."""
UNDETECTED = {
    "markdown-inlinepatterns-L733-arithswap": "the suite fails the same 191 tests with and without the mutant",
    "markdown-inlinepatterns-L1023-constoffbyone": "the suite fails the same 191 tests with and without the mutant",
}
"""Mutants the suite does not detect here (markdown's entry-point extensions need an installed
distribution: 191 tests fail on the pristine tree too; session 6 checked both trees): no failing
test runs the mutated line, so no context can be right. Kept in every table; the ``valid`` rows
leave them out."""


def _pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "–"


def summarize(records: Sequence[Record]) -> Record:
    """Counts and rates of one group of case records."""
    ran = [r for r in records if r.get("requests")]
    search = [r for r in records if (r.get("search") or {}).get("rank") is not None or "search" in r]
    chars = [q["chars"] for r in ran for q in r["requests"]]
    return {
        "cases": len(records),
        "with_requests": len(ran),
        "round1_all": sum(1 for r in records if r.get("round1_all")),
        "round1_share": round(statistics.mean(r.get("round1_share", 0.0) for r in records), 3)
        if records
        else 0.0,
        "last_all": sum(1 for r in records if r.get("last_all")),
        "last_share": round(statistics.mean(r.get("last_share", 0.0) for r in records), 3)
        if records
        else 0.0,
        "fixed": sum(1 for r in records if r.get("fixed")),
        "round1_file": sum(1 for r in records if r.get("round1_file")),
        "search_top5": sum(1 for r in search if ((r.get("search") or {}).get("rank") or 99) <= 5),
        "search_line_top5": sum(1 for r in search if (r.get("search") or {}).get("line_in_top5")),
        "searched": len(search),
        "chars_median": int(statistics.median(chars)) if chars else 0,
        "chars_max": max(chars) if chars else 0,
    }


def _row(name: str, label: str, s: Record) -> list[object]:
    n = s["cases"]
    return [
        name,
        label,
        n,
        _pct(s["round1_all"], n),
        f"{s['round1_share']:.2f}",
        _pct(s["last_all"], n),
        f"{s['last_share']:.2f}",
        _pct(s["fixed"], n),
        _pct(s["round1_file"], n),
        _pct(s["search_top5"], s["searched"]),
        _pct(s["search_line_top5"], s["searched"]),
        f"{s['chars_median']:,}",
        f"{s['chars_max']:,}",
    ]


HEADERS = [
    "group",
    "code",
    "cases",
    "all lines shown, round 1",
    "share r1",
    "all shown by last round",
    "best share",
    "oracle fixed",
    "fix file shown r1",
    "`arcs search` file top 5",
    "search line top 5",
    "chars/request (median)",
    "max",
]


HELD_OUTSIDE = "held_out: bench/outside half"
HELD_NEW = "held_out: new packages (session 4)"
HELD_NEWER = "held_out: new packages (session 5)"
HELD_S6 = "held_out: new packages (session 6)"
HELD_S6B = "held_out: new packages (session 6b)"
NEW_PACKAGES = ("sqlparse", "pyparsing", "markdown")
NEWER_PACKAGES = ("pyflakes", "docutils")
"""Added in session 5, after the session-4 changes were tuned: never looked at before their
first ("before") run."""
S6_PACKAGES = ("bottle", "pycparser", "configobj")
"""Added in session 6 (``generated.batch: "session 6"`` in ``cases.jsonl``) while the call-path
localizer was being designed: its designer must not see which of them miss. Until the ``after``
run holds them, :func:`render` shows their ``before`` records only in their own group's row (no
per-project, distance or size rows, no ids in the lists of misses: those would tell cases apart)."""
S6B_PACKAGES = ("lark", "parso", "mistune")
"""Added later in session 6 (``generated.batch: "session 6b"``), for code deeper behind dispatch;
blind like :data:`S6_PACKAGES`."""
BLIND_GROUPS: dict[str, tuple[str, ...]] = {HELD_S6: S6_PACKAGES, HELD_S6B: S6B_PACKAGES}
"""Held-out groups added while the localizer was designed, with their packages: their records are
blind (:func:`blind_ids`) until the ``after`` run holds them."""
HELD_GROUPS = (HELD_OUTSIDE, HELD_NEW, HELD_NEWER, *BLIND_GROUPS)


def _held_out_source(r: Record) -> str:
    if r.get("split") != "held_out":
        return ""
    for group, packages in BLIND_GROUPS.items():
        if r.get("project") in packages:
            return group
    if r.get("project") in NEWER_PACKAGES:
        return HELD_NEWER
    return HELD_NEW if r.get("project") in NEW_PACKAGES else HELD_OUTSIDE


HELD_SEEN = "held_out: seen (sessions 4-5; read while designing session 6)"
HELD_SEEN_VALID = "held_out: seen, valid (without the 2 undetected mutants)"
HELD_FRESH = "held_out: fresh (sessions 6 and 6b; never read before the after run)"


def _seen_or_fresh(r: Record) -> str:
    source = _held_out_source(r)
    if not source:
        return ""
    return HELD_FRESH if source in BLIND_GROUPS else HELD_SEEN


def _seen_valid(r: Record) -> bool:
    return _seen_or_fresh(r) == HELD_SEEN and r["id"] not in UNDETECTED


def blind_ids(results: Record) -> set[str]:
    """The cases of :data:`BLIND_GROUPS` that some run recorded and the ``after`` run has not."""
    after = {r["id"] for r in (results.get("after") or {}).get("records", [])}
    return {
        r["id"]
        for label, run in results.items()
        if label != "after" and isinstance(run, dict)
        for r in run.get("records", [])
        if _held_out_source(r) in BLIND_GROUPS and r["id"] not in after
    }


def _named_ids(records: Sequence[Record], blind: set[str]) -> str:
    """The ids of ``records``, the blind ones counted per group instead of named."""
    names = [str(r["id"]) for r in records if r["id"] not in blind]
    for group in BLIND_GROUPS:
        hidden = sum(1 for r in records if r["id"] in blind and _held_out_source(r) == group)
        if hidden:
            names.append(f"{hidden} of {group} not named")
    return ", ".join(names)


def _distance_group(r: Record) -> str:
    d = (r.get("shape") or {}).get("distance")
    if r.get("project") == "ours":
        return ""
    if d is None:
        return "unknown"
    return "1" if d == 1 else "2" if d == 2 else "3+"


def _grouped(
    results: Record, key: Callable[[Record], str], order: Sequence[str] = (), hide: set[str] | None = None
) -> list[list[object]]:
    """One row per group and label; the ``before`` records of ``hide`` left out (:func:`blind_ids`)."""
    hide = hide or set()
    rows: list[list[object]] = []
    names: list[str] = list(order)
    for label in LABELS:
        for r in (results.get(label) or {}).get("records", []):
            k = key(r)
            if k and k not in names:
                names.append(k)
    for name in names:
        for label in LABELS:
            run = results.get(label)
            if not run:
                continue
            group = [
                r for r in run["records"] if key(r) == name and not (label == "before" and r["id"] in hide)
            ]
            if group:
                rows.append(_row(name, label, summarize(group)))
    return rows


def render(results: Record) -> str:
    """The markdown of ``## Context`` (tables by split, project, distance, shape, and the misses)."""
    parts: list[str] = []
    blind = blind_ids(results)
    for label in LABELS:
        run = results.get(label)
        if run:
            code = run.get("code", {})
            parts.append(
                f"- **{label}**: {run['date']}, code {code.get('root', '?')} at {code.get('head', '?')}"
                f" ({code.get('changed', 0)} changed files under jobs/ and indexing/), "
                f"{len(run['records'])} cases in {run.get('elapsed_s', 0):.0f} s."
            )
    parts.append("\n**By split** (held-out = never tuned on; its three sources below):\n")
    split_rows = _grouped(results, lambda r: str(r.get("split", "")), ("tuned", "held_out"), blind)
    split_rows += _grouped(results, _seen_or_fresh, (HELD_SEEN, HELD_FRESH), blind)
    split_rows += _grouped(results, lambda r: HELD_SEEN_VALID if _seen_valid(r) else "", (), blind)
    split_rows += _grouped(results, _held_out_source, HELD_GROUPS)
    parts.append(markdown_table(HEADERS, split_rows))
    for label in LABELS:
        run = results.get(label)
        if not run:
            continue
        recs = run["records"]
        found = [r for r in recs if ((r.get("search") or {}).get("rank") or 99) <= 5]
        gap = [r for r in found if not r.get("last_all")]
        extra = [r["id"] for r in recs if r.get("last_all") and r not in found]
        named = _named_ids(gap, blind if label == "before" else set())
        parts.append(
            f"\n*{label}*: standalone search had the fix's file in its top 5 for {len(found)}/{len(recs)}; "
            f"the loop showed every line to change for {sum(1 for r in recs if r.get('last_all'))}/{len(recs)}. "
            f"Search found the file but the loop never showed the lines: {len(gap)}"
            + (f" ({named})" if gap else "")
            + f"; the loop showed the lines where search missed the file: {len(extra)}."
        )
    parts.append("\n**By project** (ours = `bench/repair` cases; the outside packages mix both splits):\n")
    parts.append(markdown_table(HEADERS, _grouped(results, lambda r: str(r.get("project", "")), (), blind)))
    parts.append(
        "\n**Mutants by call distance** from the failing tests (1 = the test calls the mutated function):\n"
    )
    parts.append(
        markdown_table(HEADERS, _grouped(results, _distance_group, ("1", "2", "3+", "unknown"), blind))
    )

    def shape(r: Record) -> str:
        s = r.get("shape") or {}
        if r.get("project") == "ours":
            return ""
        if (s.get("function_lines") or 0) > 150:
            return "function > 150 lines"
        if (s.get("file_lines") or 0) > 2000:
            return "file > 2,000 lines"
        return "smaller"

    parts.append("\n**Mutants by size** of the enclosing function / file:\n")
    parts.append(
        markdown_table(
            HEADERS,
            _grouped(results, shape, ("function > 150 lines", "file > 2,000 lines", "smaller"), blind),
        )
    )
    latest_label = "after" if results.get("after") else "before"
    latest = results.get(latest_label)
    if latest:
        misses = [r for r in latest["records"] if not r.get("last_all")]
        parts.append(f"\n**Cases whose lines were never all shown** ({len(misses)}, latest run):\n")
        if latest_label == "before":  # blind cases: counted, not listed
            misses = [r for r in misses if r["id"] not in blind]
        rows = [
            [
                r["id"],
                r["split"],
                (r.get("shape") or {}).get("distance", ""),
                r.get("verdict", ""),
                f"{r.get('last_share', 0):.2f}",
                (r.get("search") or {}).get("rank") or "–",
                ", ".join((r.get("first_blocks") or [])[:3]) or r.get("error", "")[:80],
            ]
            for r in misses
        ]
        parts.append(
            markdown_table(
                [
                    "case",
                    "split",
                    "dist",
                    "verdict",
                    "best share",
                    "search rank",
                    "round-1 evidence (first 3)",
                ],
                rows,
            )
        )
    return "\n".join(parts) + "\n" + render_tools(results)


TOOL_LABELS = ("passive", "explorer")
"""Runs on the same (tool-offering) code: the passive oracle and the exploring stand-in."""
TOOL_HEADERS = [
    "group",
    "stand-in",
    "cases",
    "all shown r1",
    "r1, the loop's context alone",
    "all shown by last round",
    "last round, context alone",
    "fixed",
    "chars/request (median, tool turns included)",
    "max",
    "requests/case",
    "tokens/repair (median)",
    "tool calls/case",
]


def summarize_tools(records: Sequence[Record]) -> Record:
    """Visibility with and without tool results, requests, tokens and tool calls of one group."""
    n = len(records)
    tokens = [r["tokens"] for r in records if r.get("tokens")]
    turns = [int(r.get("turns") or 0) for r in records]
    medians = [r["turn_chars_median"] for r in records if r.get("turns")]
    return {
        "cases": n,
        "round1_all": sum(1 for r in records if r.get("round1_all")),
        "context_round1_all": sum(1 for r in records if r.get("context_round1_all")),
        "last_all": sum(1 for r in records if r.get("last_all")),
        "context_last_all": sum(1 for r in records if r.get("context_last_all")),
        "fixed": sum(1 for r in records if r.get("fixed")),
        "turn_chars_median": int(statistics.median(medians)) if medians else 0,
        "chars_max": max(
            (
                int(r.get("turn_chars_max") or max((q["chars"] for q in r.get("requests") or ()), default=0))
                for r in records
            ),
            default=0,
        ),
        "turns_mean": round(statistics.mean(turns), 1) if turns else 0.0,
        "tokens_median": int(statistics.median(tokens)) if tokens else 0,
        "tool_calls_mean": round(statistics.mean(int(r.get("tool_calls") or 0) for r in records), 1)
        if n
        else 0.0,
        "tool_calls": {
            name: sum((r.get("tool_calls_by_name") or {}).get(name, 0) for r in records)
            for name in sorted({k for r in records for k in (r.get("tool_calls_by_name") or {})})
        },
    }


def _by_split(r: Record) -> str:
    return str(r.get("split", ""))


def render_tools(results: Record) -> str:
    """The table of the active-retrieval runs (``passive`` vs ``explorer``), by split."""
    runs = {label: results[label] for label in TOOL_LABELS if results.get(label)}
    if not runs:
        return ""
    parts = ["\n**Active retrieval (tools)**: the same code, the passive oracle vs the exploring stand-in:\n"]
    for label, run in runs.items():
        code = run.get("code", {})
        parts.append(
            f"- **{label}**: {run['date']}, code {code.get('root', '?')} at {code.get('head', '?')}"
            f" ({code.get('changed', 0)} changed files under jobs/ and indexing/), "
            f"{len(run['records'])} cases in {run.get('elapsed_s', 0):.0f} s."
        )
    keys: list[tuple[str, Callable[[Record], str]]] = [
        ("tuned", _by_split),
        ("held_out", _by_split),
        (HELD_OUTSIDE, _held_out_source),
        (HELD_NEW, _held_out_source),
        (HELD_NEWER, _held_out_source),
        *((group, _held_out_source) for group in BLIND_GROUPS),
    ]
    rows: list[list[object]] = []
    for name, key in keys:
        for label, run in runs.items():
            group = [r for r in run["records"] if key(r) == name]
            if not group:
                continue
            s = summarize_tools(group)
            n = s["cases"]
            calls = ", ".join(f"{k} {v}" for k, v in s["tool_calls"].items())
            rows.append(
                [
                    name,
                    label,
                    n,
                    _pct(s["round1_all"], n),
                    _pct(s["context_round1_all"], n),
                    _pct(s["last_all"], n),
                    _pct(s["context_last_all"], n),
                    _pct(s["fixed"], n),
                    f"{s['turn_chars_median']:,}",
                    f"{s['chars_max']:,}",
                    f"{s['turns_mean']:.1f}",
                    f"{s['tokens_median']:,}",
                    f"{s['tool_calls_mean']}" + (f" ({calls})" if calls else ""),
                ]
            )
    parts.append("\n" + markdown_table(TOOL_HEADERS, rows))
    explorer = runs.get("explorer")
    if explorer:
        gained = [r for r in explorer["records"] if r.get("last_all") and not r.get("context_last_all")]
        parts.append(
            f"\n*explorer*: cases whose lines only a tool result showed: {len(gained)}"
            + (f" ({_named_ids(gained, blind_ids(results))})" if gained else "")
            + "."
        )
    return "\n".join(parts) + "\n"


def merge_and_render(path: Path, label: str, run: Record) -> None:
    """Store ``run`` under ``label`` in ``path`` (other labels kept) and write the markdown beside it."""
    results: Record = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    old = results.get(label)
    if old:  # a partial re-run replaces its cases only
        keep = {r["id"] for r in run["records"]}
        run["records"] = [r for r in old["records"] if r["id"] not in keep] + run["records"]
        run["records"].sort(key=lambda r: (r.get("split", ""), r["id"]))
    results[label] = run
    path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    path.with_suffix(".md").write_text(render(results), encoding="utf-8")
