"""The row type of the frameworks table (:mod:`runners.frameworks`): everything ARCS knows about one
test framework in one place, and the fail-fast flag type its rows list."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from runners.results_types import Framework, Parsed

Report = Literal["junit", "go-json", "text"]
"""Where a run's per-test results come from: a JUnit XML file, ``go test -json`` events, the text."""

ValueKind = Literal["none", "required", "optional"]
"""Whether a flag takes a value: never, always (``--maxfail N``/``--maxfail=N``), or only as
``--flag=N`` or a following number (``--bail 2``)."""


Adapter = Callable[[str, str], str]
"""``(command, last) -> command``: the shell line and its last simple command (plain, see
:func:`runners.frameworks.shell.plain`); the line asking for the report, or as it was."""

Selector = Callable[[str, str, list[str], list[str]], "str | None"]
"""``(head, last, tokens, ids) -> command``: the shell line before the last simple command, that
command, its tokens and the test ids to run; the narrowed line, or None when it cannot."""


@dataclass(frozen=True, slots=True)
class FailFastFlag:
    """One fail-fast flag of one runner."""

    runner: str
    """The framework name (a row's :attr:`Row.name`)."""
    flag: str
    value: ValueKind = "none"


@dataclass(frozen=True, slots=True)
class Row:
    """One test framework: how to recognise it, read it and run all of it."""

    name: Framework
    command: re.Pattern[str] | None
    """Matches a shell command (or an npm script) that runs this framework."""
    signature: re.Pattern[str] | None
    """Matches this framework's output (``None``: read only when the command names it)."""
    parse: Callable[[str], Parsed]
    """The text parser of its output."""
    fail_fast: tuple[FailFastFlag, ...] = ()
    """Flags that stop the run at the first failure (removed for diagnosis)."""
    run_all: str = ""
    """The flag that makes a runner which stops early *by default* run everything (cargo)."""
    packages: tuple[str, ...] = ()
    """npm packages whose presence means ``npm test`` probably runs this framework."""
    adapt: Adapter | None = None
    """Asks the command for a machine-readable report (JUnit XML, ``go test -json``) or for the
    output the parser needs (``unittest -v``); ``None``: its text is read as it is."""
    select: Selector | None = None
    """Narrows a simple command to test ids (``None``: the framework cannot select tests)."""
    runtime: str = ""
    """The runtime its tests run on (``node`` for the JavaScript runners: the note names which
    ``node`` the sandbox runs; ``python``: a ``src`` layout goes on ``PYTHONPATH``)."""
    report: Report = "text"
    """What its adapted command gives (:attr:`runners.commands.ResolvedCommand.report`): ``junit``
    (the file :data:`runners.commands.JUNIT_PATH`), ``go-json`` or ``text``; only when :attr:`adapt`
    changed the command or :attr:`report_unadapted` matches it."""
    report_unadapted: re.Pattern[str] | None = None
    """Matches a last simple command that gives :attr:`report` as written (``go test -json``; maven
    and gradle write their XML files whatever the command)."""
    report_files: str = ""
    """``find -path`` pattern of the per-class report files gathered into the one JUnit file."""
    report_env: tuple[tuple[str, str], ...] = ()
    """Environment the report needs (jest-junit's naming options)."""
    report_exports: str = ""
    """Shell run before the command when it writes a report (``$ARCS_OUT`` is the report folder)."""
    report_package: str = ""
    """npm package the report needs: without it in the repository the text is read."""
    report_via_yarn: bool = True
    """Whether report flags survive ``yarn``/``pnpm`` in front of the command (not for scripts)."""
    report_npm_script: str = ""
    """Through ``npm test``, the only test script (whitespace aside) the report flags reach
    (``node --test``); ``""``: any."""


def flags(runner: str, *specs: tuple[str, ValueKind]) -> tuple[FailFastFlag, ...]:
    """``FailFastFlag`` s of ``runner`` from ``(flag, value kind)`` pairs."""
    return tuple(FailFastFlag(runner, flag, value) for flag, value in specs)


__all__ = ["Adapter", "FailFastFlag", "Report", "Row", "Selector", "ValueKind", "flags"]
