"""vitest: its JUnit reporter (see :mod:`runners.commands`) or its default text (:mod:`runners.results_js`)."""

from __future__ import annotations

import re

from runners.frameworks.jest import select
from runners.frameworks.row import Row, flags
from runners.frameworks.shell import NPM_TEST, append_to_last
from runners.results_js import parse_vitest_text

INVOKES = re.compile(r"(?:^|\s)(?:npx\s+|yarn\s+|pnpm\s+(?:exec\s+)?)?vitest(?=\s|$)")


def adapt(command: str, last: str) -> str:
    """vitest's built-in ``junit`` reporter next to the default one."""
    args = '--reporter=default --reporter=junit --outputFile.junit="$ARCS_OUT/junit.xml"'
    if NPM_TEST.match(last):
        return append_to_last(command, ("-- " if " -- " not in f" {last} " else "") + args)
    return append_to_last(command, args) if INVOKES.search(last) else command


ROW = Row(
    name="vitest",
    command=re.compile(r"\bvitest\b"),
    signature=re.compile(r"^\s*Test Files\s+\d", re.M),
    parse=parse_vitest_text,
    runtime="node",
    fail_fast=flags("vitest", ("--bail", "optional")),
    packages=("vitest",),
    adapt=adapt,
    select=select,
    report="junit",
    report_via_yarn=False,
)
