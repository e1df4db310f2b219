"""What ``npm test`` really runs: its script chain with the pre/post hooks npm adds (issue 30).

``npm test`` runs ``pretest``, ``test`` and ``posttest``; a script that is ``npm run lint`` runs
``prelint``, ``lint`` and ``postlint`` too. Those hooks are often eslint, ``tsc`` or ``npm audit``
(which needs the network): a test run that stops in one never reaches the tests. Two views:

- :func:`chain` reads ``package.json``'s scripts and lists the steps npm will run, hooks marked;
  :func:`runner_command` is the command the ``test`` script finally runs (``tape 'test/**/*.js'``
  behind ``npm run tests-only``);
- :func:`stopped_in_hook` reads a run's output (npm prints ``> pkg@1.0.0 pretest`` before each
  script) and says when the run ended inside a hook, before the test script started.

``npm test --ignore-scripts`` (:data:`IGNORE_HOOKS`) runs the test script alone: npm still runs
the script it was asked for, and nested ``npm run`` inherit the setting.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

IGNORE_HOOKS = "--ignore-scripts"

_RUN = re.compile(
    r"^\s*(?:npm\s+(?:run(?:-script)?\s+|(?=test\b|t\b))|yarn\s+(?:run\s+)?)(?P<name>[\w:.-]+)\s*$"
)
_HEADER = re.compile(r"^> (?P<pkg>\S+@\S+) (?P<script>[\w:.-]+)$")
_MAX_DEPTH = 4


@dataclass(frozen=True, slots=True)
class Step:
    """One script npm runs for ``npm test``."""

    name: str
    command: str
    hook: bool
    """A ``pre``/``post`` script npm adds (or a step run from one)."""
    depth: int


def _scripts(pkg: Mapping[str, object]) -> Mapping[str, str]:
    scripts = pkg.get("scripts")
    if not isinstance(scripts, dict):
        return {}
    return {str(k): str(v) for k, v in scripts.items()}


def chain(pkg: Mapping[str, object], script: str = "test") -> list[Step]:
    """The steps ``npm run <script>`` runs, in order, hooks included (``[]``: no such script)."""
    scripts = _scripts(pkg)
    out: list[Step] = []

    def walk(name: str, hook: bool, depth: int) -> None:
        if name not in scripts or depth > _MAX_DEPTH:
            return
        for stage, is_hook in ((f"pre{name}", True), (name, hook), (f"post{name}", True)):
            if stage not in scripts:
                continue
            command = scripts[stage]
            out.append(Step(stage, command, is_hook or hook, depth))
            for part in re.split(r"\s*&&\s*", command):
                if (m := _RUN.match(part)) and m["name"] != stage:
                    walk("test" if m["name"] == "t" else m["name"], is_hook or hook, depth + 1)

    walk(script, False, 0)
    return out


def hooks(pkg: Mapping[str, object], script: str = "test") -> list[Step]:
    """The hook steps of :func:`chain` (``pretest``, ``postlint`` under it, ``posttest``...)."""
    return [s for s in chain(pkg, script) if s.hook]


def runner_command(pkg: Mapping[str, object], script: str = "test") -> str:
    """The command the ``script`` finally runs, following ``npm run X`` (``""``: no such script)."""
    scripts = _scripts(pkg)
    command = scripts.get(script, "")
    for _ in range(_MAX_DEPTH):
        m = _RUN.match(command)
        if m is None or m["name"] not in scripts:
            break
        command = scripts["test" if m["name"] == "t" else m["name"]]
    return command


def describe_hooks(pkg: Mapping[str, object], script: str = "test") -> str:
    """One clause naming the hooks ``npm run <script>`` adds (``""`` when there are none)."""
    found = hooks(pkg, script)
    if not found:
        return ""
    shown = "; ".join(f"{s.name}: `{_short(s.command)}`" for s in found)
    return f"`npm {script}` also runs {shown}"


def _short(command: str, limit: int = 60) -> str:
    return command if len(command) <= limit else command[: limit - 1] + "…"


def stopped_in_hook(output: str) -> str:
    """One line when ``output`` shows npm ending inside a pre-hook before its test script ran.

    The last ``> pkg@ver script`` header names the script that was running; when no ``test``
    header came before it and it is a ``pre*`` script (or one run from it), the tests never ran."""
    headers = [m["script"] for ln in output.splitlines() if (m := _HEADER.match(ln.rstrip()))]
    if not headers or "test" in headers:
        return ""
    first = headers[0]
    if not first.startswith("pre"):
        return ""
    path = " > ".join(dict.fromkeys(headers))
    return (
        f"the command stopped in npm's `{first}` hook ({path}) before any test ran; "
        f"`npm test {IGNORE_HOOKS}` runs the test script alone"
    )


SANDBOX_NODE_DIRS = ("/usr/local/bin", "/usr/bin")
"""Where the sandbox finds ``node`` after the toolchains' ``bin`` (it shows the host's ``/usr``)."""


@functools.lru_cache(maxsize=16)
def _version(path: str) -> str:
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return "?"
    return done.stdout.strip() or "?"


def node_line(toolchains: Sequence[Path] = (), *, path: str | None = None) -> str:
    """Which ``node`` the sandbox runs, and whether it is the one on the user's ``PATH`` (``path``,
    default ``$PATH``); ``""`` when the sandbox has none."""
    dirs = [*(Path(t) / "bin" for t in toolchains), *(Path(d) for d in SANDBOX_NODE_DIRS)]
    found = next((d / "node" for d in dirs if os.access(d / "node", os.X_OK)), None)
    sandbox = os.fspath(found) if found is not None else None
    user = shutil.which("node", path=os.environ.get("PATH", "") if path is None else path)
    if sandbox is None:
        return (
            f"node: none in the sandbox (your PATH has {user}): pass its folder with --toolchain"
            if user
            else ""
        )
    line = f"node: the sandbox runs {sandbox} ({_version(sandbox)})"
    if user and Path(user).resolve() != Path(sandbox).resolve():
        folder = Path(user).parent.parent
        line += f", not your PATH's {user} ({_version(user)}): --toolchain {folder} uses that one"
    return line


__all__ = [
    "IGNORE_HOOKS",
    "SANDBOX_NODE_DIRS",
    "Step",
    "chain",
    "describe_hooks",
    "hooks",
    "node_line",
    "runner_command",
    "stopped_in_hook",
]
