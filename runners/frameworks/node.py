"""``node --test``: its JUnit reporter (see :mod:`runners.commands`) or its TAP
(:func:`runners.results_js.parse_node_tap`)."""

from __future__ import annotations

import re

from runners.frameworks.row import Row
from runners.frameworks.shell import NPM_TEST, append_to_last, split_last
from runners.results_js import parse_node_tap

# `node [node options] --test`: the reporter flags go right after `--test` (node reads options only
# before the first file argument).
INVOKES = re.compile(r"(?:^|\s)node(?:\s+-{1,2}[\w-]+(?:=\S+|\s+[^-\s]\S*)?)*?\s+--test(?=\s|$)")
ARGS = (
    "--test-reporter=spec --test-reporter-destination=stdout "
    '--test-reporter=junit --test-reporter-destination="$ARCS_OUT/junit.xml"'
)


def adapt(command: str, last: str) -> str:
    """The ``junit`` reporter to a file and ``spec`` on stdout (also through an ``npm test`` that is
    exactly ``node --test``, which :mod:`runners.commands` checks); a user's own reporter is left alone:
    reporters and destinations pair up in order."""
    if "--test-reporter" in last:
        return command
    if NPM_TEST.match(last) and re.fullmatch(r"npm\s+(?:run\s+)?test(?:\s+--ignore-scripts)?", last):
        return append_to_last(command, "-- " + ARGS)
    head, _ = split_last(command)
    if m := INVOKES.search(last):
        return head + last[: m.end()] + " " + ARGS + last[m.end() :]
    return command


ROW = Row(
    name="node",
    command=re.compile(r"(?:^|[\s/;&|(])node(?:\s+-{1,2}[\w-]+(?:=\S+|\s+[^-\s]\S*)?)*?\s+--test(?=\s|$)"),
    signature=re.compile(r"^TAP version \d+\n(?:.*\n)*?# Subtest: ", re.M),
    parse=parse_node_tap,
    runtime="node",
    adapt=adapt,
    report="junit",
    report_npm_script="node --test",
)
