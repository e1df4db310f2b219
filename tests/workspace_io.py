"""The AST check behind tests/test_workspace_io.py: every file operation in the product packages.

A call counts when it reads, writes, creates, removes, renames or changes the mode of a file by
path: ``open()``, ``io.open``, ``os.open``/``remove``/``unlink``/``mkdir``/``chmod``/``rename``...,
``shutil`` copies and removals, and the ``pathlib`` methods ``read_text``, ``read_bytes``,
``write_text``, ``write_bytes``, ``open``, ``touch``, ``mkdir``, ``rmdir``, ``unlink``, ``chmod``,
``rename``, ``replace`` (one argument: ``str.replace`` takes two), ``symlink_to`` and
``hardlink_to``. Metadata queries (``stat``, ``exists``, ``is_file``) and listings are not
counted: they neither block on a FIFO nor change anything. A method named ``open`` called on a
capitalized name (``RepoIndex.open``, a constructor) is not a file.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("bot", "jobs", "runners", "indexing")
DATA_DIRS = ("bot/samples",)
THE_MODULE = "runners/wsfs.py"
"""The one module allowed to touch workspace paths (it does so without following links)."""

_OS = frozenset(
    {
        "open",
        "remove",
        "unlink",
        "rmdir",
        "removedirs",
        "mkdir",
        "makedirs",
        "chmod",
        "lchmod",
        "chown",
        "lchown",
        "rename",
        "renames",
        "replace",
        "symlink",
        "link",
        "truncate",
        "mkfifo",
        "mknod",
    }
)
_SHUTIL = frozenset(
    {"rmtree", "copy", "copy2", "copyfile", "copytree", "move", "copymode", "copystat", "chown"}
)
_PATH_METHODS = frozenset(
    {
        "read_text",
        "read_bytes",
        "write_text",
        "write_bytes",
        "touch",
        "mkdir",
        "rmdir",
        "unlink",
        "chmod",
        "lchmod",
        "rename",
        "symlink_to",
        "hardlink_to",
    }
)


@dataclass(frozen=True, slots=True)
class FileCall:
    """One file operation found in a module."""

    path: str
    """Repository-relative file."""
    scope: str
    """The enclosing ``Class.function`` (``<module>`` at the top level)."""
    line: int
    call: str
    """What is called (``open``, ``os.unlink``, ``.read_text``...)."""

    @property
    def key(self) -> str:
        """``path::scope``: how the allowlist names it."""
        return f"{self.path}::{self.scope}"


def _called(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return "open" if func.id == "open" else None
    if not isinstance(func, ast.Attribute):
        return None
    owner = func.value
    name = func.attr
    if isinstance(owner, ast.Name) and owner.id == "wsfs":
        return None  # the one module's own API
    if isinstance(owner, ast.Name) and owner.id in ("os", "io", "shutil"):
        if owner.id == "os" and name in _OS:
            return f"os.{name}"
        if owner.id == "io" and name == "open":
            return "io.open"
        if owner.id == "shutil" and name in _SHUTIL:
            return f"shutil.{name}"
        return None
    if name in _PATH_METHODS:
        return f".{name}"
    if name == "replace" and len(node.args) == 1 and not node.keywords:
        return ".replace"
    if name == "open" and not (isinstance(owner, ast.Name) and owner.id[:1].isupper()):
        return ".open"
    return None


class _Finder(ast.NodeVisitor):
    def __init__(self, path: str) -> None:
        self.path = path
        self.scope: list[str] = []
        self.found: list[FileCall] = []

    def _scoped(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_FunctionDef = _scoped
    visit_AsyncFunctionDef = _scoped
    visit_ClassDef = _scoped

    def visit_Call(self, node: ast.Call) -> None:
        called = _called(node)
        if called is not None:
            scope = ".".join(self.scope) or "<module>"
            self.found.append(FileCall(self.path, scope, node.lineno, called))
        self.generic_visit(node)


def file_calls(source: str, path: str) -> list[FileCall]:
    """The file operations in ``source`` (the module at repository-relative ``path``)."""
    finder = _Finder(path)
    finder.visit(ast.parse(source, filename=path))
    return finder.found


def product_modules(root: Path) -> Iterator[tuple[str, str]]:
    """(repository-relative path, source) of every product module but :data:`THE_MODULE`."""
    for package in PACKAGES:
        for file in sorted((root / package).rglob("*.py")):
            rel = file.relative_to(root).as_posix()
            if rel == THE_MODULE or any(rel.startswith(d + "/") for d in DATA_DIRS):
                continue
            yield rel, file.read_text(encoding="utf-8")


def violations(calls: list[FileCall], allowed: dict[str, str]) -> tuple[list[FileCall], list[str]]:
    """Calls no allowlist entry covers, and entries that cover no call (stale)."""
    bad = [c for c in calls if c.key not in allowed]
    used = {c.key for c in calls}
    return bad, sorted(k for k in allowed if k not in used)
