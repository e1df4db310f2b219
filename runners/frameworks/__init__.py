"""The frameworks table: one module and one row per test framework (issue 30).

:data:`TABLE` is the one place that names the frameworks ARCS reads: which command runs one
(:func:`of_command`), which output is one's (:func:`detect`), its text parser, its fail-fast
flags (:mod:`runners.failfast`), how to run only some of its tests (``select``, used by
:meth:`runners.commands.ResolvedCommand.selecting`), the runtime it needs and the npm packages that
point at it behind ``npm test``, and how to ask it for a machine-readable report (``adapt``: JUnit
XML, ``go test -json``). Its order is the precedence: the first row whose pattern matches wins.
It also says which report the adapted command gives (``report``, read by
:attr:`runners.commands.ResolvedCommand.report`) and what that report needs (``report_*``: jest-junit
installed, an ``npm test`` script that is exactly ``node --test``, no yarn/pnpm in front, per-class
XML files to gather). Adding a framework is one module here and one row in :data:`TABLE`.
"""

from __future__ import annotations

from collections.abc import Mapping

from runners.frameworks import cargo, go, jest, maven, mocha, node, pytest, tap, unittest, vitest
from runners.frameworks.row import FailFastFlag, Row
from runners.results_types import Framework, strip_ansi

TABLE: tuple[Row, ...] = (
    pytest.ROW,
    unittest.ROW,
    go.ROW,
    cargo.ROW,
    vitest.ROW,
    jest.ROW,
    mocha.ROW,
    node.ROW,
    tap.ROW,
    maven.ROW,
    maven.GRADLE,
)

BY_NAME: Mapping[str, Row] = {row.name: row for row in TABLE}


def of_command(command: str) -> Framework | None:
    """The framework a shell command runs, judged from the command text alone."""
    for row in TABLE:
        if row.command is not None and row.command.search(command):
            return row.name
    return None


def detect(text: str) -> list[str]:
    """Frameworks whose output signature appears in ``text`` (table order)."""
    plain = strip_ansi(text)
    return [row.name for row in TABLE if row.signature is not None and row.signature.search(plain)]


def of_packages(names: set[str]) -> Framework | None:
    """The first framework (table order) one of whose npm packages is in ``names``."""
    for row in TABLE:
        if any(p in names for p in row.packages):
            return row.name
    return None


def on_runtime(runtime: str) -> frozenset[str]:
    """The frameworks whose tests run on ``runtime`` (``node``: jest, vitest, mocha, ...)."""
    return frozenset(row.name for row in TABLE if row.runtime == runtime)


def fail_fast_flags() -> tuple[FailFastFlag, ...]:
    """Every fail-fast flag of every row."""
    return tuple(f for row in TABLE for f in row.fail_fast)


__all__ = [
    "BY_NAME",
    "TABLE",
    "FailFastFlag",
    "Row",
    "detect",
    "fail_fast_flags",
    "of_command",
    "of_packages",
]
