"""Formatter and linter checks that have a fix mode: a failing check command -> its fix command.

Pure. The table (``formatters.json``) names, per tool, the flags that make a run a check and the
flags that make it fix: ``ruff format --check`` -> ``ruff format``, ``ruff check`` -> ``ruff check
--fix``, ``black --check``/``--diff`` -> ``black``, ``isort --check(-only)``/``-c``/``--diff`` ->
``isort``, ``prettier --check``/``-c``/``-l`` -> ``prettier --write``, ``eslint`` -> ``eslint --fix``,
``gofmt``/``goimports -l``/``-d`` -> ``-w``, ``rustfmt --check`` -> ``rustfmt``, ``cargo fmt --check``
(also after ``--``) -> ``cargo fmt``. The tool's other flags (its configuration) and its path
arguments are kept.

Recognised through wrappers: ``python -m X`` (any ``pythonN.M``), ``uv run``, ``poetry run``, ``pdm
run``, ``hatch run``, ``pipenv run``, ``npx``, ``bunx``, ``pnpm [exec]``, ``npm exec``, ``yarn [run]``,
a path to the program (``.venv/bin/ruff``, ``node_modules/.bin/eslint``) and leading ``VAR=value``
assignments. A command of several steps (``&&``, ``;``, ``||``, newlines) gives one fix per
recognised step, in order; ``cd DIR`` steps are kept in front of them. Not supported (no plan):
``pre-commit run X`` (its hook environments are installed from the network), ``npm run lint``,
``make lint`` and other indirections whose tool is not on the command line, and checks inside
command substitutions (``test -z "$(gofmt -l .)"``).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

_DATA = Path(__file__).with_name("formatters.json")
_SEPARATORS = frozenset({"&&", ";", "||", "|", "&", ";;", "\n"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON = re.compile(r"^python(?:\d+(?:\.\d+)?)?$")


@dataclass(frozen=True, slots=True)
class Tool:
    """One row of ``formatters.json``."""

    name: str
    program: tuple[str, ...]
    subcommand: tuple[str, ...]
    check_flags: frozenset[str]
    requires_check: bool
    drop_flags: frozenset[str]
    fix_flags: tuple[str, ...]
    value_flags: frozenset[str]
    suffixes: tuple[str, ...]
    explicit_files_flags: tuple[str, ...]
    files: bool


@dataclass(frozen=True, slots=True)
class _Wrapper:
    program: str
    then: tuple[str, ...]
    value_flags: frozenset[str]


@dataclass(frozen=True, slots=True)
class FixStep:
    """The fix of one check step: ``head`` (env, wrapper, program, subcommand) + ``options`` + ``paths``."""

    tool: str
    check: str
    """The step as written in the check command."""
    head: tuple[str, ...]
    options: tuple[str, ...]
    """The step's own options minus its check flags, plus the fix flags (order kept)."""
    paths: tuple[str, ...]
    """The path arguments of the check (empty: the tool's default, usually the whole project)."""
    suffixes: tuple[str, ...]
    explicit_files_flags: tuple[str, ...]
    takes_files: bool
    tail: tuple[str, ...] = ()
    """Arguments after ``--`` (cargo fmt passes them to rustfmt), check flags removed."""

    @property
    def fix(self) -> str:
        """The fix command over everything the check covered."""
        return shlex.join([*self.head, *self.options, *self.paths, *self._tail()])

    def limited_to(self, files: Sequence[str]) -> str | None:
        """The fix command over those of ``files`` this check covers, or None when none are (or the
        tool takes no file list). ``files`` are relative to the folder the step runs in."""
        if not self.takes_files:
            return None
        chosen = [f for f in files if self.covers(f)]
        if not chosen:
            return None
        extra = [f for f in self.explicit_files_flags if f not in self.options]
        chosen = [f"./{f}" if f.startswith("-") else f for f in chosen]
        return shlex.join([*self.head, *self.options, *extra, *chosen])

    def covers(self, path: str) -> bool:
        """True when ``path`` has one of the tool's suffixes and lies under one of the check's paths."""
        if not path.endswith(self.suffixes):
            return False
        if not self.paths:
            return True
        target = PurePosixPath(path)
        for raw in self.paths:
            raw = raw.removeprefix("./")
            if any(c in raw for c in "*?["):
                if _glob(raw).fullmatch(path):
                    return True
                continue
            root = PurePosixPath(raw) if raw not in (".", "") else None
            if root is None or target == root or root in target.parents:
                return True
        return False

    def _tail(self) -> list[str]:
        return ["--", *self.tail] if self.tail else []


@cache
def _glob(pattern: str) -> re.Pattern[str]:
    """A shell glob as the tools read it: ``**/`` any folders, ``*`` and ``?`` within one name."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            c = pattern[i]
            out.append("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c))
            i += 1
    return re.compile("".join(out))


@dataclass(frozen=True, slots=True)
class AutofixPlan:
    """How to fix a failing check command: its fix steps, and the statements they need in front."""

    check: str
    """The original check command: the verification."""
    steps: tuple[FixStep, ...]
    prefix: tuple[str, ...] = ()
    """``cd DIR`` statements of the check, kept in front of the fixes."""

    @property
    def tools(self) -> tuple[str, ...]:
        """The recognised tools, in order."""
        return tuple(s.tool for s in self.steps)

    def script(self, files: Sequence[str] | None = None) -> str | None:
        """The fix as one shell script; ``files`` limits every step that takes files to those it
        covers (a step that covers none of them is left out). None when nothing would run, or
        when a file list is asked for but the check changes folders (paths would be wrong)."""
        if files is not None and self.prefix:
            return None
        lines: list[str] = []
        for step in self.steps:
            line = step.fix if files is None else step.limited_to(files)
            if line is not None:
                lines.append(line)
        if not lines:
            return None
        # One statement per line: a fixer that exits non-zero (unfixable findings left) must not
        # stop the next one; the verification judges the result.
        return "\n".join([*(f"{p} || exit 1" for p in self.prefix), *lines])


def autofix_plan(command: str) -> AutofixPlan | None:
    """The fix plan of a check command, or None when no step is a supported formatter/linter check."""
    try:
        segments = _segments(command)
    except ValueError:
        return None
    steps: list[FixStep] = []
    prefix: list[str] = []
    for seg in segments:
        if seg and seg[0] == "cd" and len(seg) == 2:
            prefix.append(shlex.join(seg))
            continue
        step = _step(seg)
        if step is not None:
            steps.append(step)
    if not steps:
        return None
    return AutofixPlan(check=command, steps=tuple(steps), prefix=tuple(prefix))


def tools() -> tuple[Tool, ...]:
    """The table's tools, in table order."""
    return _table()[0]


# -- parsing ------------------------------------------------------------------------------------


def _segments(command: str) -> list[list[str]]:
    segments: list[list[str]] = [[]]
    for line in command.replace("\\\n", " ").splitlines():  # a CI step's lines are statements
        lex = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lex.whitespace_split = True
        lex.commenters = "#"
        for token in [*lex, ";"]:
            if token in _SEPARATORS or token.strip(";&|") == "":
                if segments[-1]:
                    segments.append([])
                continue
            segments[-1].append(token)
    return [s for s in segments if s]


def _step(seg: Sequence[str]) -> FixStep | None:
    all_tools, wrappers = _table()
    i = 0
    while i < len(seg) and _ASSIGNMENT.match(seg[i]):
        i += 1
    head_end, program = _unwrap(seg, i, wrappers)
    if program is None:
        return None
    for tool in all_tools:
        if program not in tool.program:
            continue
        n = len(tool.subcommand)
        if tuple(seg[head_end : head_end + n]) != tool.subcommand:
            continue
        step = _fix_step(tool, seg, head_end + n)
        if step is not None:
            return step
    return None


def _unwrap(seg: Sequence[str], i: int, wrappers: Mapping[str, _Wrapper]) -> tuple[int, str | None]:
    """Index after the program token, and the program's name (None: no program found)."""
    for _ in range(4):  # wrappers nest at most a few deep (uv run python -m ruff)
        if i >= len(seg):
            return i, None
        name = PurePosixPath(seg[i]).name
        if _PYTHON.match(name):
            if seg[i + 1 : i + 2] == ["-m"] and i + 2 < len(seg):
                return i + 3, seg[i + 2]
            return i, None
        wrapper = wrappers.get(name)
        if wrapper is None:
            return i + 1, name
        i += 1
        if wrapper.then and tuple(seg[i : i + len(wrapper.then)]) == wrapper.then:
            i += len(wrapper.then)
        while i < len(seg) and seg[i].startswith("-"):
            i += 2 if seg[i] in wrapper.value_flags else 1
    return i, None


def _fix_step(tool: Tool, seg: Sequence[str], start: int) -> FixStep | None:
    args = list(seg[start:])
    tail: list[str] = []
    if "--" in args:
        cut = args.index("--")
        args, tail = args[:cut], args[cut + 1 :]
    seen_check = False
    options: list[str] = []
    paths: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in tool.check_flags:
            seen_check = True
        elif arg.split("=", 1)[0] in tool.drop_flags:
            pass
        elif arg in tool.value_flags and i + 1 < len(args):
            options += [arg, args[i + 1]]
            i += 1
        elif arg.startswith("-") and arg != "-":
            options.append(arg)
        else:
            paths.append(arg)
        i += 1
    rest: list[str] = []
    if tool.files:
        paths += tail  # `tool --opt -- a.py b.py`: files after the separator
    else:
        rest = [t for t in tail if t not in tool.check_flags]
        seen_check = seen_check or len(rest) != len(tail)
        if paths:
            return None  # positional arguments we do not understand
    if tool.requires_check and not seen_check:
        return None
    if "-" in paths:
        return None  # formats standard input: nothing to write back
    options += [f for f in tool.fix_flags if f not in options]
    return FixStep(
        tool=tool.name,
        check=shlex.join(seg),
        head=tuple(seg[:start]),
        options=tuple(options),
        paths=tuple(paths),
        suffixes=tool.suffixes,
        explicit_files_flags=tool.explicit_files_flags,
        takes_files=tool.files,
        tail=tuple(rest),
    )


@cache
def _table() -> tuple[tuple[Tool, ...], Mapping[str, _Wrapper]]:
    data: dict[str, Any] = json.loads(_DATA.read_text(encoding="utf-8"))
    tool_rows = tuple(
        Tool(
            name=str(row["name"]),
            program=tuple(row["program"]),
            subcommand=tuple(row["subcommand"]),
            check_flags=frozenset(row["check_flags"]),
            requires_check=bool(row["requires_check"]),
            drop_flags=frozenset(row["drop_flags"]),
            fix_flags=tuple(row["fix_flags"]),
            value_flags=frozenset(row["value_flags"]),
            suffixes=tuple(row["suffixes"]),
            explicit_files_flags=tuple(row["explicit_files_flags"]),
            files=bool(row["files"]),
        )
        for row in data["tools"]
    )
    wrappers = {
        str(row["program"]): _Wrapper(
            program=str(row["program"]), then=tuple(row["then"]), value_flags=frozenset(row["value_flags"])
        )
        for row in data["wrappers"]
    }
    return tool_rows, wrappers


__all__ = ["AutofixPlan", "FixStep", "Tool", "autofix_plan", "tools"]
