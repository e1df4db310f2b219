"""Pinned or declared versions per package, read from one manifest or lock file's text. Pure.

Each reader takes a file's text and returns ``{package: {version, ...}}`` (a lock file may hold
several versions of one package; a manifest holds the version its specifier names). The formats
are read minimally but by their grammar: TOML with :mod:`tomllib`, JSON with :mod:`json`, and the
line formats (requirements, yarn.lock, pnpm-lock.yaml, go.mod) line by line. A text that does
not parse gives ``{}`` (a broken manifest is the build's problem, not a bump).
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

Ecosystem = Literal["pypi", "npm", "go", "cargo"]
Versions = dict[str, set[str]]
Reader = Callable[[str], Versions]

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$")
_EXACT = re.compile(r"^\s*(?:===?)\s*([^\s,;]+)\s*$")
_SPEC_VERSION = re.compile(r"(?:===?|~=|>=|<=|!=|>|<|\^|~)?\s*v?([0-9][0-9A-Za-z.+!*-]*)")


def normalize_pypi(name: str) -> str:
    """PEP 503's normal form of a distribution name (``Foo_Bar`` -> ``foo-bar``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pep508(requirement: str) -> tuple[str, str] | None:
    """``(normalized name, version)`` of a PEP 508 requirement; the version is the one an exact
    pin (``==``/``===``) names, else the first version the specifier names ('' when none).
    None for a URL requirement or text that is not a requirement."""
    text = requirement.split(";", 1)[0].strip()
    if not text:
        return None
    m = _NAME.match(text)
    if m is None:
        return None
    name, rest = m.group(1), m.group(3).strip().strip("()").strip()
    if rest.startswith("@"):
        return None  # a direct reference (URL): no version to compare
    return normalize_pypi(name), spec_version(rest)


def spec_version(spec: str) -> str:
    """The version a specifier pins (``==1.2``, ``^1.2.0``, ``~=1.2``, ``>=1.2,<2`` -> ``1.2``…); ''."""
    spec = spec.strip()
    exact = _EXACT.match(spec)
    if exact:
        return exact.group(1)
    for part in spec.split(","):
        part = part.strip()
        if part.startswith(("<", "!=")):
            continue  # an upper bound or exclusion does not name the version in use
        m = _SPEC_VERSION.match(part)
        if m:
            return m.group(1).rstrip(".*") or m.group(1)
    return ""


def _add(out: Versions, name: str, version: str) -> None:
    if name and version:
        out.setdefault(name, set()).add(version)


def _logical_lines(text: str) -> Iterable[str]:
    pending = ""
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0] if not raw.lstrip().startswith("#") else ""
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def read_requirements(text: str) -> Versions:
    """requirements*.txt (pip's format: options, ``-r``, hashes and markers skipped)."""
    out: Versions = {}
    for line in _logical_lines(text):
        line = re.sub(r"\s--hash[= ]\S+", "", line).strip()
        if not line or line.startswith("-"):
            continue
        parsed = pep508(line)
        if parsed:
            _add(out, *parsed)
    return out


def _toml(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}


def _table(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _poetry_deps(table: Mapping[str, Any], out: Versions) -> None:
    for name, spec in table.items():
        if name.lower() == "python":
            continue
        if isinstance(spec, Mapping):
            spec = spec.get("version", "")
        if isinstance(spec, str):
            _add(out, normalize_pypi(name), spec_version(spec))


def read_pyproject(text: str) -> Versions:
    """pyproject.toml: ``[project]`` dependencies and optional dependencies, ``[dependency-groups]``,
    Poetry's dependencies, dev-dependencies and groups."""
    data = _toml(text)
    out: Versions = {}
    project = _table(data.get("project"))
    reqs: list[object] = list(project.get("dependencies") or [])
    for group in _table(project.get("optional-dependencies")).values():
        reqs += list(group or [])
    for group in _table(data.get("dependency-groups")).values():
        reqs += list(group or [])
    for req in reqs:
        parsed = pep508(req) if isinstance(req, str) else None
        if parsed:
            _add(out, *parsed)
    poetry = _table(_table(data.get("tool")).get("poetry"))
    _poetry_deps(_table(poetry.get("dependencies")), out)
    _poetry_deps(_table(poetry.get("dev-dependencies")), out)
    for group in _table(poetry.get("group")).values():
        _poetry_deps(_table(_table(group).get("dependencies")), out)
    return out


def read_toml_lock(text: str) -> Versions:
    """poetry.lock, uv.lock, Cargo.lock: ``[[package]]`` tables with ``name`` and ``version``
    (uv's editable or virtual project itself is not a dependency)."""
    out: Versions = {}
    for pkg in _toml(text).get("package") or []:
        if not isinstance(pkg, Mapping):
            continue
        source = _table(pkg.get("source"))
        if "editable" in source or "virtual" in source:
            continue
        name, version = pkg.get("name"), pkg.get("version")
        if isinstance(name, str) and isinstance(version, str):
            _add(out, name, version)
    return out


def _json(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def read_pipfile_lock(text: str) -> Versions:
    """Pipfile.lock: ``default`` and ``develop``, name -> ``{"version": "==1.2"}``."""
    out: Versions = {}
    data = _json(text)
    for section in ("default", "develop"):
        for name, entry in _table(data.get(section)).items():
            version = _table(entry).get("version")
            if isinstance(version, str):
                _add(out, normalize_pypi(name), spec_version(version))
    return out


NPM_SECTIONS = ("dependencies", "devDependencies", "optionalDependencies", "peerDependencies")


def read_package_json(text: str) -> Versions:
    """package.json: the four dependency sections, name -> the version the range starts at."""
    out: Versions = {}
    data = _json(text)
    for section in NPM_SECTIONS:
        for name, spec in _table(data.get(section)).items():
            if isinstance(spec, str) and not re.match(r"^\w+:|^[./]|.*/.*#", spec):
                _add(out, name, spec_version(spec.split("||")[-1].split(" - ")[0]))
    return out


def read_package_lock(text: str) -> Versions:
    """package-lock.json / npm-shrinkwrap.json: lockfile v2/v3 ``packages`` (every installed copy,
    keyed ``node_modules/<name>``, nested ones too), else v1's nested ``dependencies``."""
    out: Versions = {}
    data = _json(text)
    packages = _table(data.get("packages"))
    if packages:
        for key, entry in packages.items():
            if "node_modules/" not in key:
                continue  # the root project or a workspace folder
            entry = _table(entry)
            name = entry.get("name") or key.rsplit("node_modules/", 1)[1]
            version = entry.get("version")
            if isinstance(name, str) and isinstance(version, str) and not entry.get("link"):
                _add(out, name, version)
        return out
    stack = [_table(data.get("dependencies"))]
    while stack:
        for name, entry in stack.pop().items():
            entry = _table(entry)
            version = entry.get("version")
            if isinstance(version, str) and re.match(r"^\d", version):
                _add(out, name, version)
            stack.append(_table(entry.get("dependencies")))
    return out


def _npm_name(spec: str) -> str:
    """``@scope/name@^1`` / ``name@npm:^1`` -> the package name ('' when there is none)."""
    spec = spec.strip().strip('"').strip("'")
    at = spec.find("@", 1)
    return spec[:at] if at > 0 else ""


def read_yarn_lock(text: str) -> Versions:
    """yarn.lock, classic (``version "1.2.3"``) and Berry (``version: 1.2.3``)."""
    out: Versions = {}
    names: list[str] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            if line.startswith("__metadata"):
                names = []
                continue
            names = [n for n in (_npm_name(s) for s in line.rstrip(":").split(",")) if n]
            continue
        m = re.match(r'^\s+version:?\s+"?([^"\s]+)"?\s*$', line)
        if m and names:
            for name in names:
                _add(out, name, m.group(1))
            names = []
    return out


_PNPM_KEY = re.compile(r"^  ['\"]?/?((?:@[^/@\s]+/)?[^/@\s(]+)[@/]([0-9][^(:'\"\s]*)")


def read_pnpm_lock(text: str) -> Versions:
    """pnpm-lock.yaml: the keys of its ``packages:`` map (``/name@1.2.3``, v5's ``/name/1.2.3``,
    v9's ``name@1.2.3``; a peer suffix ``(…)`` ignored)."""
    out: Versions = {}
    inside = False
    for line in text.splitlines():
        if line and not line[0].isspace():
            inside = line.rstrip() == "packages:"
            continue
        if inside:
            m = _PNPM_KEY.match(line)
            if m:
                _add(out, m.group(1), m.group(2))
    return out


def read_go_mod(text: str) -> Versions:
    """go.mod: ``require`` lines, single or in a block (``// indirect`` ones too)."""
    out: Versions = {}
    block = False
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if block:
            if line == ")":
                block = False
                continue
            parts = line.split()
        elif line.startswith("require"):
            rest = line[len("require") :].strip()
            if rest == "(":
                block = True
                continue
            parts = rest.split()
        else:
            continue
        if len(parts) == 2:
            _add(out, parts[0], parts[1])
    return out


def read_cargo_toml(text: str) -> Versions:
    """Cargo.toml: ``[dependencies]``, ``[dev-dependencies]``, ``[build-dependencies]``."""
    data = _toml(text)
    out: Versions = {}
    for section in ("dependencies", "dev-dependencies", "build-dependencies"):
        for name, spec in _table(data.get(section)).items():
            if isinstance(spec, Mapping):
                spec = spec.get("version", "")
            if isinstance(spec, str):
                _add(out, name, spec_version(spec))
    return out


def reader_for(path: str) -> tuple[Ecosystem, Reader, bool] | None:
    """``(ecosystem, reader, is a lock file)`` for a manifest path, or None for any other file."""
    name = path.rsplit("/", 1)[-1]
    lower = name.lower()
    in_folder = "/requirements/" in "/" + path.lower()
    if lower.endswith((".txt", ".in")) and ("requirements" in lower or "constraints" in lower or in_folder):
        return "pypi", read_requirements, True  # pins, as pip-compile writes them
    table: dict[str, tuple[Ecosystem, Reader, bool]] = {
        "pyproject.toml": ("pypi", read_pyproject, False),
        "poetry.lock": ("pypi", read_toml_lock, True),
        "uv.lock": ("pypi", read_toml_lock, True),
        "pipfile.lock": ("pypi", read_pipfile_lock, True),
        "package.json": ("npm", read_package_json, False),
        "package-lock.json": ("npm", read_package_lock, True),
        "npm-shrinkwrap.json": ("npm", read_package_lock, True),
        "yarn.lock": ("npm", read_yarn_lock, True),
        "pnpm-lock.yaml": ("npm", read_pnpm_lock, True),
        "go.mod": ("go", read_go_mod, True),
        "cargo.toml": ("cargo", read_cargo_toml, False),
        "cargo.lock": ("cargo", read_toml_lock, True),
    }
    return table.get(lower)


__all__ = [
    "Ecosystem",
    "Versions",
    "normalize_pypi",
    "pep508",
    "read_cargo_toml",
    "read_go_mod",
    "read_package_json",
    "read_package_lock",
    "read_pipfile_lock",
    "read_pnpm_lock",
    "read_pyproject",
    "read_requirements",
    "read_toml_lock",
    "read_yarn_lock",
    "reader_for",
    "spec_version",
]
