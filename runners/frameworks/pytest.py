"""pytest: read from its JUnit XML (see :mod:`runners.commands`) or its text (:mod:`runners.results_python`)."""

from __future__ import annotations

import re

from runners.frameworks.row import Row, flags
from runners.frameworks.shell import append_to_last, quote_all
from runners.results_python import parse_pytest_text

_PYTEST_VALUE_OPTS = frozenset(
    [
        "-k",
        "-m",
        "-c",
        "-p",
        "-o",
        "-n",
        "-W",
        "-r",
        "--rootdir",
        "--confcutdir",
        "--basetemp",
        "--junitxml",
        "--junit-xml",
        "--junit-prefix",
        "--tb",
        "--maxfail",
        "--durations",
        "--log-level",
        "--log-cli-level",
        "--cov-report",
        "--cov-config",
        "--cov-fail-under",
        "--ignore",
        "--ignore-glob",
        "--deselect",
        "--import-mode",
        "--capture",
        "--timeout",
        "--dist",
        "--maxprocesses",
        "--randomly-seed",
        "--override-ini",
        "--numprocesses",
        "--reruns",
        "--reruns-delay",
        "--only-rerun",
        "--count",
    ]
)
_PYTEST_DROP = frozenset(
    {"--reruns", "--reruns-delay", "--only-rerun", "--lf", "--last-failed", "--ff", "-x", "--exitfirst"}
)


def select(head: str, last: str, tokens: list[str], ids: list[str]) -> str | None:
    """The pytest command with the ids as its only positional arguments (reruns dropped)."""
    idx = next((i for i, t in enumerate(tokens) if t.endswith("pytest") or t == "py.test"), None)
    if idx is None:
        return None
    kept: list[str] = []
    rest = tokens[idx + 1 :]
    i = 0
    while i < len(rest):
        tok = rest[i]
        name = tok.split("=", 1)[0]
        takes_value = (
            name in _PYTEST_VALUE_OPTS
            and "=" not in tok
            and not (name.startswith("-") and len(name) == 2 and len(tok) > 2)
        )
        if name in _PYTEST_DROP:
            i += 2 if takes_value else 1  # reruns would hide the flakiness triage is looking for
            continue
        if tok.startswith("-"):
            kept.append(tok)
            if takes_value and i + 1 < len(rest):
                kept.append(rest[i + 1])
                i += 1
        # Positional arguments (paths, node ids) are replaced by the selected ids.
        i += 1
    return head + quote_all([*tokens[: idx + 1], *kept, *ids])


INVOKES = re.compile(r"(?:^|\s)(?:\S*python[\d.]*\s+-m\s+pytest|\S*pytest|py\.test)(?=\s|$)")


def adapt(command: str, last: str) -> str:
    """JUnit XML with file/line attributes, and no cache folder written into the workspace."""
    if not INVOKES.search(last):
        return command
    return append_to_last(
        command, '--junitxml="$ARCS_OUT/junit.xml" -o junit_family=xunit1 -p no:cacheprovider'
    )


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
    adapt=adapt,
    select=select,
    runtime="python",
    report="junit",
)
