"""``node --test``: its JUnit reporter (see :mod:`runners.commands`) or its TAP
(:func:`runners.results_js.parse_node_tap`)."""

from __future__ import annotations

import re

from runners.frameworks.row import Row
from runners.results_js import parse_node_tap

ROW = Row(
    name="node",
    command=re.compile(r"(?:^|[\s/;&|(])node(?:\s+-{1,2}[\w-]+(?:=\S+|\s+[^-\s]\S*)?)*?\s+--test(?=\s|$)"),
    signature=re.compile(r"^TAP version \d+\n(?:.*\n)*?# Subtest: ", re.M),
    parse=parse_node_tap,
    runtime="node",
)
