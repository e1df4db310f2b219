"""Environment failures: a test run that could not test the code at all.

A missing command (exit 127, ``command not found``), a command that cannot execute (126), a
missing test runner module (``No module named pytest``, ``python -m nosuchrunner``), an import of a
third-party package that is not installed (``ModuleNotFoundError: No module named 'requests'``,
Node's ``Cannot find module 'lodash'``) or a failed ``setup:`` step say nothing about the
repository's code. :func:`diagnose` recognises them and answers one line saying what is missing
and which ``.arcs.yml`` key (``setup:`` or ``test:``) fixes it; the repair loop then stops with the
verdict ``environment``, before any candidate or model call.

A missing module that is part of the repository, or a near-miss of one (or of a standard-library
module: ``jsonn``), is a code bug and is left to the repair loop.
"""

from __future__ import annotations

import difflib
import re
import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from runners.results import TestRun, strip_ansi

_NOT_FOUND = re.compile(
    r"^(?:(?:/bin/)?(?:ba|da)?sh: (?:line )?\d+: )?(?P<cmd>[^\s:]+): (?:command )?not found\s*$", re.M
)
_RUNNER_MODULE = re.compile(r"^\S*python[\d.]*: No module named (?P<mod>[\w.]+)\s*$", re.M)
_PY_MISSING = re.compile(r"\bNo module named '(?P<mod>[\w.]+)'")
_IMPORT_ERRORS = frozenset({None, "ModuleNotFoundError", "ImportError", "Error"})
"""Failure types that may be a missing module (None: the runner did not say; ``Error``: Node's)."""
_JS_MISSING = re.compile(r"Cannot find (?:module|package) '(?P<mod>[^']+)'")
_NODE_BUILTINS = frozenset(
    [
        "assert",
        "buffer",
        "child_process",
        "cluster",
        "crypto",
        "dgram",
        "dns",
        "events",
        "fs",
        "http",
        "http2",
        "https",
        "net",
        "os",
        "path",
        "perf_hooks",
        "process",
        "querystring",
        "readline",
        "stream",
        "string_decoder",
        "timers",
        "tls",
        "tty",
        "url",
        "util",
        "v8",
        "vm",
        "worker_threads",
        "zlib",
        "test",
    ]
)
_NO_TESTS = re.compile(
    r"^(?:collected 0 items.*|=+ no tests ran.*|collected \d+ items? / \d+ deselected.*|"
    r"Ran 0 tests in .*|No tests found.*|ℹ tests 0)$",
    re.M,
)
"""pytest (exit 5), unittest, jest and node lines that say no test ran."""
_NO_METADATA = re.compile(r"No package metadata was found for (?P<name>[\w.-]+)")
_REFUSED = re.compile(r"^arcs: setup network refused (?P<what>.*?)(?: \((?P<hint>[^()]*)\))?$")
_CAUSES = (
    re.compile(r"^ERROR: (?!Exception:)"),
    re.compile(r"^npm (?:ERR!|error) (?!code |A complete log|\s*$)"),
    re.compile(r"^(?:error|Error|fatal|FATAL|E:)[:\s]"),
)
_NOTICE = re.compile(r"^(?:\[notice\]|note:|hint:|npm (?:notice|warn|WARN))", re.I)
_TEST_KEY = "`test:` in .arcs.yml"
_SETUP_KEY = "`setup:` in .arcs.yml"


@dataclass(frozen=True, slots=True)
class EnvironmentProblem:
    """What is missing, and the ``.arcs.yml`` key that fixes it."""

    what: str
    fix: str
    key: str
    """``setup`` or ``test``."""

    @property
    def line(self) -> str:
        """The one-line explanation (CLI, trace, check run)."""
        return f"{self.what}; {self.fix}"


def _repo_module(module: str, files: Collection[str]) -> str | None:
    """Where the repository holds ``module`` (``src/pkg``), or None when it has no such module.

    Only the whole dotted name counts: ``pkg.missing`` with only ``pkg/`` present is a code bug."""
    parts = module.split(".")
    n = len(parts)
    for path in files:
        comps = path.split("/")
        for i in range(len(comps) - n + 1):
            if comps[i : i + n - 1] != parts[:-1]:
                continue
            last = comps[i + n - 1]
            is_dir = i + n < len(comps) and last == parts[-1] and comps[-1].endswith(".py")
            if is_dir or last in (f"{parts[-1]}.py", f"{parts[-1]}.pyi"):
                folder = "/".join(comps[: i + n])
                return folder if is_dir else folder.removesuffix(".pyi").removesuffix(".py") + ".py"
    return None


def _setup_problem(message: str, output: str) -> EnvironmentProblem:
    """A failed ``setup:`` step: its cause, not its last line (see :func:`setup_cause`)."""
    first = message.splitlines()[0] if message else "setup failed"
    lines = output.splitlines() if output.strip() else message.splitlines()[1:]
    cause, hint = setup_cause(lines)
    what = f"the setup step {first.removeprefix('setup ')}" + (f": {cause}" if cause else "")
    return EnvironmentProblem(what, hint or f"fix {_SETUP_KEY}", "setup")


def setup_cause(lines: Sequence[str]) -> tuple[str, str]:
    """(the line that says why a setup step failed, the hint that fixes it when the line has one).

    A connection the setup network refused comes first (pip's errors then only repeat that it could
    not download), with its hint in full; then the first ``ERROR:`` line (pip), ``npm ERR!`` /
    ``npm error`` line that is not a code or a log path, or other error line; else the last line
    that is not a notice."""
    clean = [strip_ansi(ln).strip() for ln in lines if ln.strip()]
    for line in clean:
        if m := _REFUSED.match(line):
            return _clip(f"the setup network refused {m['what']}"), m["hint"] or ""
    for pattern in _CAUSES:
        for line in clean:
            if pattern.match(line):
                return _clip(line), ""
    rest = [ln for ln in clean if not _NOTICE.match(ln)]
    return (_clip(rest[-1]) if rest else ""), ""


def _clip(line: str, limit: int = 400) -> str:
    """``line`` whole up to ``limit`` characters, else cut at a word with an ellipsis."""
    if len(line) <= limit:
        return line
    return line[:limit].rsplit(" ", 1)[0] + " …"


def _repo_modules(files: Collection[str]) -> set[str]:
    names: set[str] = set()
    for path in files:
        parts = path.split("/")
        names.update(parts[:-1])
        stem, dot, ext = parts[-1].rpartition(".")
        if dot and ext in ("py", "pyi", "so", "pyd", "js", "mjs", "cjs", "ts"):
            names.add(stem)
        names.add(parts[-1])
    return names


def _is_code_bug(module: str, repo: set[str], stdlib: Collection[str]) -> bool:
    """``module`` is (or nearly is) part of the repository or the standard library: a typo in code."""
    top = module.split(".", 1)[0]
    if top in repo or top in stdlib:
        return True
    pool = [*repo, *stdlib]
    return bool(difflib.get_close_matches(top, pool, n=1, cutoff=0.85))


def _js_third_party(module: str) -> str | None:
    if module.startswith((".", "/", "node:")):
        return None
    top = "/".join(module.split("/")[:2]) if module.startswith("@") else module.split("/")[0]
    return None if top in _NODE_BUILTINS else top


def diagnose(
    run: TestRun,
    *,
    output: str,
    command: str,
    repo_files: Collection[str] = (),
    stdlib: Sequence[str] | None = None,
) -> EnvironmentProblem | None:
    """The environment problem ``run`` shows, or None when its failures may be the code's.

    ``output`` is the command's stdout and stderr; ``command`` the test command as given.
    """
    text = strip_ansi(output)
    for error in run.errors:
        if error.id == "<setup>":
            return _setup_problem(error.message, text)
    if run.killed_by is not None:
        return None
    ran_tests = bool(run.results)
    only_exit = all(e.id == "<run>" for e in run.errors)
    if not ran_tests and only_exit and (m := _NO_TESTS.search(text)):
        return EnvironmentProblem(
            f"the test command ran no tests ({m.group(0).strip().strip('=').strip()})",
            f"point {_TEST_KEY} (or --test) at the tests",
            "test",
        )
    if not ran_tests:
        if m := _RUNNER_MODULE.search(text):
            mod = m["mod"]
            return EnvironmentProblem(
                f"the test runner module `{mod}` is not installed in the sandbox's Python",
                f"install it with {_SETUP_KEY} (e.g. `pip install {mod.split('.')[0]}`) or change {_TEST_KEY}",
                "setup",
            )
        if run.exit_code == 127 or (m := _NOT_FOUND.search(text)):
            m = _NOT_FOUND.search(text)
            name = m["cmd"] if m else command.split()[0] if command.split() else command
            return EnvironmentProblem(
                f"`{name}` was not found in the sandbox (exit 127)",
                f"set {_TEST_KEY} to a command that exists there, or install it with {_SETUP_KEY}",
                "test",
            )
        if run.exit_code == 126:
            return EnvironmentProblem(
                f"`{command.split()[0] if command.split() else command}` cannot be executed in the sandbox (exit 126)",
                f"make it executable or change {_TEST_KEY}",
                "test",
            )
    repo = _repo_modules(repo_files)
    std = sys.stdlib_module_names if stdlib is None else stdlib
    # Run-level errors (collection, exit) count as they are; a test's failure only when an import
    # *failed the test*: code may catch a ModuleNotFoundError on purpose (plugin lookups try several
    # names) and then fail for its own reasons, the handled error still in the chained traceback.
    messages = [e.message for e in run.errors] + [f.message for f in run.failures if f.type in _IMPORT_ERRORS]
    for message in [*messages, *(() if ran_tests else (text,))]:
        if m := _NO_METADATA.search(message):
            name = m["name"]
            return EnvironmentProblem(
                f"the package `{name}` is not installed in the sandbox (importlib.metadata finds no "
                "metadata for it)",
                f"install the project with {_SETUP_KEY} (e.g. `pip install -e .`)",
                "setup",
            )
        for m in _PY_MISSING.finditer(message):
            mod = m["mod"]
            where = _repo_module(mod, repo_files)
            if where is not None:
                return EnvironmentProblem(
                    f"the package under test `{mod}` ({where}) cannot be imported: it is in the "
                    "repository but not on the sandbox's import path",
                    f"install it with {_SETUP_KEY} (e.g. `pip install -e .`) or put its folder on the "
                    f"path in {_TEST_KEY} (e.g. `python -m pytest -o pythonpath=src`)",
                    "setup",
                )
            if not _is_code_bug(mod, repo, std):
                top = mod.split(".", 1)[0]
                return EnvironmentProblem(
                    f"the third-party module `{top}` is not installed in the sandbox (the tests import it)",
                    f"install the dependencies with {_SETUP_KEY} (e.g. `pip install {top}` or "
                    "`pip install -r requirements.txt`)",
                    "setup",
                )
        for m in _JS_MISSING.finditer(message):
            top = _js_third_party(m["mod"])
            if top is not None and not _is_code_bug(top, repo, ()):
                return EnvironmentProblem(
                    f"the package `{top}` is not installed in the sandbox (the tests require it)",
                    f"install the dependencies with {_SETUP_KEY} (e.g. `npm ci`)",
                    "setup",
                )
    return None


__all__ = ["EnvironmentProblem", "diagnose"]
