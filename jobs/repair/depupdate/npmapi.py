"""The exported API difference of an npm package between two versions, from its type
declarations (``.d.ts``). Pure; read with regular expressions, not a TypeScript parser.

A package's public modules are the subpaths of package.json's ``exports`` map (``"./browser"`` is
``pkg/browser``, its ``types`` condition or the declarations next to its JavaScript), only those
when there is a map (a file path is not importable past it); without one, its root (``types``/
``typings``, else ``index.d.ts``) and every folder's ``index.d.ts`` (the subpath ``pkg/sub``).
``export = Name`` (a CommonJS module that is ``Name`` itself) is the ``default`` export, with
``Name`` as its hint: a new version exporting ``Name`` by name renamed it. A module's exported
names are its ``export`` declarations (function, class, const, let, var, enum, interface, type,
namespace, ``default``), its ``export { a, b as c }`` lists and, followed through relative
paths, ``export … from`` and ``export * from``. A declaration whose JSDoc says ``@deprecated Use
`x` instead`` points at its replacement. Removed names become :class:`ApiChange` values with the
module written ``pkg`` or ``pkg/sub``: ``removed``, ``renamed`` (the deprecation names an export
of the new version), ``moved`` (the same name is exported by another public module now), and
``module_removed``. Packages without declarations give nothing.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping

from jobs.repair.depupdate.apidiff import ApiChange, ChangeKind

_DECL = re.compile(
    r"(?:/\*\*((?:[^*]|\*(?!/))*)\*/\s*)?^export\s+(?:declare\s+)?(default\s+)?"
    r"(?:abstract\s+)?(?:async\s+)?(function\*?|class|const|let|var|enum|interface|type|namespace)\s+([A-Za-z_$][\w$]*)",
    re.M,
)
_DEFAULT = re.compile(r"^export\s+default\b", re.M)
_ASSIGN = re.compile(r"^export\s*=\s*([A-Za-z_$][\w$]*)", re.M)
_LIST = re.compile(r"^export\s+(?:type\s+)?\{([^}]*)\}\s*(?:from\s+['\"]([^'\"]+)['\"])?", re.M)
_STAR = re.compile(r"^export\s+\*\s*(?:as\s+([\w$]+)\s+)?from\s+['\"]([^'\"]+)['\"]", re.M)
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_LINE_COMMENT = re.compile(r"(?<![:\"'])//[^\n]*")
_TICKED = re.compile(r"[`'\"]([A-Za-z_$][\w$.]*)(?:\(\))?[`'\"]|\{@link\s+([A-Za-z_$][\w$.]*)\}")
_HINT = re.compile(r"(?:use|replaced by|renamed to|in favou?r of)\s+[`'\"]?([A-Za-z_$][\w$.]*)", re.I)
MAX_DEPTH = 8


def _package_dir(files: Mapping[str, str]) -> str:
    """The folder holding package.json (``package/`` in an npm tarball), '' at the root."""
    found = sorted((p for p in files if p.endswith("package.json")), key=lambda p: p.count("/"))
    return found[0][: -len("package.json")] if found else ""


def _entry(files: Mapping[str, str], base: str) -> str:
    try:
        meta = json.loads(files.get(base + "package.json", "{}"))
    except ValueError:
        meta = {}
    types = meta.get("types") or meta.get("typings") if isinstance(meta, dict) else None
    if isinstance(types, str):
        path = posixpath.normpath(base + types.removeprefix("./"))
        return path if path.endswith(".d.ts") else path + ".d.ts"
    return base + "index.d.ts"


def _meta(files: Mapping[str, str], base: str) -> dict[str, object]:
    try:
        meta = json.loads(files.get(base + "package.json", "{}"))
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def _types_of(target: object) -> str | None:
    """The declaration file an ``exports`` target names: its ``types`` condition, else the first
    condition that has one, else the ``.d.ts`` beside its JavaScript."""
    if isinstance(target, str):
        if target.endswith((".d.ts", ".d.mts", ".d.cts")):
            return target
        js = re.match(r"^(.*)\.(m|c)?js$", target)
        return f"{js.group(1)}.d.{js.group(2) or ''}ts" if js else None
    if isinstance(target, dict):
        for key in ("types", "require", "import", "default", "node"):
            found = _types_of(target.get(key))
            if found:
                return found
    if isinstance(target, list):
        return next((t for t in map(_types_of, target) if t), None)
    return None


def _mapped(files: Mapping[str, str], base: str) -> dict[str, str] | None:
    """``exports`` subpath (``""``, ``"/browser"``) -> declaration file; None without a map."""
    exports = _meta(files, base).get("exports")
    if isinstance(exports, str | list) or (
        isinstance(exports, dict) and not any(k.startswith(".") for k in exports)
    ):
        exports = {".": exports}
    if not isinstance(exports, dict):
        return None
    out: dict[str, str] = {}
    for key, target in exports.items():
        if not key.startswith(".") or "*" in key or key.endswith(".json"):
            continue
        types = _types_of(target)
        if types:
            out[key[1:].rstrip("/")] = posixpath.normpath(base + types.removeprefix("./"))
    return out


def _resolve(files: Mapping[str, str], here: str, spec: str) -> str | None:
    if not spec.startswith("."):
        return None  # another package's names: not this package's API to follow
    stem = posixpath.normpath(posixpath.join(posixpath.dirname(here), spec))
    stem = re.sub(r"\.(js|mjs|cjs|ts)$", "", stem)
    for candidate in (stem + ".d.ts", stem + ".d.mts", stem + ".d.cts", stem + "/index.d.ts"):
        if candidate in files:
            return candidate
    return None


def exports_of(files: Mapping[str, str], path: str, depth: int = 0) -> dict[str, list[str]]:
    """Exported name -> hints (names a ``@deprecated`` note points at) of one declaration file."""
    text = files.get(path)
    if text is None or depth > MAX_DEPTH:
        return {}
    out: dict[str, list[str]] = {}
    for m in _DECL.finditer(text):
        if m.group(2):
            continue  # ``export default function f``: exported as ``default``, not as ``f``
        doc, name = m.group(1) or "", m.group(4)
        hints: list[str] = []
        if "@deprecated" in doc:
            note = doc.split("@deprecated", 1)[1]
            hints = [
                h
                for h in [
                    *(x.group(1) for x in _HINT.finditer(note)),
                    *(a or b for a, b in _TICKED.findall(note)),
                ]
                if h != name
            ]
        known = out.setdefault(name, [])
        known.extend(h for h in dict.fromkeys(hints) if h not in known)
    if _DEFAULT.search(text):
        out.setdefault("default", [])
    for m in _ASSIGN.finditer(text):
        out.setdefault("default", []).append(m.group(1))
    code = _LINE_COMMENT.sub("", _BLOCK_COMMENT.sub(" ", text))
    for m in _LIST.finditer(code):
        source = _resolve(files, path, m.group(2)) if m.group(2) else None
        inner = exports_of(files, source, depth + 1) if source else {}
        for item in m.group(1).split(","):
            item = re.sub(r"^\s*type\s+", "", item.strip())
            if not item:
                continue
            orig, _, alias = item.partition(" as ")
            name = (alias or orig).strip()
            out.setdefault(name, []).extend(inner.get(orig.strip(), []))
    for m in _STAR.finditer(code):
        if m.group(1):
            out.setdefault(m.group(1), [])
            continue
        source = _resolve(files, path, m.group(2))
        if source:
            for name, hints in exports_of(files, source, depth + 1).items():
                if name != "default":
                    out.setdefault(name, []).extend(hints)
    return out


def read_npm_api(files: Mapping[str, str], package: str) -> dict[str, dict[str, list[str]]]:
    """Public module (``pkg``, ``pkg/sub``) -> its exports, for an unpacked npm package."""
    base = _package_dir(files)
    modules: dict[str, dict[str, list[str]]] = {}
    entry = _entry(files, base)
    mapped = _mapped(files, base)
    if mapped is not None:
        for sub, path in sorted(mapped.items()):
            if path not in files and sub == "":
                path = entry  # a map without declarations for ".": package.json's `types`
            if path in files:
                modules[package + sub] = exports_of(files, path)
        return modules
    if entry in files:
        modules[package] = exports_of(files, entry)
    for path in sorted(files):
        if path.startswith(base) and path.endswith("/index.d.ts") and path != entry:
            sub = path[len(base) : -len("/index.d.ts")]
            if sub and not any(
                part in ("node_modules", "test", "tests", "__tests__") for part in sub.split("/")
            ):
                modules[f"{package}/{sub}"] = exports_of(files, path)
    return modules


def diff_npm(old: Mapping[str, str], new: Mapping[str, str], package: str) -> list[ApiChange]:
    """The removed, renamed and moved exports from ``old`` to ``new``."""
    before, after = read_npm_api(old, package), read_npm_api(new, package)
    out: list[ApiChange] = []
    for module in sorted(before):
        if module not in after:
            out.append(ApiChange("module_removed", module, ""))
            continue
        for name, hints in sorted(before[module].items()):
            if name in after[module]:
                continue
            target = next((h for h in hints if h.split(".")[0] in after[module]), "")
            if target:
                why = f"export = {target}, exported by name now" if name == "default" else "@deprecated note"
                out.append(ApiChange("renamed", module, name, f"{module}.{target}", evidence=why))
                continue
            elsewhere = sorted(m for m, names in after.items() if name in names)
            kind: ChangeKind = "moved" if elsewhere else "removed"
            out.append(
                ApiChange(
                    kind,
                    module,
                    name,
                    f"{elsewhere[0]}.{name}" if elsewhere else "",
                    evidence="exported there now" if elsewhere else "",
                )
            )
    return out


__all__ = ["diff_npm", "exports_of", "read_npm_api"]
