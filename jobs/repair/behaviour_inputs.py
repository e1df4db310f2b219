"""The behaviour probe's inputs, read from the tests (pure; :mod:`jobs.repair.behaviour`).

Which module-level functions a patch changes (:func:`changed_functions`), how to import them
(:func:`module_of`), the literal calls the tests make (:func:`call_inputs`: direct calls,
``assertRaises(E, f, …)``, with ``pytest.mark.parametrize`` rows or the items of a ``for`` loop over
a literal sequence filled in) and their neighbours (:func:`neighbours`). Test files are parsed with
:mod:`ast`, never run.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from jobs.repair.ports import SourceView

MAX_INPUTS = 120
"""Calls per probed function (tests' own inputs first, then neighbours)."""
MAX_REPR = 200
"""Characters of an input's or a result's ``repr`` kept (longer inputs are skipped)."""

Call = tuple[tuple[Any, ...], tuple[tuple[str, Any], ...]]
"""Positional arguments and keyword arguments (sorted) of one call, all literals."""


def changed_functions(before: str, after: str) -> list[str]:
    """Names of module-level functions whose source differs between ``before`` and ``after``
    (present in both)."""
    try:
        old, new = ast.parse(before), ast.parse(after)
    except (SyntaxError, ValueError):
        return []
    olds = {n.name: ast.dump(n) for n in old.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    out = []
    for n in new.body:
        if isinstance(n, ast.FunctionDef) and n.name in olds and ast.dump(n) != olds[n.name]:
            out.append(n.name)
    return out


def module_of(path: str, source: SourceView) -> tuple[str, str] | None:
    """``(root, dotted module)`` of a ``.py`` file: the package folders above it (each with an
    ``__init__.py``) form the module name, the folder above them is the root."""
    if not path.endswith(".py"):
        return None
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    i = len(parts) - 1
    while i > 0 and source.read("/".join(parts[:i]) + "/__init__.py") is not None:
        i -= 1
    return "/".join(parts[:i]), ".".join(parts[i:])


def _literal(node: ast.AST) -> tuple[bool, Any]:
    """``(True, value)`` for a literal whose ``repr`` is short and reads back as itself (the script
    embeds it: ``1e999`` would come back as ``inf``, a name)."""
    try:
        value = ast.literal_eval(node)
        text = repr(value)
        ok = len(text) <= MAX_REPR and ast.literal_eval(text) == value
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None
    return ok, value


def _parametrize_rows(fn: ast.FunctionDef) -> list[dict[str, Any]]:
    """``pytest.mark.parametrize`` rows of ``fn`` as name -> value (literal rows only)."""
    rows: list[dict[str, Any]] = []
    for dec in fn.decorator_list:
        if not (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute)):
            continue
        if dec.func.attr != "parametrize" or len(dec.args) < 2:
            continue
        names_node, values_node = dec.args[0], dec.args[1]
        ok, names = _literal(names_node)
        if not ok:
            continue
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",") if n.strip()]
        if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
            continue
        if not isinstance(values_node, ast.List | ast.Tuple):
            continue
        for elt in values_node.elts:
            if isinstance(elt, ast.Call):  # pytest.param(...)
                elt = ast.Tuple(elts=list(elt.args), ctx=ast.Load())
            values: list[ast.AST] = list(elt.elts) if isinstance(elt, ast.Tuple) and len(names) > 1 else [elt]
            if len(values) != len(names):
                continue
            row: dict[str, Any] = {}
            for name, node in zip(names, values, strict=True):
                good, value = _literal(node)
                if good:
                    row[name] = value
            if row:
                rows.append(row)
    return rows


def _loop_rows(fn: ast.AST) -> dict[int, list[dict[str, Any]]]:
    """Per call node inside a ``for`` loop over a literal sequence (or a name assigned one in the
    same test, ``for raw, parsed in test_pairs:``): the loop variables' values, one row per item.
    The innermost such loop wins."""
    assigned: dict[str, ast.AST] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned[node.targets[0].id] = node.value
    out: dict[int, list[dict[str, Any]]] = {}
    for loop in ast.walk(fn):  # breadth first: an inner loop overrides its outer one below
        if not isinstance(loop, ast.For):
            continue
        items = assigned.get(loop.iter.id) if isinstance(loop.iter, ast.Name) else loop.iter
        target = loop.target
        names = (
            [target.id]
            if isinstance(target, ast.Name)
            else [t.id for t in target.elts if isinstance(t, ast.Name)]
            if isinstance(target, ast.Tuple)
            else []
        )
        if not isinstance(items, ast.List | ast.Tuple | ast.Set) or not names:
            continue
        rows: list[dict[str, Any]] = []
        for elt in items.elts[:MAX_INPUTS]:
            parts = (
                [elt] if len(names) == 1 else list(elt.elts) if isinstance(elt, ast.Tuple | ast.List) else []
            )
            if len(parts) != len(names):
                continue
            row = {}
            for name, node in zip(names, parts, strict=True):
                good, value = _literal(node)
                if good:
                    row[name] = value
            if row:
                rows.append(row)
        if rows:
            for stmt in loop.body:
                for node in ast.walk(stmt):
                    if isinstance(node, ast.Call):
                        out[id(node)] = rows
    return out


def _named(node: ast.AST) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def _calls_in(tree: ast.AST, function: str) -> Iterator[Call]:
    """Literal calls of ``function`` in a test module: ``f(...)``, ``mod.f(...)`` and
    ``assertRaises(E, f, ...)``, with parameters filled from ``pytest.mark.parametrize`` rows or
    from the ``for`` loop over literal items around the call."""
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        params = _parametrize_rows(fn) if isinstance(fn, ast.FunctionDef) else []
        loops = _loop_rows(fn)
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call) or any(isinstance(a, ast.Starred) for a in node.args):
                continue
            if any(k.arg is None for k in node.keywords):
                continue
            if _named(node.func) == function:
                positional = list(node.args)
            else:  # a callable handed over with its arguments: assertRaises(E, f, x)
                at = next((i for i, a in enumerate(node.args) if _named(a) == function), -1)
                if at < 0 or not _named(node.func).startswith("assert"):
                    continue
                positional = list(node.args[at + 1 :])
            args: list[ast.AST] = [*positional, *(k.value for k in node.keywords)]
            rows = loops.get(id(node)) or params
            names = {a.id for a in args if isinstance(a, ast.Name)}
            for row in rows if names and rows else [{}]:
                values: list[Any] = []
                for a in args:
                    if isinstance(a, ast.Name) and a.id in row:
                        values.append(row[a.id])
                        continue
                    good, value = _literal(a)
                    if not good:
                        break
                    values.append(value)
                else:
                    n = len(positional)
                    kwargs = tuple(sorted(zip((k.arg or "" for k in node.keywords), values[n:], strict=True)))
                    yield tuple(values[:n]), kwargs


def call_inputs(tests: Mapping[str, str], function: str) -> list[Call]:
    """The distinct literal calls of ``function`` in the test files ``tests`` (path -> text)."""
    out: dict[str, Call] = {}
    for path in sorted(tests):
        try:
            tree = ast.parse(tests[path])
        except (SyntaxError, ValueError, RecursionError):
            continue
        for call in _calls_in(tree, function):
            out.setdefault(_key(call), call)
    return list(out.values())


def _steps(value: Any) -> list[Any]:
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int):
        return [value - 1, value + 1, value - 10, value + 10, value + 100]
    if isinstance(value, float):
        return [value - 1.0, value + 1.0]
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,12}", value):
        return [str(v) for v in _steps(int(value))]
    return []


def neighbours(calls: Sequence[Call]) -> list[Call]:
    """Calls next to ``calls``: one numeric argument (or numeric string) moved by a small step."""
    seen = {_key(c) for c in calls}
    out: list[Call] = []
    for args, kwargs in calls:
        for i, value in enumerate(args):
            for step in _steps(value):
                call: Call = ((*args[:i], step, *args[i + 1 :]), kwargs)
                if _key(call) not in seen:
                    seen.add(_key(call))
                    out.append(call)
    return out


def _key(call: Call) -> str:
    return repr(call)


__all__ = ["MAX_INPUTS", "MAX_REPR", "Call", "call_inputs", "changed_functions", "module_of", "neighbours"]
