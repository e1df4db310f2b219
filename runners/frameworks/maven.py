"""Maven (surefire XML gathered by :mod:`runners.commands`, else its text) and Gradle (its
test-results XML; its text is read like Maven's)."""

from __future__ import annotations

import re

from runners.frameworks.row import Row, flags
from runners.frameworks.shell import quote_all
from runners.results_compiled import parse_maven_text


def select(head: str, last: str, tokens: list[str], ids: list[str]) -> str | None:
    """``-Dtest=Class#a+b,Other`` (and no failure when a module has none of them)."""
    by_class: dict[str, list[str]] = {}
    for test_id in ids:
        cls, _, method = test_id.partition("#")
        by_class.setdefault(cls, []).append(method)
    spec = ",".join(f"{c}#{'+'.join(m for m in ms if m)}" if any(ms) else c for c, ms in by_class.items())
    kept = [t for t in tokens if not t.startswith("-Dtest=")]
    return head + quote_all([*kept, f"-Dtest={spec}", "-Dsurefire.failIfNoSpecifiedTests=false"])


def select_gradle(head: str, last: str, tokens: list[str], ids: list[str]) -> str | None:
    """``--tests=Class.method`` per id."""
    return head + quote_all([*tokens, *(f"--tests={t.replace('#', '.')}" for t in ids)])


ROW = Row(
    name="maven",
    command=re.compile(r"(?:^|[\s/])mvnw?\b"),
    signature=re.compile(r"T E S T S|^\[(ERROR|INFO)\] Tests run: \d+", re.M),
    parse=parse_maven_text,
    fail_fast=flags("maven", ("-ff", "none"), ("--fail-fast", "none")),
    select=select,
    report="junit",
    report_unadapted=re.compile(""),
    report_files="*/target/s*-reports/TEST-*.xml",
)

GRADLE = Row(
    name="gradle",
    command=re.compile(r"(?:^|[\s/])gradlew?\b"),
    signature=None,
    parse=parse_maven_text,
    fail_fast=flags("gradle", ("--fail-fast", "none")),
    select=select_gradle,
    report="junit",
    report_unadapted=re.compile(""),
    report_files="*/build/test-results/*/TEST-*.xml",
)
