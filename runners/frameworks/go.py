"""go test: ``-json`` events or its text (:mod:`runners.results_compiled`)."""

from __future__ import annotations

import re

from runners.frameworks.row import Row, flags
from runners.results_compiled import parse_go_text

ROW = Row(
    name="go",
    command=re.compile(r"\bgo test\b|\bgotestsum\b"),
    signature=re.compile(r"^(--- (FAIL|PASS): |=== RUN |ok  \t|FAIL\t)", re.M),
    parse=parse_go_text,
    fail_fast=flags("go", ("-failfast", "none"), ("--failfast", "none")),
)
