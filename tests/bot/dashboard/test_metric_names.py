"""``/metrics`` passes ``promtool check metrics``: its lint rules (client_golang's promlint),
applied here to a real scrape because promtool is a Go binary no package index ships.

The rules: counters end in ``_total`` and nothing else does; ``_bucket``/``_count``/``_sum`` and
the ``le`` label belong to histograms; snake_case names and labels; base units, not abbreviations;
no type name inside a metric name; no ``:`` (reserved for recording rules); help text on each."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.testclient import TestClient

from bot.dashboard.metrics import MetricsEndpoint
from bot.settings import Settings
from bot.store.store import Store

# promlint's lists (client_golang prometheus/testutil/promlint).
UNIT_ABBREVIATIONS = {"s", "ms", "us", "ns", "sec", "b", "kb", "mb", "gb", "tb", "pb", "m", "h", "d"}
NON_BASE_UNITS = {
    "minutes": "seconds", "hours": "seconds", "days": "seconds", "weeks": "seconds",
    "milliseconds": "seconds", "microseconds": "seconds", "nanoseconds": "seconds",
    "kilobytes": "bytes", "megabytes": "bytes", "gigabytes": "bytes", "bits": "bytes",
    "fahrenheit": "celsius", "percent": "ratio",
}  # fmt: skip
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")
CAMEL = re.compile(r"[a-z][A-Z]")


def lint(exposition: str) -> list[str]:
    """Problems promtool would report for ``exposition`` (Prometheus text format 0.0.4)."""
    types: dict[str, str] = {}
    helps: set[str] = set()
    labels: dict[str, set[str]] = {}
    for line in exposition.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
        elif line.startswith("# HELP "):
            parts = line.split(" ", 3)
            if len(parts) == 4 and parts[3].strip():
                helps.add(parts[2])
        elif line and not line.startswith("#"):
            sample = re.match(r"([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?", line)
            assert sample, line
            family = _family(sample.group(1), types)
            labels.setdefault(family, set()).update(
                re.findall(r"([A-Za-z_][A-Za-z0-9_]*)=", sample.group(2) or "")
            )
    problems: list[str] = []
    for name, kind in types.items():
        say = problems.append
        if name not in helps:
            say(f"{name}: no help text")
        if kind == "counter" and not name.endswith("_total"):
            say(f'{name}: counter metrics should have "_total" suffix')
        if kind != "counter" and name.endswith("_total"):
            say(f'{name}: non-counter metrics should not have "_total" suffix')
        if kind not in ("histogram", "summary"):
            for suffix in ("_bucket", "_count", "_sum"):
                if name.endswith(suffix):
                    say(f'{name}: non-histogram and non-summary metrics should not have "{suffix}" suffix')
        if kind != "histogram" and "le" in labels.get(name, set()):
            say(f'{name}: non-histogram metrics should not have "le" label')
        if kind != "summary" and "quantile" in labels.get(name, set()):
            say(f'{name}: non-summary metrics should not have "quantile" label')
        if CAMEL.search(name) or any(CAMEL.search(label) for label in labels.get(name, set())):
            say(f"{name}: metric names and labels should be written in 'snake_case' not 'camelCase'")
        if ":" in name:
            say(f"{name}: metric names should not contain ':'")
        parts = name.split("_")
        for part in parts:
            if part in UNIT_ABBREVIATIONS:
                say(f'{name}: metric names should not contain abbreviated units ("{part}")')
            if part in NON_BASE_UNITS:
                say(f'{name}: use base unit "{NON_BASE_UNITS[part]}" instead of "{part}"')
        for type_name in TYPES:
            if type_name in parts:
                say(f"{name}: metric name should not include type '{type_name}'")
    return problems


def _family(sample_name: str, types: dict[str, str]) -> str:
    """The ``# TYPE`` family a sample belongs to (histogram samples carry a suffix)."""
    if sample_name in types:
        return sample_name
    for suffix in ("_bucket", "_count", "_sum", "_created"):
        base = sample_name.removesuffix(suffix)
        if base != sample_name and types.get(base) in ("histogram", "summary", "counter"):
            return base
    return sample_name


def test_the_scrape_passes_promtools_lint_rules(settings: Settings, tmp_path: Path) -> None:
    with Store.open(f"sqlite:///{tmp_path / 'arcs.db'}") as store:
        store.record_pr(repo="acme/gadgets", number=1, url="https://x/1", branch="arcs/1", state="open")
        endpoint = MetricsEndpoint(settings, store)
        reply = TestClient(Starlette(routes=[Route("/metrics", endpoint.handle)])).get("/metrics")
    assert reply.status_code == 200
    assert lint(reply.text) == []
    assert "# TYPE arcs_pull_requests gauge" in reply.text  # the renamed gauge (was arcs_prs_total)


@pytest.mark.parametrize(
    ("exposition", "problem"),
    [
        (
            "# HELP a_total x\n# TYPE a_total gauge\na_total 1\n",
            'non-counter metrics should not have "_total"',
        ),
        ("# HELP a x\n# TYPE a counter\na 1\n", 'counter metrics should have "_total" suffix'),
        ("# TYPE a_total counter\na_total 1\n", "no help text"),
        ("# HELP a_count x\n# TYPE a_count gauge\na_count 1\n", 'should not have "_count" suffix'),
        ('# HELP a x\n# TYPE a gauge\na{le="1"} 1\n', 'should not have "le" label'),
        ("# HELP aB x\n# TYPE aB gauge\naB 1\n", "snake_case"),
        ("# HELP a_ms x\n# TYPE a_ms gauge\na_ms 1\n", 'abbreviated units ("ms")'),
        ("# HELP a_milliseconds x\n# TYPE a_milliseconds gauge\na_milliseconds 1\n", 'base unit "seconds"'),
        ("# HELP a_gauge x\n# TYPE a_gauge gauge\na_gauge 1\n", "should not include type 'gauge'"),
    ],
)
def test_the_lint_catches_what_promtool_reports(exposition: str, problem: str) -> None:
    found = lint(exposition)
    assert any(problem in p for p in found), found
