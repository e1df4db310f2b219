"""tape, tap and any other TAP producer (:mod:`runners.tap`, :func:`runners.results_js.parse_tap_text`)."""

from __future__ import annotations

import re

from runners.frameworks.row import Row
from runners.results_js import parse_tap_text

ROW = Row(
    name="tap",
    command=re.compile(r"(?:^|[\s/;&|(])(?:tape|tap)(?=\s|$)"),
    signature=re.compile(
        r"^TAP version \d+$"
        r"|^(?:not )?ok 1\b(?=[\s\S]*^1\.\.\d+$)|^1\.\.\d+$(?=[\s\S]*^(?:not )?ok 1\b)",
        re.M,
    ),
    parse=parse_tap_text,
    runtime="node",
    packages=("tape",),
)
