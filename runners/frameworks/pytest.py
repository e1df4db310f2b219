"""pytest: read from its JUnit XML (see :mod:`runners.commands`) or its text (:mod:`runners.results_python`)."""

from __future__ import annotations

import re

from runners.frameworks.row import Row, flags
from runners.results_python import parse_pytest_text

ROW = Row(
    name="pytest",
    command=re.compile(r"\bpytest\b|\bpy\.test\b"),
    signature=re.compile(
        r"^=+ (test session starts|FAILURES|ERRORS|short test summary info) =+$|^(FAILED|ERROR) \S+\.py",
        re.M,
    ),
    parse=parse_pytest_text,
    fail_fast=flags(
        "pytest",
        ("-x", "none"),
        ("--exitfirst", "none"),
        ("--maxfail", "required"),
        ("--sw", "none"),
        ("--stepwise", "none"),
    ),
)
