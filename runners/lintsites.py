"""Lint and type-check output read into sites: ruff, flake8, pylint, eslint, tsc, mypy.

Pure syntax (``runners.results`` turns sites into failures). Formats read:

- ``path:line:col: CODE message`` (ruff ``concise``, flake8, pylint's ``path:line:col: C0114: msg (symbol)``);
- ruff's ``full`` format (the default since 0.9: ``CODE message`` then `` --> path:line:col``);
- eslint ``stylish`` (a path line, then ``  line:col  error  message  rule`` rows) and ``unix``
  (``path:line:col: message [Error/rule]``);
- tsc (``path(line,col): error TS2322: ...`` and the ``--pretty`` ``path:line:col - error TS2322: ...``);
- mypy (``path:line: error: message  [code]``; the same shape from a C compiler is ``compiler``).

Only sites that fail the command count: eslint/tsc/mypy warnings and notes are left out unless
there is no error at all (``eslint --max-warnings 0`` fails on warnings).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_PATH = r"(?P<path>[^\s:()][^:()]*?\.[\w]+)"
_CONCISE = re.compile(
    rf"^{_PATH}:(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+|[a-z]+(?:-[a-z]+)+):? (?:\[\*\] )?(?P<msg>.*)$"
)
_PYLINT_SYMBOL = re.compile(r"\s\((?P<symbol>[a-z]+(?:-[a-z]+)*)\)$")
_RUFF_HEAD = re.compile(r"^(?P<code>[A-Z]+\d+|[a-z]+(?:-[a-z]+)+):? (?:\[\*\] )?(?P<msg>.+)$")
_RUFF_ARROW = re.compile(rf"^\s*--> {_PATH}:(?P<line>\d+):(?P<col>\d+)\s*$")
_ESLINT_FILE = re.compile(
    r"^(?P<path>(?:[A-Za-z]:\\|/|\.{0,2}/?)?[\w./\\@+-]+\.[cm]?[jt]sx?|\S+\.(?:vue|svelte))$"
)
_ESLINT_ROW = re.compile(
    r"^\s+(?P<line>\d+):(?P<col>\d+)\s+(?P<sev>error|warning)\s+(?P<msg>.+?)(?:\s{2,}(?P<rule>[@\w/-]+))?\s*$"
)
_ESLINT_UNIX = re.compile(
    rf"^{_PATH}:(?P<line>\d+):(?P<col>\d+): (?P<msg>.*) \[(?P<sev>Error|Warning)(?:/(?P<rule>[^\]]+))?\]$"
)
_TSC = re.compile(
    r"^(?P<path>[^\s(][^(]*?)\((?P<line>\d+),(?P<col>\d+)\): (?P<sev>error|warning) (?P<code>TS\d+): (?P<msg>.*)$"
)
_TSC_PRETTY = re.compile(
    rf"^{_PATH}:(?P<line>\d+):(?P<col>\d+) - (?P<sev>error|warning) (?P<code>TS\d+): (?P<msg>.*)$"
)
_MYPY = re.compile(
    rf"^{_PATH}:(?P<line>\d+):(?:(?P<col>\d+):)? (?P<sev>error|note|warning): (?P<msg>.*?)(?:  \[(?P<code>[\w-]+)\])?$"
)
_RUFF_SUMMARY = re.compile(r"^Found \d+ errors?\b|^All checks passed!", re.M)
_PYLINT_MARK = re.compile(r"^\*{5,} Module |^Your code has been rated at", re.M)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass(frozen=True, slots=True)
class Site:
    """One place a linter or type checker reported."""

    tool: str
    path: str
    line: int
    col: int | None
    code: str
    """The rule: ``F401``, ``no-unused-vars``, ``TS2322``, ``return-value`` (``"error"`` when none)."""
    message: str
    severity: str = "error"

    @property
    def key(self) -> str:
        """``tool:path:code``: what identifies the site across runs (lines move when code is edited)."""
        return f"{self.tool}:{self.path}:{self.code}"


def _concise_tool(text: str) -> str:
    if _PYLINT_MARK.search(text):
        return "pylint"
    if _RUFF_SUMMARY.search(text):
        return "ruff"
    return "flake8"


def parse_lint(text: str) -> list[Site]:
    """Every failing site in ``text``, in output order (empty when no known format matches)."""
    text = _ANSI.sub("", text).replace("\r\n", "\n")
    lines = text.splitlines()
    concise_tool = _concise_tool(text)
    sites: list[Site] = []
    eslint_file: str | None = None
    ruff_head: re.Match[str] | None = None
    for line in lines:
        if (m := _ESLINT_FILE.match(line.strip())) and not line.startswith(" "):
            eslint_file = m["path"]
            continue
        if eslint_file is not None and (m := _ESLINT_ROW.match(line)):
            rule = m["rule"] or ("parse" if m["msg"].startswith("Parsing error") else "error")
            sites.append(Site("eslint", eslint_file, int(m["line"]), int(m["col"]), rule, m["msg"], m["sev"]))
            continue
        if line.strip() and not line.startswith(" "):
            eslint_file = None
        if m := _ESLINT_UNIX.match(line):
            sev = m["sev"].lower()
            sites.append(
                Site("eslint", m["path"], int(m["line"]), int(m["col"]), m["rule"] or "error", m["msg"], sev)
            )
            continue
        if m := _TSC.match(line) or _TSC_PRETTY.match(line):
            sites.append(
                Site("tsc", m["path"].strip(), int(m["line"]), int(m["col"]), m["code"], m["msg"], m["sev"])
            )
            continue
        if m := _CONCISE.match(line):
            msg, code = m["msg"], m["code"]
            tool = concise_tool
            if tool == "pylint" and (sym := _PYLINT_SYMBOL.search(msg)):
                msg = msg[: sym.start()]
            sites.append(Site(tool, m["path"], int(m["line"]), int(m["col"]), code, msg))
            continue
        if m := _MYPY.match(line):
            sites.append(
                Site(
                    "mypy" if m["path"].endswith((".py", ".pyi")) else "compiler",
                    m["path"],
                    int(m["line"]),
                    int(m["col"]) if m["col"] else None,
                    m["code"] or "error",
                    m["msg"],
                    m["sev"],
                )
            )
            continue
        if ruff_head is not None and (m := _RUFF_ARROW.match(line)):
            sites.append(
                Site("ruff", m["path"], int(m["line"]), int(m["col"]), ruff_head["code"], ruff_head["msg"])
            )
            ruff_head = None
            continue
        ruff_head = (
            _RUFF_HEAD.match(line) if not line.startswith(" ") else ruff_head if not line.strip() else None
        )
    return failing(sites)


def failing(sites: Sequence[Site]) -> list[Site]:
    """The sites that fail the command: the errors, or every site when there is no error."""
    errors = [s for s in sites if s.severity == "error"]
    if errors:
        return errors
    return [s for s in sites if s.severity == "warning"]
