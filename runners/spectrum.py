"""The spectrum probe: which lines the failing and the passing pytest tests executed (issue #15).

Like the hang probe (:mod:`runners.hang`), a tiny pytest plugin that ARCS writes into the run's
private folder (:func:`runners.workspace.private_folder`: outside the repository's tree, seen at
``$ARCS_PRIVATE``; ``spectrum/`` there), found through ``PYTHONPATH`` and loaded with ``-p``; it
runs inside the sandbox like the tests (the workspace root it traces is ``$ARCS_SPECTRUM_ROOT``):

* around each test (setup, call and teardown: a ``pytest_runtest_protocol`` wrapper) it installs a
  ``sys.settrace`` / ``threading.settrace`` tracer. The global tracer resolves each code file once
  (cached) and returns a line tracer only for ``.py`` files under the workspace root, skipping
  virtualenvs, ``site-packages``, ``node_modules``, a top-level ``build/`` and ARCS's own ``.arcs/``;
* a test failed when any of its phase reports failed, was skipped when one was skipped and none
  failed (neither count), else passed; per line it counts the failing (``ef``) and passing (``ep``)
  tests that executed it;
* an active trace function (coverage.py's tracer, a debugger) is *suspended* during each test and
  restored right after it, not chained: this run is ARCS's private diagnosis whose coverage report
  is thrown away, and chaining would double the cost. A test that installs its own trace function
  only loses the rest of its own lines (counted as ``disturbed``); the next test is traced again;
* it writes the lines with ``ef > 0`` to ``spectrum/spectrum.json`` (compact JSON, atomically:
  temporary file and ``os.replace``) at the session's end *and* at the first test boundary after
  every 2 s, so a run cut short still leaves the tests that finished (``complete`` is only true at a
  normal session end). It stays under :data:`MAX_BYTES`: the least suspicious lines (lowest Ochiai,
  then the most passing tests) are dropped first and counted. Under ``pytest-xdist`` every worker
  writes its own file; :func:`read_spectrum` adds them up, each read through
  :mod:`runners.wsfs` (no link followed, regular files only, at most :data:`READ_CAP` bytes).

Python 3.11 ``sys.settrace`` only (``sys.monitoring`` would be cheaper on 3.12+). Wall time through
``SandboxWorkbench.spectrum`` as a ratio to the untraced diagnosis run in the same process, two
repetitions each: pyflakes 3.2.0 (709 tests) whole suite 1.8x/2.3x, failing files only 0.7x;
docutils 0.21.2 (400 tests) whole suite 2.2x/2.4x, failing files only 0.3x.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from runners import wsfs
from runners.base import PRIVATE_ENV
from runners.commands import ResolvedCommand
from runners.hang import plain_pytest
from runners.shellenv import ARCS_PYTHONPATH

TRACE_DIR = "spectrum"
"""The plugin's folder (and its output's), relative to the run's private folder."""
ROOT_ENV = "ARCS_SPECTRUM_ROOT"
"""Tells the plugin the workspace root whose code it traces."""
PLUGIN = "arcs_spectrum"
OUTPUT = "spectrum.json"
MAX_BYTES = 1_000_000
"""The plugin keeps its output below this; :func:`read_spectrum` refuses more than 1 MiB."""
READ_CAP = 1 << 20
"""``runners.sandbox.MAX_ARTIFACT_BYTES``: the most ARCS reads back from a workspace file."""

_PLUGIN_SOURCE = '''\
"""ARCS spectrum probe (written by ARCS into the run's private folder; see runners/spectrum.py)."""
import json
import os
import re
import sys
import threading
import time

import pytest

_HERE = os.path.dirname(os.path.realpath(__file__))
_ROOT = os.path.join(os.path.realpath(os.environ.get("__ROOT_ENV__") or os.getcwd()), "")
_WORKER = re.sub(r"[^A-Za-z0-9]", "", os.environ.get("PYTEST_XDIST_WORKER") or "")
_OUT = os.path.join(_HERE, "spectrum-%s.json" % _WORKER if _WORKER else "spectrum.json")
_MAX = __MAX__
_SKIP = {".arcs", ".git", ".venv", "venv", ".tox", ".nox", "node_modules", "site-packages",
         "dist-packages", "__pycache__", ".eggs"}
_files = {}  # co_filename -> line tracer, or None when not the repository's code
_hits = set()  # (path, line) the current test executed
_counts = {}  # (path, line) -> [ef, ep]
_stats = {"failed": 0, "passed": 0, "skipped": 0, "disturbed": 0}
_outcome = [False, False]  # the current test: any phase failed, any skipped
_last = [time.monotonic()]


def _line_tracer(rel, add=_hits.add):
    def local(frame, event, arg):
        if event == "line":
            add((rel, frame.f_lineno))
        return local
    return local


def _rel(filename):
    if not filename.endswith(".py"):
        return None
    try:
        real = os.path.realpath(filename)
    except (OSError, ValueError):
        return None
    if not real.startswith(_ROOT):
        return None
    parts = real[len(_ROOT):].split(os.sep)
    if parts[0] == "build" or _SKIP.intersection(parts[:-1]):
        return None
    return "/".join(parts)


def _tracer(frame, event, arg):
    name = frame.f_code.co_filename
    try:
        return _files[name]
    except KeyError:
        rel = _rel(name)
        local = _files[name] = _line_tracer(rel) if rel else None
        return local


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    _outcome[:] = [False, False]
    _hits.clear()
    before = sys.gettrace()
    before_threads = threading.gettrace() if hasattr(threading, "gettrace") else None
    threading.settrace(_tracer)
    sys.settrace(_tracer)
    try:
        yield
    finally:
        disturbed = sys.gettrace() is not _tracer
        sys.settrace(before)
        threading.settrace(before_threads)
        _account(disturbed)


def pytest_runtest_logreport(report):
    if report.failed:
        _outcome[0] = True
    elif report.skipped:
        _outcome[1] = True


def _account(disturbed):
    hits = list(_hits)  # one C call: a thread the test left running cannot change it meanwhile
    _hits.clear()
    _stats["disturbed"] += disturbed
    if not _outcome[0] and _outcome[1]:
        _stats["skipped"] += 1
    else:
        k = 0 if _outcome[0] else 1
        _stats["failed" if k == 0 else "passed"] += 1
        for hit in hits:
            c = _counts.get(hit)
            if c is None:
                c = _counts[hit] = [0, 0]
            c[k] += 1
    if time.monotonic() - _last[0] >= 2.0:
        _write(False)


def _encode(rows, complete, dropped):
    files = {}
    for rel, line, ef, ep in sorted(rows):
        files.setdefault(rel, []).extend((line, ef, ep))
    data = dict(_stats, v=1, complete=complete, dropped=dropped, files=files)
    return json.dumps(data, separators=(",", ":")).encode("utf-8", "replace")


def _write(complete):
    _last[0] = time.monotonic()
    rows = [(rel, line, c[0], c[1]) for (rel, line), c in _counts.items() if c[0]]
    data = _encode(rows, complete, 0)
    if len(data) > _MAX:
        # Keep the most suspicious lines (Ochiai's ef / sqrt(ef + ep)), the least executed first.
        rows.sort(key=lambda r: (-r[2] / (r[2] + r[3]) ** 0.5, r[3]))
        while len(data) > _MAX and rows:
            rows = rows[: int(len(rows) * _MAX / len(data) * 0.9)]
            data = _encode(rows, complete, len(_counts) - len(rows))
    try:
        with open(_OUT + ".tmp", "wb") as f:
            f.write(data)
        os.replace(_OUT + ".tmp", _OUT)
    except OSError:
        pass


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    _write(int(exitstatus) in (0, 1, 5))
'''.replace("__MAX__", str(MAX_BYTES)).replace("__ROOT_ENV__", ROOT_ENV)


@dataclass(frozen=True, slots=True)
class LineSpectrum:
    """What the plugin wrote: tests traced per outcome and ``lines[path][line] = (ef, ep)``."""

    failed: int = 0
    passed: int = 0
    skipped: int = 0
    lines: dict[str, dict[int, tuple[int, int]]] = field(default_factory=dict)
    complete: bool = False
    """True only when pytest reached the session's end (every worker did, under xdist)."""
    dropped: int = 0
    """Lines left out to stay under :data:`MAX_BYTES` (the least suspicious)."""
    disturbed: int = 0
    """Tests that replaced the trace function themselves (their later lines are missing)."""
    note: str = ""
    """One line on trouble reading the output ('' when none)."""


def trace_command(resolved: ResolvedCommand) -> ResolvedCommand | None:
    """``resolved`` with the plugin loaded, or None when it cannot be traced.

    Only a plain ``pytest`` last command (:func:`runners.hang.plain_pytest`): the folder of the
    plugin (in the private folder) is put in front of ``PYTHONPATH`` and of ``ARCS_PYTHONPATH``
    (which survives the command's own ``PYTHONPATH=``, :func:`runners.shellenv.keep_pythonpath`),
    the workspace root (which the command's ``workdir`` may be below) is passed in :data:`ROOT_ENV`,
    and ``-p arcs_spectrum`` appended."""
    if resolved.framework != "pytest" or not plain_pytest(resolved.command):
        return None
    from runners.frameworks.shell import append_to_last as _append_to_last

    parts = PurePosixPath(resolved.workdir).parts if resolved.workdir else ()
    if any(p in ("..", "/") for p in parts):
        return None
    root = "$PWD" + "/.." * len(parts)
    folder = f'"${PRIVATE_ENV}/{TRACE_DIR}"'
    prefix = (
        f'export PYTHONPATH={folder}"${{PYTHONPATH:+:$PYTHONPATH}}" '
        f'{ARCS_PYTHONPATH}={folder}"${{{ARCS_PYTHONPATH}:+:${ARCS_PYTHONPATH}}}" {ROOT_ENV}="{root}"; '
    )
    return replace(resolved, command=prefix + _append_to_last(resolved.command, f"-p {PLUGIN}"))


def deselecting(resolved: ResolvedCommand, test_ids: list[str]) -> ResolvedCommand:
    """``resolved`` (a plain pytest command) with ``--deselect`` for each of ``test_ids``."""
    from runners.frameworks.shell import append_to_last as _append_to_last

    if not test_ids:
        return resolved
    extra = " ".join(f"--deselect {shlex.quote(t)}" for t in test_ids)
    return replace(resolved, command=_append_to_last(resolved.command, extra))


def install(private: Path) -> None:
    """Write the plugin into the run's ``private`` folder; clear old output."""
    # The sandbox user may differ from ARCS's (setpriv mode): the output must be creatable. The
    # folder is ARCS's own, its mode set through its descriptor.
    with wsfs.directory(private, TRACE_DIR, create=True) as fd:
        os.fchmod(fd, 0o777)
    wsfs.write_text(private, f"{TRACE_DIR}/{PLUGIN}.py", _PLUGIN_SOURCE, mode=0o644)
    for old in wsfs.listdir(private, TRACE_DIR):
        if fnmatch.fnmatchcase(old, "spectrum*.json*"):
            wsfs.remove(private, f"{TRACE_DIR}/{old}")


def parse_spectrum(data: bytes) -> LineSpectrum:
    """One output file of the plugin; malformed content gives an empty result with a note."""
    if len(data) > READ_CAP:
        return LineSpectrum(note=f"spectrum output larger than {READ_CAP // 1024} KiB: ignored")
    try:
        raw = json.loads(data)
    except (ValueError, RecursionError):
        return LineSpectrum(note="spectrum output is not JSON: ignored")
    if not isinstance(raw, dict) or raw.get("v") != 1 or not isinstance(raw.get("files"), dict):
        return LineSpectrum(note="spectrum output has an unknown format: ignored")
    lines: dict[str, dict[int, tuple[int, int]]] = {}
    bad = 0
    for path, flat in raw["files"].items():
        if not _safe_path(path) or not isinstance(flat, list) or len(flat) % 3:
            bad += 1
            continue
        for i in range(0, len(flat), 3):
            line, ef, ep = flat[i : i + 3]
            if not all(type(v) is int for v in (line, ef, ep)) or line < 1 or ef < 1 or ep < 0:
                bad += 1
                continue
            lines.setdefault(path, {})[line] = (ef, ep)
    return LineSpectrum(
        failed=_count(raw.get("failed")),
        passed=_count(raw.get("passed")),
        skipped=_count(raw.get("skipped")),
        lines=lines,
        complete=raw.get("complete") is True,
        dropped=_count(raw.get("dropped")),
        disturbed=_count(raw.get("disturbed")),
        note=f"{bad} malformed spectrum entries skipped" if bad else "",
    )


def read_spectrum(private: Path) -> LineSpectrum | None:
    """The plugin's output in the run's ``private`` folder (workers' files added up), or None when
    none was written.

    The tests can write there: each file is read through :mod:`runners.wsfs` (a symlink to a
    host file, a FIFO or a folder is skipped) and at most :data:`READ_CAP` + 1 bytes of it."""
    try:
        names = [n for n in wsfs.listdir(private, TRACE_DIR) if fnmatch.fnmatchcase(n, "spectrum*.json")]
    except OSError:
        return None
    parts: list[LineSpectrum] = []
    for name in names:
        try:
            data = wsfs.read_bytes(private, f"{TRACE_DIR}/{name}", limit=READ_CAP + 1)
        except OSError:
            continue
        parts.append(parse_spectrum(data))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else _merge(parts)


def _merge(parts: list[LineSpectrum]) -> LineSpectrum:
    lines: dict[str, dict[int, tuple[int, int]]] = {}
    for part in parts:
        for path, by_line in part.lines.items():
            into = lines.setdefault(path, {})
            for line, (ef, ep) in by_line.items():
                old = into.get(line, (0, 0))
                into[line] = (old[0] + ef, old[1] + ep)
    return LineSpectrum(
        failed=sum(p.failed for p in parts),
        passed=sum(p.passed for p in parts),
        skipped=sum(p.skipped for p in parts),
        lines=lines,
        complete=all(p.complete for p in parts),
        dropped=sum(p.dropped for p in parts),
        disturbed=sum(p.disturbed for p in parts),
        note="; ".join(dict.fromkeys(p.note for p in parts if p.note)),
    )


def _safe_path(path: object) -> bool:
    if not isinstance(path, str) or not path or "\0" in path or path.startswith("/"):
        return False
    return ".." not in path.split("/")


def _count(value: object) -> int:
    return value if type(value) is int and value >= 0 else 0


__all__ = [
    "MAX_BYTES",
    "PLUGIN",
    "ROOT_ENV",
    "TRACE_DIR",
    "LineSpectrum",
    "deselecting",
    "install",
    "parse_spectrum",
    "read_spectrum",
    "trace_command",
]
