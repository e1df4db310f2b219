"""The host folders a sandbox exposes read-only as toolchains, and the repository's own Python
environment (issue #23).

The sandbox shows commands a minimal read-only system (``/usr``) plus the Python installation ARCS
runs on. :func:`toolchain_paths` adds, as folders whose ``bin`` leads ``PATH``: the active virtual
environment (``sys.prefix`` when it differs from the base installation, so ``python -m pytest``
finds the venv's pytest), ``$VIRTUAL_ENV`` when set, and every extra folder the caller names
(``--toolchain DIR``).

:func:`detect_environment` then picks the *project's* environment and says in one line what it
used. In order: a Python environment among the given toolchains other than ARCS's own (the last
one: ``--toolchain``, else the active ``$VIRTUAL_ENV``); else the repository's own: ``.venv`` /
``venv`` in it (also uv's and pdm's default), the interpreter pdm names in ``.pdm-python``,
poetry's environment for this folder (its name is computed the way poetry computes it), hatch's
(``.hatch/`` or its data folder), then tox's and nox's (``.tox/*``, ``.nox/*``, the newest). The
chosen environment leads ``PATH``; the interpreter it was made from is exposed too when the sandbox
would not see it. Its editable installs point at the user's checkout, which the sandbox does not
show (and which is not the candidate's copy): each one inside the repository becomes a
workspace-relative ``PYTHONPATH`` folder (``src``), and one outside it (a sibling project) is
exposed read-only at its own path. A ``src`` layout (or a ``package-dir`` / poetry ``from`` in
``pyproject.toml``) is put on ``PYTHONPATH`` whatever the environment (:func:`source_folders`),
unless its package has compiled sources that only an install builds.
"""

from __future__ import annotations

import ast
import base64
import contextlib
import hashlib
import json
import os
import re
import sys
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runners import wsfs

__all__ = ["ProjectEnvironment", "PythonEnv", "detect_environment", "source_folders", "toolchain_paths"]

_COMPILED = (".pyx", ".pxd", ".c", ".cpp", ".cc", ".rs", ".f90")
_MAX_SCAN = 2000
"""Entries looked at per folder (site-packages, bin) before giving up: detection stays cheap."""


def toolchain_paths(
    extra: Sequence[Path] = (),
    *,
    prefix: str = sys.prefix,
    base_prefix: str = sys.base_prefix,
    environ: Mapping[str, str] | None = None,
) -> list[Path]:
    """The folders to expose to the sandbox (see the module docstring), absolute and de-duplicated.

    ``environ`` defaults to the process environment; pass ``{}`` to ignore ``$VIRTUAL_ENV``.
    """
    env = os.environ if environ is None else environ
    candidates: list[Path] = []
    if prefix != base_prefix:
        candidates.append(Path(prefix))
    venv = env.get("VIRTUAL_ENV")
    if venv:
        candidates.append(Path(venv))
    candidates.extend(extra)
    out: list[Path] = []
    for path in candidates:
        resolved = path.absolute()
        if resolved.is_dir() and resolved not in out:
            out.append(resolved)
    return out


# --------------------------------------------------------------------------- a Python environment


@dataclass(frozen=True, slots=True)
class PythonEnv:
    """A virtual environment on the host: where, its Python, its installed distributions."""

    path: Path
    version: str = ""
    """``3.11.7`` (from ``pyvenv.cfg``)."""
    home: Path | None = None
    """The folder of the interpreter it was made from (``pyvenv.cfg`` ``home``)."""
    site_packages: tuple[Path, ...] = ()
    packages: int = 0
    """Installed distributions (``*.dist-info`` / ``*.egg-info`` in site-packages)."""

    @classmethod
    def at(cls, path: Path) -> PythonEnv | None:
        """The environment at ``path``, or None when it is not one (no ``pyvenv.cfg``)."""
        cfg = path / "pyvenv.cfg"
        if not cfg.is_file():
            return None
        text = _read(cfg, 10_000)
        values: dict[str, str] = {}
        for line in text.splitlines():
            key, sep, value = line.partition("=")
            if sep:
                values[key.strip().lower()] = value.strip()
        version = values.get("version") or values.get("version_info", "")
        home = Path(values["home"]) if values.get("home") else None
        # lib64 is usually a link to lib: each folder once.
        real = {
            p.resolve(): p
            for p in sorted(path.glob("lib*/python3*/site-packages"), reverse=True)
            if p.is_dir()
        }
        sites = tuple(sorted(real.values()))
        count = 0
        for site in sites:
            with contextlib.suppress(OSError):
                count += sum(1 for e in _entries(site) if e.name.endswith((".dist-info", ".egg-info")))
        return cls(path.absolute(), version, home, sites, count)

    def describe(self, label: str) -> str:
        """``.venv (Python 3.11.7, 43 packages)``."""
        count = f"{self.packages} package{'' if self.packages == 1 else 's'}"
        bits = [f"Python {self.version}" if self.version else "", count]
        return f"{label} ({', '.join(b for b in bits if b)})"

    def editable_paths(self) -> list[Path]:
        """Folders this environment's editable installs put on ``sys.path`` (``.pth`` path lines,
        setuptools' ``__editable___*_finder.py`` mappings, ``*.egg-link``), as written."""
        found: list[Path] = []
        for site in self.site_packages:
            for entry in _entries(site):
                name = entry.name
                if name.endswith(".pth"):
                    for line in _read(entry).splitlines():
                        line = line.strip()
                        if line.startswith("/") and not line.startswith("import"):
                            found.append(Path(line))
                elif name.startswith("__editable__") and name.endswith("_finder.py"):
                    found.extend(_finder_parents(_read(entry)))
                elif name.endswith(".egg-link"):
                    first = _read(entry).splitlines()[:1]
                    if first and first[0].startswith("/"):
                        found.append(Path(first[0].strip()))
        return list(dict.fromkeys(found))

    def installs(self, repo: Path) -> bool:
        """Whether a distribution in it was installed from ``repo`` (``direct_url.json``)."""
        url = repo.resolve().as_uri()
        for site in self.site_packages:
            for entry in _entries(site):
                if entry.name.endswith(".dist-info"):
                    data = _read(entry / "direct_url.json")
                    if data and _url_of(data) == url:
                        return True
        return False


def _entries(folder: Path) -> list[Path]:
    try:
        with os.scandir(folder) as it:
            out: list[Path] = []
            for e in it:
                out.append(Path(e.path))
                if len(out) >= _MAX_SCAN:
                    break
            return out
    except OSError:
        return []


def _read(path: Path, limit: int = 200_000) -> str:
    """At most ``limit`` bytes of the regular file ``path`` ('' for anything else): never a link at
    its last component, never a FIFO or device (a repository may commit any of them in a ``.venv``)."""
    try:
        return wsfs.read_text(path.parent, path.name, limit=limit, errors="replace")
    except OSError:
        return ""


def _url_of(text: str) -> str:
    with contextlib.suppress(ValueError):
        data = json.loads(text)
        if isinstance(data, dict) and isinstance(data.get("url"), str):
            return str(data["url"]).rstrip("/")
    return ""


def _finder_parents(source: str) -> list[Path]:
    """The folders holding each package of a setuptools editable finder's ``MAPPING``."""
    with contextlib.suppress(SyntaxError, ValueError):
        for node in ast.parse(source).body:
            target = getattr(node, "target", None) or (getattr(node, "targets", None) or [None])[0]
            if isinstance(target, ast.Name) and target.id == "MAPPING" and getattr(node, "value", None):
                mapping = ast.literal_eval(node.value)  # type: ignore[attr-defined]
                if isinstance(mapping, dict):
                    out = []
                    for name, where in mapping.items():
                        path = Path(str(where))
                        # {'pkg': '/repo/src/pkg'}: the folder to import from is /repo/src.
                        out.append(path.parent if path.name == str(name).split(".")[-1] else path)
                    return out
    return []


# --------------------------------------------------------------------------- the repository's layout


def source_folders(root: Path) -> tuple[tuple[str, ...], str]:
    """Repository-relative folders a test run should import the package under test from, and a note.

    ``src/`` holding a package or module (not itself a package), or the folder ``pyproject.toml``
    names (setuptools ``package-dir`` ``""``, poetry ``packages[].from``); ``setup.cfg``'s
    ``package_dir = =lib``. A package with compiled sources (``.pyx``, ``.c``…) is left out: only
    an install builds it (the note says so).
    """
    named: list[str] = []
    data = _pyproject(root)
    tool = data.get("tool", {}) if isinstance(data.get("tool"), dict) else {}
    setuptools = tool.get("setuptools", {}) if isinstance(tool.get("setuptools"), dict) else {}
    package_dir = setuptools.get("package-dir")
    if isinstance(package_dir, dict) and isinstance(package_dir.get(""), str):
        named.append(package_dir[""])
    poetry = tool.get("poetry", {}) if isinstance(tool.get("poetry"), dict) else {}
    for spec in poetry.get("packages", []) if isinstance(poetry.get("packages"), list) else []:
        if isinstance(spec, dict) and isinstance(spec.get("from"), str):
            named.append(spec["from"])
    m = re.search(r"^\s*package_dir\s*=\s*\n?\s*=\s*(\S+)\s*$", _read(root / "setup.cfg", 50_000), re.M)
    if m:
        named.append(m.group(1))
    candidates = [*named, "src"]
    out: list[str] = []
    note = ""
    for rel in dict.fromkeys(c.strip().strip("/") for c in candidates):
        folder = root / rel
        if not rel or rel == "." or ".." in rel.split("/") or not folder.is_dir() or folder.is_symlink():
            continue
        if (folder / "__init__.py").exists():
            continue  # `src` is itself a package: imported as `src.x`, from the root
        packages = [
            e
            for e in _entries(folder)
            if (e.is_dir() and not e.name.startswith((".", "_")) and any(_py_files(e)))
            or (e.suffix == ".py" and e.is_file())
        ]
        if not packages:
            continue
        if any(p.is_dir() and _compiled(p) for p in packages):
            note = f"{rel}/ has compiled sources: not put on PYTHONPATH (install it with `setup:`)"
            continue
        out.append(rel)
    return tuple(out), note


def _py_files(folder: Path) -> Iterable[Path]:
    return (e for e in _entries(folder) if e.suffix == ".py")


def _compiled(folder: Path) -> bool:
    seen = 0
    for _dirpath, _dirs, files in os.walk(folder):
        seen += len(files)
        if any(f.endswith(_COMPILED) for f in files):
            return True
        if seen > _MAX_SCAN:
            return False
    return False


def _pyproject(root: Path) -> dict[str, Any]:
    text = _read(root / "pyproject.toml", 500_000)
    if not text:
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def _project_name(root: Path) -> str:
    data = _pyproject(root)
    for table in (data.get("tool", {}).get("poetry", {}), data.get("project", {})):
        if isinstance(table, dict) and isinstance(table.get("name"), str):
            return str(table["name"])
    return ""


def poetry_env_name(name: str, root: Path) -> str:
    """poetry's name for ``root``'s environments (``<name>-<hash>``, then ``-py3.11``): the project
    name sanitized and an 8-character digest of the folder's real path (poetry's ``EnvManager``)."""
    sanitized = re.sub(r'[ $`!*@"\\\r\n\t]', "_", name.lower())[:42]
    digest = hashlib.sha256(os.path.normcase(os.path.realpath(root)).encode("utf-8")).digest()
    return f"{sanitized}-{base64.urlsafe_b64encode(digest).decode()[:8]}"


def repository_environments(
    repo: Path, *, environ: Mapping[str, str] | None = None, home: Path | None = None
) -> list[tuple[str, Path]]:
    """(label, path) of the repository's own environments, best first (see the module docstring).

    ``environ`` (poetry's and hatch's folder variables) and ``home`` (their default folders) come
    from the caller; without ``home`` only folders inside the repository are looked at.
    """
    env = environ or {}
    found: list[tuple[str, Path]] = []
    for name in (".venv", "venv"):
        found.append((name, repo / name))
    pdm = _read(repo / ".pdm-python", 4096).strip()
    if pdm.startswith("/"):
        found.append(("pdm (.pdm-python)", Path(pdm).parent.parent))
    name = _project_name(repo)
    if name and home is not None:
        cache = env.get("XDG_CACHE_HOME") or str(home / ".cache")
        folder = env.get("POETRY_VIRTUALENVS_PATH") or (
            str(Path(env["POETRY_CACHE_DIR"]) / "virtualenvs")
            if env.get("POETRY_CACHE_DIR")
            else str(Path(cache) / "pypoetry" / "virtualenvs")
        )
        for path in sorted(Path(folder).glob(f"{poetry_env_name(name, repo)}-py*"), reverse=True):
            found.append(("poetry", path))
    hatch = [p for p in sorted((repo / ".hatch").glob("*")) if p.is_dir()]
    if name and home is not None:
        data = env.get("HATCH_DATA_DIR") or str(
            Path(env.get("XDG_DATA_HOME") or home / ".local/share") / "hatch"
        )
        normalized = re.sub(r"[-_.]+", "-", name).lower()
        hatch += sorted(Path(data, "env", "virtual", normalized).glob("*/*"))
    found += [("hatch", p) for p in hatch if (PythonEnv.at(p) or PythonEnv(p)).installs(repo)] + [
        ("hatch", p) for p in hatch
    ]
    for tool in (".tox", ".nox"):
        envs = [p for p in _entries(repo / tool) if (p / "pyvenv.cfg").is_file()]
        envs.sort(key=lambda p: _mtime(p / "pyvenv.cfg"), reverse=True)
        found += [(f"{tool[1:]} ({tool}/{p.name})", p) for p in envs]
    return found


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


# --------------------------------------------------------------------------- detection


@dataclass(frozen=True, slots=True)
class ProjectEnvironment:
    """What the sandbox uses for the project: toolchains (later ones lead ``PATH``), the folders
    to put on ``PYTHONPATH`` and the one line that says so."""

    toolchains: tuple[Path, ...]
    pythonpath: tuple[str, ...] = ()
    """Repository-relative folders (the workspace copy's), in front of ``PYTHONPATH``."""
    env: PythonEnv | None = None
    label: str = ""
    why: str = ""
    """Why :attr:`pythonpath` is set (``src layout``, ``editable install``)."""
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def line(self) -> str:
        """``environment: .venv (Python 3.11.7, 43 packages), src layout → PYTHONPATH=src``."""
        parts = [self.env.describe(self.label) if self.env is not None else self.label]
        if self.pythonpath:
            because = f"{self.why} → " if self.why else ""
            parts.append(f"{because}PYTHONPATH={':'.join(self.pythonpath)}")
        parts.extend(self.notes)
        return "environment: " + ", ".join(p for p in parts if p)


def detect_environment(
    repo: Path,
    toolchains: Sequence[Path] = (),
    *,
    own_prefix: str = sys.prefix,
    base_prefix: str = sys.base_prefix,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
    trusted: bool = True,
) -> ProjectEnvironment:
    """The project's environment for ``repo`` given the ``toolchains`` already chosen (see the
    module docstring). ``own_prefix`` is ARCS's own environment (a fallback, never the project's).

    ``trusted`` False (a clone the App repairs: its files are the attacker's): an environment the
    repository holds may expose nothing outside it but a real Python installation (its
    interpreter's home), never a linked environment folder, never one ``.pdm-python`` names
    outside the repository, and no editable path outside the repository (:func:`_untrusted_ok`).
    """
    repo = Path(repo).absolute()
    own = Path(own_prefix).absolute()
    given = [Path(t).absolute() for t in toolchains]
    chosen: tuple[str, PythonEnv] | None = None
    for path in reversed(given):
        found = PythonEnv.at(path)
        if found is not None and path != own:
            chosen = (_label(path, repo, "toolchain"), found)
            break
    before: list[Path] = []  # exposed, but never ahead of the given toolchains on PATH
    lead: list[Path] = []  # a discovered environment: leads PATH
    if chosen is None:
        for label, path in repository_environments(repo, environ=environ, home=home):
            if not trusted and not _untrusted_ok(path, repo):
                continue
            found = PythonEnv.at(path)
            if found is not None and (path / "bin").is_dir():
                chosen = (_label(found.path, repo, label), found)
                lead.append(found.path)
                break
    if chosen is None:
        own_env = PythonEnv.at(own)
        if own_env is not None:
            chosen = ("ARCS's own environment", own_env)
    notes: list[str] = []
    pythonpath, layout_note = source_folders(repo)
    why = "src layout" if pythonpath else ""
    paths = list(pythonpath)
    if layout_note:
        notes.append(layout_note)
    env = chosen[1] if chosen else None
    # An environment inside an untrusted repository names host paths the attacker chose.
    guarded = not trusted and env is not None and env.path not in given
    if env is not None and env.path != own:
        if env.home is not None and env.home.parent.is_dir():
            base = env.home.parent.absolute()
            if (
                not base.is_relative_to("/usr")
                and base not in given
                and base != Path(base_prefix).absolute()
                and (not guarded or _python_installation(base))
            ):
                before.append(base)  # the interpreter the environment was made from
        real_repo = repo.resolve()
        for path in env.editable_paths():
            inside = next((r for r in (real_repo, repo) if path.is_relative_to(r)), None)
            if inside is not None:
                rel = path.relative_to(inside).as_posix()
                if rel not in (".", *paths):
                    paths.append(rel)
                    why = why or "editable install"
            elif guarded:
                notes.append(
                    f"{path} (outside the repository) not exposed: the repository's own environment names it"
                )
            elif len(path.parts) > 3 and path.is_dir() and path not in given and path not in before:
                before.append(path)
                notes.append(f"{path} (on its sys.path) exposed read-only")
    return ProjectEnvironment(
        toolchains=tuple(dict.fromkeys([*before, *given, *lead])),
        pythonpath=tuple(paths),
        env=env,
        label=chosen[0] if chosen else "no Python environment (the sandbox's python)",
        why=why,
        notes=tuple(notes),
    )


def _untrusted_ok(path: Path, repo: Path) -> bool:
    """An environment of an untrusted repository: inside it, by a path with no link (a committed
    ``.venv -> /host/folder`` would expose that folder)."""
    try:
        rel = path.absolute().relative_to(repo)
    except ValueError:
        return False
    here = repo
    for part in rel.parts:
        here = here / part
        if here.is_symlink():
            return False
    return True


def _python_installation(base: Path) -> bool:
    """``base`` looks like a Python installation (``bin/python3*`` and ``lib/python3.*``), not
    an arbitrary host folder a repository's ``pyvenv.cfg`` ``home`` points at."""
    return any(base.glob("bin/python3*")) and any(p.is_dir() for p in base.glob("lib/python3.*"))


def _label(path: Path, repo: Path, kind: str) -> str:
    if path.is_relative_to(repo):
        rel = path.relative_to(repo).as_posix()
        return rel if kind in (".venv", "venv", "toolchain") else f"{kind} {rel}"
    return str(path) if kind == "toolchain" else f"{kind} {path}"
