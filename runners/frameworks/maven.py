"""Maven (surefire XML gathered by :mod:`runners.commands`, else its text) and Gradle (its
test-results XML; its text is read like Maven's)."""

from __future__ import annotations

import re

from runners.frameworks.row import Row, flags
from runners.results_compiled import parse_maven_text

ROW = Row(
    name="maven",
    command=re.compile(r"(?:^|[\s/])mvnw?\b"),
    signature=re.compile(r"T E S T S|^\[(ERROR|INFO)\] Tests run: \d+", re.M),
    parse=parse_maven_text,
    fail_fast=flags("maven", ("-ff", "none"), ("--fail-fast", "none")),
)

GRADLE = Row(
    name="gradle",
    command=re.compile(r"(?:^|[\s/])gradlew?\b"),
    signature=None,
    parse=parse_maven_text,
    fail_fast=flags("gradle", ("--fail-fast", "none")),
)
