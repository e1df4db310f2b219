"""jest (every major from 25): ``jest-junit`` when installed, else its default reporter's text
(:func:`runners.results_js.parse_jest_text`; durations such as ``(28ms)``/``(28 ms)`` are not part
of an id)."""

from __future__ import annotations

import re

from runners.frameworks.row import Row, flags
from runners.frameworks.shell import NPM_TEST, append_to_last, quote_all, regex_escape
from runners.results_js import parse_jest_text


def select(head: str, last: str, tokens: list[str], ids: list[str]) -> str | None:
    """``<files> -t '^(?:name|name)$'`` (jest and vitest; through ``npm test --``)."""
    files: list[str] = []
    names: list[str] = []
    for test_id in ids:
        file, sep, name = test_id.partition("::")
        if not sep:
            file, name = "", test_id
        if file and file not in files:
            files.append(file)
        if name not in names:
            names.append(name)
    pattern = "^(?:" + "|".join(regex_escape(n) for n in names) + ")$"
    extra = [*files, "-t", pattern]
    if NPM_TEST.match(last):
        dashes = [] if "--" in tokens else ["--"]
        return head + quote_all([*tokens, *dashes, *extra])
    return head + quote_all([*tokens, *extra])


INVOKES = re.compile(r"(?:^|\s)(?:npx\s+|yarn\s+|pnpm\s+(?:exec\s+)?)?jest(?=\s|$)")


def adapt(command: str, last: str) -> str:
    """The ``jest-junit`` reporter next to the default one (only used when it is installed)."""
    args = "--ci --reporters=default --reporters=jest-junit"
    if NPM_TEST.match(last):
        return append_to_last(command, ("-- " if " -- " not in f" {last} " else "") + args)
    return append_to_last(command, args) if INVOKES.search(last) else command


ROW = Row(
    name="jest",
    command=re.compile(r"\bjest\b|\breact-scripts test\b"),
    signature=re.compile(r"^Tests:\s+.*\btotal$|^\s+● ", re.M),
    parse=parse_jest_text,
    runtime="node",
    fail_fast=flags("jest", ("--bail", "optional"), ("-b", "none")),
    packages=("jest",),
    adapt=adapt,
    select=select,
    report="junit",
    report_env=(
        ("JEST_JUNIT_OUTPUT_NAME", "junit.xml"),
        ("JEST_JUNIT_CLASSNAME", "{filepath}"),
        ("JEST_JUNIT_TITLE", "{classname} {title}"),
        ("JEST_JUNIT_SUITE_NAME", "{filepath}"),
        ("JEST_JUNIT_ADD_FILE_ATTRIBUTE", "true"),
    ),
    report_exports='export JEST_JUNIT_OUTPUT_DIR="$ARCS_OUT"; ',
    report_package="jest-junit",
    report_via_yarn=False,
)
