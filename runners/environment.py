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
            first = error.message.splitlines()[0] if error.message else "setup failed"
            tail = [ln.strip() for ln in error.message.splitlines()[1:] if ln.strip()]
            what = f"the setup step {first.removeprefix('setup ')}" + (f": {tail[-1][:160]}" if tail else "")
            return EnvironmentProblem(what, f"fix {_SETUP_KEY}", "setup")
    if run.killed_by is not None:
        return None
    ran_tests = bool(run.results)
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
        for m in _PY_MISSING.finditer(message):
            mod = m["mod"]
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
