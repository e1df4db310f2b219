"""jest (every major from 25): ``jest-junit`` when installed, else its default reporter's text
(:func:`runners.results_js.parse_jest_text`; durations such as ``(28ms)``/``(28 ms)`` are not part
of an id)."""

from __future__ import annotations

import re

from runners.frameworks.row import Row, flags
from runners.results_js import parse_jest_text

ROW = Row(
    name="jest",
    command=re.compile(r"\bjest\b|\breact-scripts test\b"),
    signature=re.compile(r"^Tests:\s+.*\btotal$|^\s+● ", re.M),
    parse=parse_jest_text,
    runtime="node",
    fail_fast=flags("jest", ("--bail", "optional"), ("-b", "none")),
    packages=("jest",),
)
