"""The public API difference of a Python distribution between two versions, from source. Pure.

Both versions come as ``{path: source}`` of their unpacked distributions (sdist or wheel); nothing
is imported or run, everything is read with :mod:`ast`. A module's public names are its ``__all__``
when it is a literal, else its module-level definitions without a leading underscore, plus, in a
package's ``__init__``, the names it imports (re-exports). The difference lists:

* ``removed``: a public name (function, class, constant, re-export, public method ``C.m``) gone;
* ``renamed`` / ``moved``: the same, when the old version names its replacement: its body only
  calls or returns another name, a ``DeprecationWarning`` text quotes it ("renamed to 'soft_str'",
  "Import 'markupsafe.Markup' instead"), it was a re-export of another package's name (``from
  markupsafe import Markup`` in jinja2), a module ``__getattr__`` shim returned it, or a name of
  that spelling is now defined in another module of the package;
* ``keyword_renamed`` / ``keyword_removed`` / ``required_added``: a function or method kept its
  name but a keyword its callers may pass is gone (renamed when a new one takes its place) or a
  new parameter without default is required;
* ``module_removed``: a public module is gone.

``replacement`` is always the full dotted name (``markupsafe.soft_str``), or the new keyword.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

ChangeKind = Literal[
    "removed", "renamed", "moved", "keyword_renamed", "keyword_removed", "required_added", "module_removed"
]
SKIP_DIRS = frozenset(
    {"tests", "test", "testing", "docs", "doc", "examples", "example", "benchmarks", "scripts"}
)
MAX_MODULE_CHARS = 1_000_000
"""Larger source files are not parsed (generated tables, vendored bundles)."""
_QUOTED = re.compile(r"[`'\"]([A-Za-z_][\w.]*)(?:\(\))?[`'\"]")
_HINT = re.compile(
    r"(?:renamed to|replaced by|use|import|moved to|in favou?r of)\s+(?:the\s+)?[`'\"]?([A-Za-z_][\w.]*)",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Params:
    """The parameters of a function as a caller sees them."""

    positional: tuple[str, ...] = ()
    """Positional-or-keyword names in order (positional-only ones excluded)."""
    keyword_only: tuple[str, ...] = ()
    required: frozenset[str] = frozenset()
    var_keyword: bool = False
    var_positional: bool = False


@dataclass
class Symbol:
    """One module-level binding."""

    name: str
    kind: Literal["function", "class", "assign", "import", "method"]
    origin: str = ""
    """For an import: the dotted name it binds (``markupsafe.Markup``)."""
    params: Params | None = None
    hints: list[str] = field(default_factory=list)
    """Names the old body points at: a DeprecationWarning's quoted names, a body that only
    returns or calls another name."""


@dataclass
class Module:
    """The public surface of one module."""

    name: str
    is_package: bool
    symbols: dict[str, Symbol] = field(default_factory=dict)
    all_names: frozenset[str] | None = None
    shims: dict[str, list[str]] = field(default_factory=dict)
    """Names a module ``__getattr__`` still answers, with the names it points at."""

    def public(self) -> dict[str, Symbol]:
        """The names a user of the module may import."""
        out: dict[str, Symbol] = {}
        for name, sym in self.symbols.items():
            if self.all_names is not None:
                if name in self.all_names or (sym.kind == "method" and name.split(".")[0] in self.all_names):
                    out[name] = sym
            elif not any(p.startswith("_") for p in name.split(".")) and (
                sym.kind != "import" or self.is_package
            ):
                out[name] = sym
        return out


@dataclass(frozen=True, slots=True)
class ApiChange:
    """One breaking difference between the two versions."""

    kind: ChangeKind
    module: str
    name: str
    """The name in ``module`` (``soft_unicode``, ``Markup.unescape``); '' for a module."""
    replacement: str = ""
    """Full dotted name of the replacement, or the new keyword ('' when unknown)."""
    keyword: str = ""
    evidence: str = ""

    @property
    def qualified(self) -> str:
        """``module.name``."""
        return f"{self.module}.{self.name}" if self.name else self.module

    def describe(self) -> str:
        """One line: ``markupsafe.soft_unicode: renamed to markupsafe.soft_str (…)``."""
        what = {
            "removed": "removed",
            "renamed": f"renamed to {self.replacement}",
            "moved": f"moved to {self.replacement}",
            "keyword_renamed": f"keyword {self.keyword!r} renamed to {self.replacement!r}",
            "keyword_removed": f"keyword {self.keyword!r} removed",
            "required_added": f"new required parameter {self.keyword!r}",
            "module_removed": "module removed",
        }[self.kind]
        return f"{self.qualified}: {what}" + (f" ({self.evidence})" if self.evidence else "")

    def to_json(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {k: getattr(self, k) for k in ("kind", "module", "name", "replacement", "keyword", "evidence")}


def module_names(files: Mapping[str, str]) -> dict[str, tuple[str, bool]]:
    """Dotted module name -> (path, is a package ``__init__``) for the importable modules of an
    unpacked distribution: top-level packages (a folder with ``__init__.py`` whose parent has
    none) and top-level single modules, wherever the archive roots them (``src/``, ``pkg-1.0/``)."""
    paths = {p.replace("\\", "/") for p in files if p.endswith((".py", ".pyi"))}
    inits = {p.rsplit("/", 1)[0] if "/" in p else "" for p in paths if p.endswith("/__init__.py")}
    out: dict[str, tuple[str, bool]] = {}
    for path in sorted(paths):
        if path.endswith(".pyi") and path[:-1] in paths:
            continue
        parts = path.split("/")
        stem = parts[-1].rsplit(".", 1)[0]
        folder = "/".join(parts[:-1])
        chain: list[str] = []
        while folder in inits:
            chain.insert(0, folder.rsplit("/", 1)[-1])
            folder = folder.rsplit("/", 1)[0] if "/" in folder else ""
        if not chain and (
            stem in {"setup", "conftest", "noxfile", "fabfile", "tasks", "__init__"}
            or len(parts) > 3
            or stem.startswith(("test_", "_"))
        ):
            continue  # a loose script beside the package, not a module of it
        if any(c in SKIP_DIRS for c in chain) or any(p in SKIP_DIRS for p in parts[:-1]):
            continue
        is_package = stem == "__init__"
        name = ".".join(chain if is_package else [*chain, stem])
        if name and name not in out:
            out[name] = (path, is_package)
    return out


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef, *, method: bool) -> Params:
    a = fn.args
    positional = [p.arg for p in a.args]
    if method and positional and not _is_static(fn):
        positional = positional[1:]  # self / cls
    n_default = len(a.defaults)
    required = {p for p in positional[: len(positional) - n_default] if positional}
    required |= {p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is None}
    return Params(
        tuple(positional),
        tuple(p.arg for p in a.kwonlyargs),
        frozenset(required),
        a.kwarg is not None,
        a.vararg is not None,
    )


def _is_static(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def _hints(body: Iterable[ast.stmt], own: str) -> list[str]:
    """Names a (deprecated) body points at: quoted in a warning text, or the one name it returns
    or calls when that is all it does."""
    out: list[str] = []
    stmts = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    for node in ast.walk(ast.Module(body=list(stmts), type_ignores=[])):
        if isinstance(node, ast.Call) and _dotted(node.func).endswith("warn"):
            text = " ".join(
                s.value
                for a in node.args[:1]
                for s in ast.walk(a)
                if isinstance(s, ast.Constant) and isinstance(s.value, str)
            )
            found = [m.group(1) for m in _HINT.finditer(text)] + [m.group(1) for m in _QUOTED.finditer(text)]
            # a dotted name may be the same name elsewhere ("Import 'markupsafe.Markup' instead")
            out += [n.rstrip(".") for n in found if n.rstrip(".") != own]
    real = [s for s in stmts if not isinstance(s, (ast.Import, ast.ImportFrom))]
    real = [
        s
        for s in real
        if not (
            isinstance(s, ast.Expr)
            and isinstance(s.value, ast.Call)
            and _dotted(s.value.func).endswith("warn")
        )
    ]
    if len(real) == 1 and isinstance(real[0], ast.Return) and real[0].value is not None:
        value = real[0].value
        target = _dotted(value.func) if isinstance(value, ast.Call) else _dotted(value)
        if target and target.split(".")[-1] != own:
            out.append(target)
    return list(dict.fromkeys(out))


def _getattr_shims(fn: ast.FunctionDef) -> dict[str, list[str]]:
    """``if name == "old": warn(...); return new`` branches of a module ``__getattr__``."""
    out: dict[str, list[str]] = {}
    for node in ast.walk(fn):
        if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
            continue
        names = [
            c.value
            for c in [node.test.left, *node.test.comparators]
            if isinstance(c, ast.Constant) and isinstance(c.value, str)
        ]
        for name in names:
            out[name] = _hints(node.body, name)
    return out


def _package_of(module: str, is_package: bool) -> str:
    return module if is_package else module.rsplit(".", 1)[0] if "." in module else ""


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = _package_of(module, is_package).split(".")
    base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
    return ".".join([*base, node.module] if node.module else base)


def read_module(name: str, source: str, *, is_package: bool) -> Module | None:
    """The public surface of one module's source (None when it does not parse)."""
    if len(source) > MAX_MODULE_CHARS:
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    mod = Module(name, is_package)
    for stmt in _top_level(tree.body):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if stmt.name == "__getattr__" and isinstance(stmt, ast.FunctionDef):
                mod.shims.update(_getattr_shims(stmt))
            mod.symbols[stmt.name] = Symbol(
                stmt.name, "function", params=_params(stmt, method=False), hints=_hints(stmt.body, stmt.name)
            )
        elif isinstance(stmt, ast.ClassDef):
            init = next(
                (
                    s
                    for s in stmt.body
                    if isinstance(s, ast.FunctionDef) and s.name in ("__init__", "__new__")
                ),
                None,
            )
            hints = _hints(init.body, stmt.name) if init is not None else []
            params = _params(init, method=True) if init is not None else None
            mod.symbols[stmt.name] = Symbol(stmt.name, "class", params=params, hints=hints)
            for s in stmt.body:
                if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and not s.name.startswith("_"):
                    q = f"{stmt.name}.{s.name}"
                    mod.symbols[q] = Symbol(
                        q, "method", params=_params(s, method=True), hints=_hints(s.body, s.name)
                    )
        elif isinstance(stmt, ast.ImportFrom):
            source_mod = _resolve(name, is_package, stmt)
            for alias in stmt.names:
                if alias.name != "*":
                    bound = alias.asname or alias.name
                    mod.symbols[bound] = Symbol(bound, "import", origin=f"{source_mod}.{alias.name}")
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    if t.id == "__all__":
                        mod.all_names = _literal_names(stmt.value)
                    else:
                        alias_of = _dotted(stmt.value) if stmt.value is not None else ""
                        mod.symbols[t.id] = Symbol(t.id, "assign", hints=[alias_of] if alias_of else [])
        elif (
            isinstance(stmt, ast.AugAssign)
            and isinstance(stmt.target, ast.Name)
            and stmt.target.id == "__all__"
        ):
            extra = _literal_names(stmt.value)
            if mod.all_names is not None and extra is not None:
                mod.all_names = mod.all_names | extra
    return mod


def _top_level(body: list[ast.stmt]) -> Iterable[ast.stmt]:
    """Module-level statements, also inside ``if``/``try`` (version switches), not ``TYPE_CHECKING``."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            if "TYPE_CHECKING" in ast.dump(stmt.test):
                continue
            yield from _top_level(stmt.body)
            yield from _top_level(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            yield from _top_level(stmt.body)
            for h in stmt.handlers:
                yield from _top_level(h.body)
        else:
            yield stmt


def _literal_names(node: ast.expr | None) -> frozenset[str] | None:
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        names = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return frozenset(names) if len(names) == len(node.elts) else None
    return None


def read_api(files: Mapping[str, str]) -> dict[str, Module]:
    """Module name -> :class:`Module` for an unpacked distribution."""
    out: dict[str, Module] = {}
    for name, (path, is_package) in module_names(files).items():
        mod = read_module(name, files[path], is_package=is_package)
        if mod is not None:
            out[name] = mod
    return out


__all__ = ["ApiChange", "ChangeKind", "Module", "Params", "Symbol", "module_names", "read_api", "read_module"]
