"""ARCS's own variables inside a user's test command, and the workspace's own Python environment.

Two things a test command's shell line needs from ARCS besides the user's command (issue #23):

* **ARCS's import path survives the user's.** ARCS puts folders on ``PYTHONPATH`` (its pytest
  plugins in the run's private folder ``$ARCS_PRIVATE``, a ``src`` layout's folder) and mirrors them in
  ``ARCS_PYTHONPATH``. A user's command that sets ``PYTHONPATH`` itself (``PYTHONPATH=src pytest``,
  ``env PYTHONPATH=src pytest``, ``export PYTHONPATH=src; pytest``) would replace them, and
  ``-p arcs_hang_probe`` would then fail. :func:`keep_pythonpath` rewrites each such assignment to
  ``PYTHONPATH=<the user's value>:$ARCS_PYTHONPATH`` (nothing changes when ARCS added nothing), and
  keeps ARCS's variables through ``env -i`` / ``env -u PYTHONPATH``. Wrappers (``nice``,
  ``timeout``, ``time``, ``exec``, ``command``, ``nohup``, ``stdbuf``) are looked through.
* **A workspace environment for ``setup:``.** ARCS's own virtual environment is read-only in the
  sandbox, so ``pip install -e .`` there fails. :func:`setup_prefix` first makes a virtual
  environment inside the workspace (``.arcs/env``, never listed as code) on top of the Python the
  sandbox would run (its packages stay importable through a ``.pth`` line; ``pip`` and the parent
  environment's console scripts get small launchers that run them with the new interpreter), then
  activates it; :func:`activate_prefix` activates it again for the test run. ``pip install``,
  ``uv pip install`` and ``poetry install`` (which all honour ``VIRTUAL_ENV``) then install there.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass

__all__ = [
    "ARCS_PYTHONPATH",
    "ARCS_VARIABLES",
    "WORKSPACE_ENV",
    "activate_prefix",
    "export_pythonpath",
    "keep_pythonpath",
    "safe_folder",
    "setup_prefix",
]

ARCS_PYTHONPATH = "ARCS_PYTHONPATH"
"""The folders ARCS itself put on ``PYTHONPATH`` (``:``-separated, absolute inside the sandbox)."""
ARCS_VARIABLES = (
    ARCS_PYTHONPATH,
    "ARCS_HANG_PROBE_S",
    "ARCS_HANG_RATIO",
    "ARCS_HANG_LOG",
    "ARCS_HANG_LIMITS",
)
"""ARCS's variables that must reach the test process even through ``env -i``."""
WORKSPACE_ENV = ".arcs/env"
"""Workspace-relative folder of the environment :func:`setup_prefix` makes."""

_SAFE_FOLDER = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_./-]*$")
_ASSIGNMENT = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)=")
_OPERATORS = ("&&", "||", ";;", ";", "&", "|", "(", ")", "\n")
# Wrappers that run the rest of the line as a command: their options that take a value, and how
# many positional arguments come before the command.
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), 0),
    "nohup": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "command": (frozenset(), 0),
}
_ENV_VALUE_OPTS = frozenset({"-u", "--unset", "-C", "--chdir"})


def safe_folder(path: str) -> bool:
    """Whether ``path`` (workspace-relative) can go into a shell line unquoted: no ``..``, no
    absolute path, only ordinary characters."""
    return bool(_SAFE_FOLDER.match(path)) and ".." not in path.split("/")


def export_pythonpath(folders: Sequence[str]) -> str:
    """Shell text that puts ``folders`` (workspace-relative) in front of ``PYTHONPATH`` and of
    :data:`ARCS_PYTHONPATH`; run in the workspace root. Unsafe names are left out."""
    kept = [f.rstrip("/") for f in folders if safe_folder(f.rstrip("/"))]
    if not kept:
        return ""
    joined = ":".join(f"$PWD/{f}" for f in dict.fromkeys(kept))
    return (
        f'export {ARCS_PYTHONPATH}="{joined}${{{ARCS_PYTHONPATH}:+:${ARCS_PYTHONPATH}}}" '
        f'PYTHONPATH="{joined}${{PYTHONPATH:+:$PYTHONPATH}}"; '
    )


# --------------------------------------------------------------------------- shell words


@dataclass(frozen=True, slots=True)
class _Word:
    start: int
    end: int
    text: str
    """The raw text (quotes kept)."""

    @property
    def plain(self) -> str:
        """The word with quotes removed (best effort; expansions left as they are)."""
        try:
            parts = shlex.split(self.text)
        except ValueError:
            return self.text
        return parts[0] if len(parts) == 1 else self.text


def _scan(command: str) -> Iterator[_Word | str]:
    """Words (with their spans) and operators of a POSIX shell line, quotes and ``$(...)`` respected."""
    i, n = 0, len(command)
    while i < n:
        ch = command[i]
        if ch in " \t":
            i += 1
            continue
        if ch == "#":
            while i < n and command[i] != "\n":
                i += 1
            continue
        op = next((o for o in _OPERATORS if command.startswith(o, i)), None)
        if op is not None:
            yield op
            i += len(op)
            continue
        start = i
        depth = 0
        quote: str | None = None
        while i < n:
            ch = command[i]
            if quote == "'":
                if ch == "'":
                    quote = None
            elif ch == "\\":
                i += 1
            elif quote == '"':
                if ch == '"':
                    quote = None
                elif command.startswith("$(", i):
                    depth += 1
                    i += 1
                elif ch == ")" and depth:
                    depth -= 1
            elif ch in "'\"`":
                quote = ch if ch != "`" else None
                if ch == "`":
                    close = command.find("`", i + 1)
                    i = n - 1 if close < 0 else close
            elif command.startswith("$(", i):
                depth += 1
                i += 1
            elif ch == ")" and depth:
                depth -= 1
            elif ch == "&" and i > start and command[i - 1] in "<>":
                pass  # a redirection such as 2>&1 belongs to its word
            elif depth == 0 and ch in " \t\n;&|()":
                break
            i += 1
        if i == start:  # a lone operator character the table does not name
            i += 1
            continue
        yield _Word(start, min(i, n), command[start : min(i, n)])


def _simple_commands(command: str) -> Iterator[list[_Word]]:
    current: list[_Word] = []
    for token in _scan(command):
        if isinstance(token, str):
            if current:
                yield current
            current = []
        else:
            current.append(token)
    if current:
        yield current


def _extended(word: _Word, name_len: int) -> str:
    value = word.text[name_len + 1 :]
    if not value:
        return f'{word.text}"${ARCS_PYTHONPATH}"'
    return f'{word.text}"${{{ARCS_PYTHONPATH}:+:${ARCS_PYTHONPATH}}}"'


def _edits(words: list[_Word]) -> Iterator[tuple[int, int, str]]:
    """(start, end, replacement) for one simple command's words (see :func:`keep_pythonpath`)."""
    i = 0
    assignments = True
    while i < len(words):
        word = words[i]
        m = _ASSIGNMENT.match(word.text)
        if assignments and m:
            if m["name"] == "PYTHONPATH":
                yield word.start, word.end, _extended(word, len(m["name"]))
            i += 1
            continue
        name = word.plain
        if name == "export":
            for arg in words[i + 1 :]:
                m = _ASSIGNMENT.match(arg.text)
                if m and m["name"] == "PYTHONPATH":
                    yield arg.start, arg.end, _extended(arg, len(m["name"]))
            return
        if name == "env":
            i = yield from _env(words, i + 1)
            assignments = True
            continue
        if name in _WRAPPERS:
            valued, positional = _WRAPPERS[name]
            i += 1
            while i < len(words) and words[i].plain.startswith("-") and words[i].plain != "-":
                i += 2 if words[i].plain in valued else 1
            i += positional
            assignments = False
            continue
        return


def _env(words: list[_Word], i: int) -> Generator[tuple[int, int, str], None, int]:
    """``env``'s options and assignments from ``words[i]``; returns the index of its command."""
    cleared = False
    unset = False
    last = words[i - 1].end
    while i < len(words):
        opt = words[i].plain
        if opt in ("-i", "--ignore-environment", "-"):
            cleared = True
        elif opt.startswith(("-u", "--unset")):
            value = opt.split("=", 1)[1] if "=" in opt else opt[2:] if opt.startswith("-u") else ""
            if not value and i + 1 < len(words):
                value = words[i + 1].plain
                i += 1
            unset = unset or value == "PYTHONPATH"
        elif opt in _ENV_VALUE_OPTS:
            i += 1
        elif not opt.startswith("-") or opt in ("-S", "--split-string"):
            break
        last = words[i].end
        i += 1
    assigned = False
    while i < len(words) and (m := _ASSIGNMENT.match(words[i].text)):
        if m["name"] == "PYTHONPATH":
            assigned = True
            yield words[i].start, words[i].end, _extended(words[i], len(m["name"]))
        i += 1
    kept: list[str] = []
    if cleared:
        kept += [f'"{name}=${name}"' for name in ARCS_VARIABLES]
    if (cleared or unset) and not assigned:
        kept.append(f'"PYTHONPATH=${ARCS_PYTHONPATH}"')
    if kept:
        yield last, last, " " + " ".join(kept)
    return i


def keep_pythonpath(command: str) -> str:
    """``command`` with every ``PYTHONPATH`` it sets extended by ``$ARCS_PYTHONPATH`` (see the
    module docstring); unchanged when it sets none."""
    edits: list[tuple[int, int, str]] = []
    for words in _simple_commands(command):
        edits.extend(_edits(words))
    out = command
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        out = out[:start] + text + out[end:]
    return out


# --------------------------------------------------------------------------- the workspace environment

_MAKE_ENV = r"""
import importlib.util, os, shlex, site, sys, sysconfig, venv
env = sys.argv[1]
if not os.path.isfile(os.path.join(env, "pyvenv.cfg")):
    venv.EnvBuilder(symlinks=True, with_pip=False).create(env)
    paths = sysconfig.get_paths()
    parents = [p for p in dict.fromkeys([*site.getsitepackages(), paths["purelib"], paths["platlib"]])
               if os.path.isdir(p)]
    lib = os.path.join(env, "lib", "python%d.%d" % sys.version_info[:2], "site-packages")
    with open(os.path.join(lib, "_arcs_parent.pth"), "w", encoding="utf-8") as f:
        f.writelines("import site; site.addsitedir(%r)\n" % p for p in parents)
    bindir = os.path.join(env, "bin")
    py = shlex.quote(os.path.join(bindir, "python"))
    def shim(name, run):
        target = os.path.join(bindir, name)
        if not os.path.lexists(target):
            with open(target, "w", encoding="utf-8") as f:
                f.write('#!/bin/sh\nexec %s %s "$@"\n' % (py, run))
            os.chmod(target, 0o755)
    if importlib.util.find_spec("pip") is not None:
        for name in ("pip", "pip3", "pip%d.%d" % sys.version_info[:2]):
            shim(name, "-m pip")
    if sys.prefix != sys.base_prefix:
        here = os.path.dirname(sys.executable)
        for name in sorted(os.listdir(here)):
            path = os.path.join(here, name)
            if name.startswith(("python", "activate", "pip")) or not os.path.isfile(path):
                continue
            try:
                with open(path, "rb") as f:
                    head = f.read(512)
            except OSError:
                continue
            first = head.split(b"\n", 1)[0]
            if first.startswith(b"#!") and (b"python" in first or b"'''exec' " in head):
                shim(name, shlex.quote(path))
"""


def setup_prefix() -> str:
    """Shell lines that make (once) and activate the workspace environment; run in the workspace
    root before the ``setup:`` command. Without a Python in the sandbox, or when the environment
    cannot be made, the setup runs as before and a line on stderr says why."""
    env = f'"$PWD/{WORKSPACE_ENV}"'
    return (
        "arcs_py=$(command -v python3 || command -v python) && "
        f'"$arcs_py" -c {shlex.quote(_MAKE_ENV.strip())} {env} '
        f'&& export VIRTUAL_ENV={env} PATH={env}/bin:"$PATH" '
        "|| echo 'arcs: no workspace Python environment for setup (no python in the sandbox, or "
        "venv failed): setup runs on the read-only toolchain' >&2\n"
    )


def activate_prefix() -> str:
    """Shell text that activates the workspace environment when the setup made one."""
    env = f'"$PWD/{WORKSPACE_ENV}"'
    return f'if [ -f {env}/pyvenv.cfg ]; then export VIRTUAL_ENV={env} PATH={env}/bin:"$PATH"; fi; '
