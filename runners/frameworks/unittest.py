"""unittest: its verbose/default text (:mod:`runners.results_python`)."""

from __future__ import annotations

import re

from runners.frameworks.row import Row, flags
from runners.results_python import parse_unittest_text

ROW = Row(
    name="unittest",
    command=re.compile(r"\bunittest\b"),
    signature=re.compile(r"^Ran \d+ tests? in ", re.M),
    parse=parse_unittest_text,
    fail_fast=flags("unittest", ("-f", "none"), ("--failfast", "none")),
)
