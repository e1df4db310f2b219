"""Fail-fast flags of the supported test runners, and the diagnosis command without them.

A CI command often stops at its first failure (``pytest -x``, ``jest --bail``, ``go test -failfast``,
``cargo test`` by default…). Every test after that failure is *unobserved*: a baseline run with
such a command cannot tell a test that fails before the change from one that was never run, so
ARCS diagnoses with the command **without** those flags (reproduction, triage, candidate and
regression runs) and verifies with the exact command as given (the final verification run).

:data:`FAIL_FAST_FLAGS` is the one table of those flags; :func:`without_fail_fast` rewrites the
last simple command of a shell line accordingly. When a flag cannot be removed (it lives in a
config file or an ``npm test`` script, or the line is not a plain command) the result says so
(``complete=False``): tests the diagnosis run did not observe stay *unknown*, never "passing".
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from runners import frameworks, wsfs
from runners.frameworks.row import FailFastFlag, ValueKind
from runners.frameworks.shell import plain as _plain
from runners.frameworks.shell import split_last as _split_last

_CONFIG_LIMIT = 1 << 20
"""How much of a config file (``setup.cfg``, ``package.json``, ``.mocharc``) the host reads."""

FAIL_FAST_FLAGS: tuple[FailFastFlag, ...] = frameworks.fail_fast_flags()
"""Every fail-fast flag ARCS knows, per runner (the rows of :data:`runners.frameworks.TABLE`)."""

NO_FAIL_FAST_ADDED: dict[str, str] = {row.name: row.run_all for row in frameworks.TABLE if row.run_all}
"""Runners that stop early *by default*: the flag that makes them run everything."""

# pytest short options that take a value: in a cluster (`-kfoo`, `-xk foo`) what follows is the value.
_PYTEST_SHORT_VALUES = frozenset("kmcpornW")
_PYTEST_CONFIGS = (
    ("pytest.ini", ""),
    ("pyproject.toml", "[tool.pytest"),
    ("setup.cfg", "[tool:pytest]"),
    ("tox.ini", "[pytest]"),
)
_ADDOPTS_FAIL_FAST = re.compile(
    r"addopts\s*=.*?(?:(?<![\w-])-\w*x\w*\b|--exitfirst|--maxfail|--sw\b|--stepwise)", re.S
)


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """The diagnosis command derived from a test command."""

    command: str
    """The command to diagnose with (equal to the input when nothing had to change)."""
    removed: tuple[str, ...] = ()
    """Fail-fast flags taken out (as written)."""
    added: tuple[str, ...] = ()
    """Flags added to run everything (``--no-fail-fast``, ``--maxfail=0``)."""
    complete: bool = True
    """False when a fail-fast setting could not be removed: unobserved tests stay unknown."""
    note: str = ""

    @property
    def changed(self) -> bool:
        """The diagnosis command differs from the exact one."""
        return bool(self.removed or self.added)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "command": self.command,
            "removed": list(self.removed),
            "added": list(self.added),
            "complete": self.complete,
            "note": self.note,
        }


def flags_of(runner: str) -> tuple[FailFastFlag, ...]:
    """The fail-fast flags of ``runner``."""
    return tuple(f for f in FAIL_FAST_FLAGS if f.runner == runner)


def _runner_of(tokens: list[str], framework: str | None) -> str | None:
    return framework or frameworks.of_command(" ".join(tokens))


def strip_tokens(tokens: list[str], runner: str) -> tuple[list[str], list[str]]:
    """``tokens`` without ``runner``'s fail-fast flags, and the flags removed (as written)."""
    table = {f.flag: f for f in flags_of(runner)}
    kept: list[str] = []
    removed: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "-args" and runner == "go":
            kept.extend(tokens[i:])  # what follows goes to the test binary
            break
        name, eq, _ = tok.partition("=")
        spec = table.get(name)
        if spec is not None:
            removed.append(tok)
            nxt = tokens[i + 1] if i + 1 < len(tokens) else None
            takes = spec.value == "required" or (spec.value == "optional" and (nxt or "").isdigit())
            if not eq and nxt is not None and takes:
                removed.append(nxt)
                i += 1
            i += 1
            continue
        if runner == "pytest" and re.fullmatch(r"-[A-Za-z]{2,}", tok):
            letters = ""
            for k, ch in enumerate(tok[1:]):
                if ch in _PYTEST_SHORT_VALUES:
                    letters += tok[1 + k :]
                    break
                if ch != "x":
                    letters += ch
            if letters != tok[1:]:
                removed.append("-x")
                if letters:
                    kept.append("-" + letters)
                i += 1
                continue
        kept.append(tok)
        i += 1
    return kept, removed


def _pytest_config_fail_fast(root: Path | None) -> str:
    if root is None:
        return ""
    for name, section in _PYTEST_CONFIGS:
        text = _read(root, name)
        if not text:
            continue
        if section and section not in text:
            continue
        if _ADDOPTS_FAIL_FAST.search(text):
            return name
    return ""


def _script_fail_fast(root: Path | None) -> bool:
    """``npm test``'s script (package.json) uses a fail-fast flag of the runner it calls."""
    if root is None:
        return False
    import json

    from runners.results import framework_of_command

    try:
        data = json.loads(wsfs.read_text(root, "package.json", limit=_CONFIG_LIMIT, whole=True))
        script = str(data["scripts"]["test"])
        tokens = shlex.split(script)
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return False
    runner = _runner_of(tokens, framework_of_command(script))
    return runner is not None and bool(strip_tokens(tokens, runner)[1])


def without_fail_fast(command: str, framework: str | None, *, root: Path | None = None) -> Diagnosis:
    """``command`` rewritten to observe every test (see the module docstring).

    ``root`` (the folder the command runs in) lets config files and ``npm test`` scripts be
    checked for fail-fast settings the command line does not show.
    """
    head, last = _split_last(command)
    try:
        tokens = shlex.split(last)
    except ValueError:
        tokens = []
    runner = _runner_of(tokens, framework)
    if re.match(r"^(?:npm|yarn|pnpm)\s", last) and _script_fail_fast(root):
        note = "the package.json test script stops at the first failure: tests after it are unknown"
        return Diagnosis(command, complete=False, note=note)
    if runner is None:
        return Diagnosis(command)
    if not tokens or not _plain(last) or "$" in last:
        visible = any(f.flag in last for f in flags_of(runner))
        note = (
            "the test command is not a plain command: its fail-fast flags cannot be removed"
            if visible
            else ""
        )
        return Diagnosis(command, complete=not visible, note=note)
    kept, removed = strip_tokens(tokens, runner)
    added: list[str] = []
    complete = True
    note = ""
    extra = NO_FAIL_FAST_ADDED.get(runner)
    if extra and extra not in kept and runner == "cargo" and "test" in kept:
        at = kept.index("test") + 1
        kept = [*kept[:at], extra, *kept[at:]]
        added.append(extra)
    if runner == "pytest":
        config = _pytest_config_fail_fast(root)
        if config:
            # Later options win over addopts: --maxfail=0 means "no limit".
            kept.append("--maxfail=0")
            added.append("--maxfail=0")
            note = f"{config} addopts stop at the first failure: diagnosing with --maxfail=0"
    if (
        runner == "mocha"
        and root is not None
        and any("bail" in _read(root, n) for n in _names(root) if n.startswith(".mocharc"))
    ):
        complete = False
        note = ".mocharc sets bail: tests after the first failure are unknown"
    if not removed and not added:
        return Diagnosis(command, complete=complete, note=note)
    rewritten = head + " ".join(shlex.quote(t) for t in kept)
    if removed and not note:
        note = f"diagnosing without {' '.join(removed)}; verifying with the exact command"
    return Diagnosis(rewritten, tuple(removed), tuple(added), complete, note)


def _read(root: Path, name: str) -> str:
    """The head of the config file ``name`` of ``root`` ('' when missing or not a regular file):
    through :mod:`runners.wsfs`, so a planted link, FIFO or huge file costs nothing."""
    try:
        return wsfs.read_text(root, name, limit=_CONFIG_LIMIT, errors="replace")
    except OSError:
        return ""


def _names(root: Path) -> list[str]:
    try:
        return wsfs.listdir(root)
    except OSError:
        return []


__all__ = [
    "FAIL_FAST_FLAGS",
    "NO_FAIL_FAST_ADDED",
    "Diagnosis",
    "FailFastFlag",
    "ValueKind",
    "flags_of",
    "strip_tokens",
    "without_fail_fast",
]
