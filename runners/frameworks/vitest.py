"""vitest: its JUnit reporter (see :mod:`runners.commands`) or its default text (:mod:`runners.results_js`)."""

from __future__ import annotations

import re

from runners.frameworks.jest import select
from runners.frameworks.row import Row, flags
from runners.results_js import parse_vitest_text

ROW = Row(
    name="vitest",
    command=re.compile(r"\bvitest\b"),
    signature=re.compile(r"^\s*Test Files\s+\d", re.M),
    parse=parse_vitest_text,
    runtime="node",
    fail_fast=flags("vitest", ("--bail", "optional")),
    packages=("vitest",),
    select=select,
)
