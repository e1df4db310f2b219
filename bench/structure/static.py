"""Static measurements of the code's structure for issue #25 (read with :mod:`ast`, nothing imported).

Each function returns plain JSON-able values with ``file:line`` places, so a before and an after
run can be diffed. What is measured and how (heuristics are named as such):

* :func:`controller_lines`: the lines of the functions/classes that ``spec.json`` names as the
  controller (the code that decides what runs in a repair), whole ``def``/``class`` spans and
  code lines (no blank lines, comments or docstrings);
* :func:`budget_writes`: every place that creates or changes a budget, a spend or a meter:
  calls of ``Budget``/``Spend``/``BudgetMeter``, ``.with_(...)`` (a new Budget), the meter's
  mutators (``charge``/``count_round``/``count_runs``), assignments to ``.budget``/``.spend``
  attributes or to a meter's attributes, ``replace(..., budget=/spend=)``, and the string
  ``"loop_budget"``;
* :func:`trace_writes`: every write into a :class:`jobs.repair.trace.Trace` outside the trace
  module: an assignment (also augmented, also through a subscript or a deeper attribute) or a
  mutating method call (``append``, ``extend``, ``update``...) on ``<x>.trace.<field>`` or
  ``trace.<field>`` where ``<field>`` is one of Trace's own fields (read from the class); plus
  ``Trace(...)`` constructions. Heuristic: a Trace held in a variable not named ``trace`` is missed;
* :func:`framework_keys`: files whose string constants (docstrings excluded) are exactly a test
  framework's key (``"pytest"``), and files whose constants mention it as a word;
* :func:`test_path_rules`: regexes and predicates that decide "is this a test file";
* :func:`actor_registries`: where an actor's name is a key of a table (dict keys, ``Literal``
  members, class-variable values) in product code;
* :func:`repeated_names`: module file names that occur more than once (``__init__.py`` excluded),
  and Protocol classes declared under the same name in several modules;
* :func:`upward_imports` / :func:`typing_cycles`: from ``tests/import_graph.py`` (the same graph
  ``scripts/import-graph`` checks);
* :func:`anchored_lists`: the hand-made lists of ``spec.json`` (type conversions, the three "how to
  add" exercises, compatibility layers), each entry checked against the code (its file exists,
  its function exists, its needle occurs in it), so a stale entry shows up as ``missing``.
"""

from __future__ import annotations

import ast
import re
import tokenize
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bot", "jobs", "indexing", "runners")
DATA_DIRS = ("bot/samples",)
TRACE_MODULES = ("jobs/repair/trace.py",)
"""The trace's own module: writes there are the trace's own business."""

Place = str  # "path:line"


@dataclass(frozen=True)
class Module:
    """One product source file, parsed."""

    rel: str
    tree: ast.Module
    lines: list[str]


def product_modules(root: Path = ROOT) -> list[Module]:
    """Every ``.py`` file of the product packages (sample repositories excluded), parsed."""
    out: list[Module] = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if any(rel.startswith(d + "/") for d in DATA_DIRS):
                continue
            text = path.read_text(encoding="utf-8")
            out.append(Module(rel, ast.parse(text, filename=rel), text.splitlines()))
    return out


def _place(module: Module, node: ast.AST) -> Place:
    return f"{module.rel}:{getattr(node, 'lineno', 0)}"


def _dotted(node: ast.AST) -> str:
    """``a.b.c`` for a Name/Attribute chain (subscripts shown as ``[]``); '' otherwise."""
    parts: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript):
            parts.append("[]")
            node = node.value
        elif isinstance(node, ast.Call):
            parts.append("()")
            node = node.func
        elif isinstance(node, ast.Name):
            parts.append(node.id)
            return ".".join(reversed(parts)).replace(".[]", "[]").replace(".()", "()")
        else:
            return ""


def _docstring_nodes(tree: ast.AST) -> set[int]:
    ids: set[int] = set()
    for node in ast.walk(tree):
        # a string expression statement anywhere in a body: a docstring (module, class, function,
        # or an attribute's docstring after its assignment)
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for stmt in body:
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                    ids.add(id(stmt.value))
    return ids


# --- the controller -------------------------------------------------------------------------------


def _find_def(
    tree: ast.Module, qualname: str
) -> ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None:
    scope: Sequence[ast.stmt] = tree.body
    found: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None = None
    for part in qualname.split("."):
        found = next(
            (
                n
                for n in scope
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name == part
            ),
            None,
        )
        if found is None:
            return None
        scope = found.body
    return found


def _code_lines(module: Module, node: ast.AST) -> int:
    """Lines of ``node`` that hold code: no blank lines, comment-only lines or docstring lines."""
    start, end = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
    doc_lines: set[int] = set()
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Expr)
            and isinstance(sub.value, ast.Constant)
            and isinstance(sub.value.value, str)
        ):
            doc_lines.update(range(sub.lineno, (sub.end_lineno or sub.lineno) + 1))
    count = 0
    for n in range(start, end + 1):
        text = module.lines[n - 1].strip()
        if text and not text.startswith("#") and n not in doc_lines:
            count += 1
    return count


def controller_lines(modules: Mapping[str, Module], targets: Sequence[Mapping[str, str]]) -> dict[str, Any]:
    """Lines of each named controller part (``{"file", "name"}``; name ``*``: the whole module)."""
    rows: list[dict[str, Any]] = []
    for target in targets:
        rel, name = target["file"], target["name"]
        module = modules.get(rel)
        if module is None:
            rows.append({"file": rel, "name": name, "missing": True})
            continue
        if name == "*":
            lines = len(module.lines)
            code = _code_lines(module, _whole(module))
            rows.append({"file": rel, "name": name, "lines": lines, "code_lines": code, "at": f"{rel}:1"})
            continue
        node = _find_def(module.tree, name)
        if node is None:
            rows.append({"file": rel, "name": name, "missing": True})
            continue
        span = (node.end_lineno or node.lineno) - node.lineno + 1
        rows.append(
            {
                "file": rel,
                "name": name,
                "lines": span,
                "code_lines": _code_lines(module, node),
                "at": _place(module, node),
                "why": target.get("why", ""),
            }
        )
    present = [r for r in rows if not r.get("missing")]
    per_file: Counter[str] = Counter()
    for r in present:
        per_file[r["file"]] += r["lines"]
    return {
        "lines": sum(r["lines"] for r in present),
        "code_lines": sum(r["code_lines"] for r in present),
        "files": len(per_file),
        "per_file": dict(sorted(per_file.items())),
        "parts": rows,
        "missing": [f"{r['file']}::{r['name']}" for r in rows if r.get("missing")],
    }


def _whole(module: Module) -> ast.AST:
    node = ast.Module(body=module.tree.body, type_ignores=[])
    node.lineno = 1  # type: ignore[attr-defined]
    node.end_lineno = len(module.lines)  # type: ignore[attr-defined]
    return node


def function_spans(module: Module, min_lines: int = 0) -> list[tuple[str, int]]:
    """``(qualname, lines)`` of every function in ``module`` at least ``min_lines`` long."""
    out: list[tuple[str, int]] = []

    def visit(scope: Sequence[ast.stmt], prefix: str) -> None:
        for node in scope:
            if isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                span = (node.end_lineno or node.lineno) - node.lineno + 1
                if span >= min_lines:
                    out.append((f"{prefix}{node.name}", span))

    visit(module.tree.body, "")
    return out


# --- budget and trace writes ----------------------------------------------------------------------

_BUDGET_TYPES = frozenset({"Budget", "Spend", "BudgetMeter"})
_METER_MUTATORS = frozenset({"charge", "count_round", "count_runs"})
_MUTATING = frozenset(
    {"append", "extend", "update", "setdefault", "insert", "pop", "clear", "remove", "add", "discard", "sort"}
)


def _uses_budget(module: Module) -> bool:
    if module.rel in ("jobs/repair/budget.py", "jobs/repair/meter.py"):
        return True
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("jobs.repair.budget", "jobs.repair.meter"):
            return True
        if isinstance(node, ast.Constant) and node.value == "loop_budget":
            return True
    return False


def _functions_by_line(module: Module) -> list[tuple[int, int, str]]:
    spans: list[tuple[int, int, str]] = []
    for node in ast.walk(module.tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            spans.append((node.lineno, node.end_lineno or node.lineno, node.name))
    return spans


def _enclosing(spans: list[tuple[int, int, str]], line: int) -> str:
    best = ("", 0)
    for start, end, name in spans:
        if start <= line <= end and start >= best[1]:
            best = (name, start)
    return best[0]


def budget_writes(modules: Sequence[Module]) -> dict[str, Any]:
    """Every place that creates or changes a budget, a spend or a meter (see the module docstring),
    in the modules that import the budget or meter module. A site inside a ``from_json``/``from_*``
    function is a value read back (a trace, a report), counted apart."""
    found: dict[str, list[Place]] = defaultdict(list)
    for module in modules:
        if not (module.rel.startswith("jobs/") or _uses_budget(module)):
            continue
        spans = _functions_by_line(module)

        def add(
            kind: str,
            node: ast.AST,
            detail: str = "",
            module: Module = module,
            spans: list[tuple[int, int, str]] = spans,
        ) -> None:
            where = _enclosing(spans, getattr(node, "lineno", 0))
            if (
                where.startswith("from_")
                or where.endswith("from_json")
                or (module.rel == "jobs/repair/report.py" and where in ("_budget", "_spend"))
            ):
                kind = "read back from JSON (from_*)"
            found[kind].append(f"{_place(module, node)} {where}{(' ' + detail) if detail else ''}".rstrip())

        for node in ast.walk(module.tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = (
                    func.id
                    if isinstance(func, ast.Name)
                    else func.attr
                    if isinstance(func, ast.Attribute)
                    else ""
                )
                if name in _BUDGET_TYPES:
                    add(f"new {name}", node)
                elif name == "with_" and isinstance(func, ast.Attribute):
                    add("Budget.with_ (a changed budget)", node)
                elif name in _METER_MUTATORS and isinstance(func, ast.Attribute):
                    add(f"meter.{name}", node, _dotted(func.value))
                elif name == "replace" and any(k.arg in ("budget", "spend") for k in node.keywords):
                    add("replace(..., budget=/spend=)", node)
            elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if not isinstance(target, ast.Attribute):
                        continue
                    owner = _dotted(target.value)
                    if target.attr in ("budget", "spend"):
                        add(f"assign .{target.attr}", node, f"{owner}.{target.attr}")
                    elif module.rel == "jobs/repair/meter.py" and owner == "self":
                        add("the meter's own state", node, f"self.{target.attr}")
                    elif "meter" in owner.lower():
                        add("assign a meter's attribute", node, f"{owner}.{target.attr}")
            if (
                isinstance(node, ast.AugAssign)
                and isinstance(node.target, ast.Attribute)
                and node.target.attr in ("runs", "wall_s", "extra_runs")
                and module.rel.startswith("jobs/")
            ):
                add("a run/wall counter kept outside the meter (+=)", node, _dotted(node.target))
            elif isinstance(node, ast.Constant) and node.value == "loop_budget":
                add('"loop_budget" (the loop\'s own budget kept in trace.repo)', node)
    places = sorted({p.split(" ")[0] for ps in found.values() for p in ps})
    core = ("jobs/repair/budget.py", "jobs/repair/meter.py", "jobs/fakes.py")
    outside = sorted({p for p in places if not p.startswith(core)})
    read_back = {p.split(" ")[0] for p in found.get("read back from JSON (from_*)", [])}
    writers = sorted(p for p in outside if p not in read_back)
    return {
        "sites": len(places),
        "files": len({p.split(":")[0] for p in places}),
        "sites_outside_budget_and_meter_modules": len(outside),
        "writing_sites_outside": len(writers),
        "writing_files_outside": sorted({p.split(":")[0] for p in writers}),
        "by_kind": {k: {"count": len(v), "places": sorted(v)} for k, v in sorted(found.items())},
    }


def trace_fields(modules: Mapping[str, Module]) -> list[str]:
    """The fields of ``jobs.repair.trace.Trace`` (annotated class attributes)."""
    module = modules["jobs/repair/trace.py"]
    node = _find_def(module.tree, "Trace")
    assert isinstance(node, ast.ClassDef)
    return [
        stmt.target.id
        for stmt in node.body
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
    ]


_RECORD_TYPES = {
    "Trace": "",
    "RoundRecord": "rounds[]",
    "CandidateRecord": "rounds[].candidates[]",
    "Reproduction": "reproduction",
    "Outcome": "outcome",
}
"""The trace's record types: a variable of one of these types is part of the trace."""


def _chain(expr: ast.AST) -> list[str]:
    """``["st", "trace", "notices"]`` for ``st.trace.notices[...]``; [] when not a plain chain."""
    chain: list[str] = []
    node = expr
    while True:
        if isinstance(node, ast.Attribute):
            chain.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript):
            chain.append("[]")
            node = node.value
        elif isinstance(node, ast.Name):
            chain.append(node.id)
            return list(reversed(chain))
        else:
            return []


def _trace_types(tree: ast.Module) -> frozenset[str]:
    """The record types ``tree`` imports from the trace module (other ``Outcome`` types exist)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("jobs.repair.trace", "jobs.repair.state"):
            names.update(a.asname or a.name for a in node.names if a.name in _RECORD_TYPES)
    return frozenset(names)


def _annotation_type(node: ast.AST | None, known: frozenset[str]) -> str:
    if node is None:
        return ""
    text = ast.unparse(node).replace('"', "").replace("'", "")
    for name in known:
        if re.search(rf"(^|[.\[| ]){name}($|[\]| ])", text):
            return name
    return ""


class _TraceWrites(ast.NodeVisitor):
    """Writes into a trace within one module (see :func:`trace_writes`)."""

    def __init__(self, module: Module, fields: frozenset[str]) -> None:
        self.module = module
        self.fields = fields
        self.found: dict[str, list[Place]] = defaultdict(list)
        self.created: list[Place] = []
        self.aliases: list[dict[str, str]] = [{}]
        self.types = _trace_types(module.tree)

    # -- what an expression refers to --------------------------------------------------------------

    def _field_of(self, expr: ast.AST) -> str | None:
        """The trace part ``expr`` is (or lies in): a Trace field name, or a record label."""
        chain = _chain(expr)
        if not chain:
            return None
        for i, part in enumerate(chain[:-1]):
            if part == "trace" and chain[i + 1] in self.fields:
                return chain[i + 1]
        root = chain[0]
        for scope in reversed(self.aliases):
            if root in scope:
                label = scope[root]
                if label == "":  # a Trace held under another name
                    return chain[1] if len(chain) > 1 and chain[1] in self.fields else None
                return label
        return None

    def _write(self, target: ast.AST, node: ast.AST) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            for elt in target.elts:
                self._write(elt, node)
            return
        if isinstance(target, ast.Name):
            return  # rebinding a local is not a write into the trace
        field = self._field_of(target)
        if field is not None:
            self.found[field].append(_place(self.module, node))

    # -- scopes and aliases -------------------------------------------------------------------------

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        scope: dict[str, str] = {}
        args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        for arg in args:
            kind = _annotation_type(arg.annotation, self.types)
            if kind:
                scope[arg.arg] = _RECORD_TYPES[kind]
        self.aliases.append(scope)
        self.generic_visit(node)
        self.aliases.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def _bind(self, name: str, value: ast.AST | None, annotation: ast.AST | None = None) -> None:
        kind = _annotation_type(annotation, self.types)
        if kind:
            self.aliases[-1][name] = _RECORD_TYPES[kind]
            return
        if isinstance(value, ast.Call):
            func = value.func
            called = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute)
                else ""
            )
            if called in self.types:
                self.aliases[-1][name] = _RECORD_TYPES[called]
                return
        field = self._field_of(value) if value is not None else None
        if field is not None:
            self.aliases[-1][name] = field
        else:
            self.aliases[-1].pop(name, None)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._write(target, node)
        self.generic_visit(node)
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self._bind(node.targets[0].id, node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._write(node.target, node)
        self.generic_visit(node)
        if isinstance(node.target, ast.Name):
            self._bind(node.target.id, node.value, node.annotation)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        target = node.target
        if isinstance(target, ast.Name):
            field = self._field_of(target)
            if field is not None:
                self.found[field].append(_place(self.module, node))
        else:
            self._write(target, node)
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        if isinstance(node.target, ast.Name):
            field = self._field_of(node.iter)
            if field is not None:
                self.aliases[-1][node.target.id] = field + ("[]" if not field.endswith("[]") else "")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _MUTATING:
            field = self._field_of(func.value)
            if field is not None:
                self.found[field].append(_place(self.module, node))
        called = (
            func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        )
        if called == "Trace":
            self.created.append(_place(self.module, node))
        self.generic_visit(node)


def trace_writes(modules: Sequence[Module], fields: Sequence[str]) -> dict[str, Any]:
    """Every write into a Trace outside the trace module (see the module docstring): assignments and
    mutating calls on ``<x>.trace.<field>``, on a name bound to such a path, and on a variable of a
    trace record type (``RoundRecord``, ``CandidateRecord``, ``Reproduction``, ``Outcome``: made
    by its constructor, or a parameter annotated with it)."""
    names = frozenset(fields)
    by_field: dict[str, list[Place]] = defaultdict(list)
    created: list[Place] = []
    for module in modules:
        if module.rel in TRACE_MODULES:
            continue
        visitor = _TraceWrites(module, names)
        visitor.visit(module.tree)
        for field, places in visitor.found.items():
            by_field[field].extend(places)
        created.extend(visitor.created)
    top = {k: v for k, v in by_field.items() if k in names}
    places = sorted({p for ps in by_field.values() for p in ps})
    top_places = sorted({p for ps in top.values() for p in ps})
    per_file: Counter[str] = Counter(p.split(":")[0] for p in places)
    return {
        "sites": len(places),
        "files": len(per_file),
        "top_level_sites": len(top_places),
        "top_level_files": len({p.split(":")[0] for p in top_places}),
        "fields_written": len(top),
        "fields_total": len(fields),
        "per_file": dict(sorted(per_file.items(), key=lambda kv: (-kv[1], kv[0]))),
        "by_field": {k: sorted(v) for k, v in sorted(by_field.items())},
        "trace_created": sorted(created),
    }


# --- knowledge spread by strings ------------------------------------------------------------------


def _string_constants(module: Module) -> Iterator[ast.Constant]:
    docs = _docstring_nodes(module.tree)
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node


def framework_keys(modules: Sequence[Module], frameworks: Sequence[str]) -> dict[str, Any]:
    """Per framework: files with a string constant equal to its key, and files mentioning it as a word."""
    out: dict[str, Any] = {}
    for key in frameworks:
        word = re.compile(rf"(?<![\w.-]){re.escape(key)}(?![\w-])")
        exact: set[str] = set()
        mention: set[str] = set()
        for module in modules:
            for const in _string_constants(module):
                if const.value == key:
                    exact.add(module.rel)
                    mention.add(module.rel)
                elif word.search(str(const.value)):
                    mention.add(module.rel)
        out[key] = {
            "files_keyed": len(exact),
            "files_mentioning": len(mention),
            "keyed": sorted(exact),
            "mentioning": sorted(mention),
        }
    return out


_TEST_RULE_NAME = re.compile(r"TEST_(PATH|FILE|DIRS)\b")
_TEST_PREDICATE = re.compile(r"^_?(is_test(_path|_file)?|looks_like_test|_looks_like_test|is_test_file)$")


def test_path_rules(modules: Sequence[Module]) -> dict[str, Any]:
    """Regexes named ``*TEST_PATH/FILE/DIRS*`` and ``is_test*``/``looks_like_test`` predicates."""
    regexes: list[dict[str, str]] = []
    predicates: list[Place] = []
    for module in modules:
        for node in ast.walk(module.tree):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                if _TEST_RULE_NAME.search(node.targets[0].id):
                    pattern = ""
                    for sub in ast.walk(node.value):
                        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                            pattern += sub.value
                    regexes.append(
                        {"at": _place(module, node), "name": node.targets[0].id, "pattern": pattern}
                    )
            elif isinstance(node, ast.FunctionDef) and _TEST_PREDICATE.match(node.name):
                predicates.append(f"{_place(module, node)} {node.name}")
    distinct = sorted({r["pattern"] for r in regexes})
    return {
        "regexes": len(regexes),
        "distinct_regexes": len(distinct),
        "predicates": len(predicates),
        "files": len({r["at"].split(":")[0] for r in regexes} | {p.split(":")[0] for p in predicates}),
        "regex_places": [f"{r['at']} {r['name']}" for r in regexes],
        "predicate_places": predicates,
    }


def actor_registries(modules: Sequence[Module], actor: str) -> dict[str, Any]:
    """Tables in which ``actor`` is a key: dict keys, ``Literal[...]`` members, ``ClassVar`` values."""
    places: list[str] = []
    for module in modules:
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Dict):
                for key in node.keys:
                    if isinstance(key, ast.Constant) and key.value == actor:
                        places.append(f"{_place(module, key)} dict key")
            elif isinstance(node, ast.Subscript) and _dotted(node.value).endswith("Literal"):
                elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
                if any(isinstance(e, ast.Constant) and e.value == actor for e in elts):
                    places.append(f"{_place(module, node)} Literal member")
            elif (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.value, ast.Constant)
                and node.value.value == actor
            ):
                places.append(f"{_place(module, node)} class variable")
            elif (
                isinstance(node, ast.FunctionDef)
                and node.name == actor
                and module.rel.startswith("jobs/actors")
            ):
                places.append(f"{_place(module, node)} actor body")
    return {
        "actor": actor,
        "registries": len(places),
        "files": len({p.split(":")[0] for p in places}),
        "places": sorted(places),
    }


def repeated_names(modules: Sequence[Module]) -> dict[str, Any]:
    """Module file names used more than once, and Protocols declared under one name in several modules."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for module in modules:
        name = module.rel.rsplit("/", 1)[-1]
        if name != "__init__.py":
            by_name[name].append(module.rel)
    repeated = {k: sorted(v) for k, v in sorted(by_name.items()) if len(v) > 1}
    protocols: dict[str, list[Place]] = defaultdict(list)
    for module in modules:
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ClassDef) and any(_dotted(b).endswith("Protocol") for b in node.bases):
                protocols[node.name].append(_place(module, node))
    twice = {k: sorted(v) for k, v in sorted(protocols.items()) if len(v) > 1}
    classes: dict[str, list[str]] = defaultdict(list)
    for module in modules:
        for stmt in module.tree.body:
            if isinstance(stmt, ast.ClassDef) and not stmt.name.startswith("_"):
                classes[stmt.name].append(_place(module, stmt))
    same_class = {k: sorted(v) for k, v in sorted(classes.items()) if len(v) > 1}
    return {
        "public_classes_declared_twice": same_class,
        "file_names_repeated": len(repeated),
        "files_involved": sum(len(v) for v in repeated.values()),
        "repeated": repeated,
        "protocols_declared_twice": twice,
        "protocol_count": len(protocols),
    }


def getattr_probes(modules: Mapping[str, Module], files: Sequence[str]) -> dict[str, Any]:
    """``getattr(x, "name", ...)`` with a literal name and ``isinstance`` calls in ``files`` (undeclared
    reads of ports, type probes)."""
    out: dict[str, list[str]] = {"getattr": [], "isinstance": []}
    for rel in files:
        module = modules.get(rel)
        if module is None:
            continue
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if (
                    node.func.id == "getattr"
                    and len(node.args) >= 2
                    and isinstance(node.args[1], ast.Constant)
                ):
                    out["getattr"].append(
                        f"{_place(module, node)} {_dotted(node.args[0])}.{node.args[1].value!s}"
                    )
                elif node.func.id == "isinstance" and len(node.args) == 2:
                    out["isinstance"].append(f"{_place(module, node)} {ast.unparse(node.args[1])}")
    return {k: {"count": len(v), "places": v} for k, v in out.items()}


def long_functions(modules: Sequence[Module], min_lines: int) -> list[str]:
    """``file::qualname lines`` of every function at least ``min_lines`` long, longest first."""
    rows = [(span, f"{m.rel}::{name}") for m in modules for name, span in function_spans(m, min_lines)]
    return [f"{where} {span}" for span, where in sorted(rows, reverse=True)]


# --- imports ----------------------------------------------------------------------------------------


def upward_imports(root: Path = ROOT) -> dict[str, Any]:
    """Imports from ``runners``/``indexing`` into ``jobs``/``bot`` (any scope), from the import graph."""
    import sys

    sys.path.insert(0, str(root))
    from tests.import_graph import analyse, under

    analysis = analyse(root)
    rows: list[str] = []
    for imp in analysis.imports:
        if not imp.internal:
            continue
        if (under(imp.importer, "runners") or under(imp.importer, "indexing")) and (
            under(imp.target, "jobs") or under(imp.target, "bot")
        ):
            path = analysis.modules[imp.importer].relative_to(root).as_posix()
            row = f"{path}:{imp.line} {imp.importer} -> {imp.target} ({imp.scope})"
            if row not in rows:
                rows.append(row)
    targets = Counter(r.split(" -> ")[1].split(" ")[0] for r in rows)
    return {
        "count": len(rows),
        "statements": sorted(rows),
        "importers": len({r.split(" ")[1] for r in rows}),
        "by_target": dict(targets.most_common()),
    }


def typing_cycles(root: Path = ROOT) -> dict[str, Any]:
    """Strongly connected components of the graph counting ``TYPE_CHECKING`` imports too, and the
    typing-only edges inside them (the ones that close the knot without ever running)."""
    import sys

    sys.path.insert(0, str(root))
    from tests.import_graph import analyse

    analysis = analyse(root)
    components = analysis.typing_components
    member = {m: i for i, c in enumerate(components) for m in c}
    inside: list[str] = []
    for imp in analysis.imports:
        if imp.internal and imp.scope == "type-checking":
            i = member.get(imp.importer)
            if i is not None and member.get(imp.target) == i:
                path = analysis.modules[imp.importer].relative_to(root).as_posix()
                row = f"{path}:{imp.line} {imp.importer} -> {imp.target}"
                if row not in inside:
                    inside.append(row)
    return {
        "runtime_cycles": len(analysis.components),
        "cycles_counting_typing": len(components),
        "modules_in_cycles": sum(len(c) for c in components),
        "components": components,
        "typing_edges_inside": sorted(inside),
    }


# --- hand-made lists, anchored ---------------------------------------------------------------------


def _source_of(module: Module, name: str) -> str:
    if name in ("", "*"):
        return "\n".join(module.lines)
    node = _find_def(module.tree, name)
    if node is None:
        return ""
    return "\n".join(module.lines[node.lineno - 1 : node.end_lineno])


def anchored_lists(
    modules: Mapping[str, Module], lists: Mapping[str, Sequence[Mapping[str, str]]], root: Path = ROOT
) -> dict[str, Any]:
    """Each entry ``{"file", "name"?, "needle"?, ...}``: present when the file exists, the function
    (``name``, dotted) is in it and ``needle`` occurs in that function (or file)."""
    out: dict[str, Any] = {}
    for title, entries in lists.items():
        rows: list[dict[str, Any]] = []
        for entry in entries:
            rel = entry["file"]
            name = entry.get("name", "")
            needle = entry.get("needle", "")
            module = modules.get(rel)
            if module is None:
                ok = (root / rel).exists() and not needle
                if (root / rel).exists() and needle:
                    ok = needle in (root / rel).read_text(encoding="utf-8", errors="replace")
            else:
                source = _source_of(module, name)
                ok = bool(source) and (not needle or needle in source)
            rows.append({**entry, "present": ok})
        files = sorted({r["file"] for r in rows})
        out[title] = {
            "entries": len(rows),
            "files": len(files),
            "files_list": files,
            "missing": [
                f"{r['file']}::{r.get('name', '')} {r.get('needle', '')}".strip()
                for r in rows
                if not r["present"]
            ],
            "rows": rows,
        }
    return out


def importers_of(
    modules: Sequence[Module], names: Sequence[str], tests_root: Path | None = None
) -> dict[str, Any]:
    """Per dotted module or ``module:Name``: product files (and test files) that import it."""
    files = [*modules]
    test_modules: list[Module] = []
    if tests_root is not None:
        for path in sorted(tests_root.rglob("*.py")):
            rel = path.relative_to(tests_root.parent).as_posix()
            if "/fixtures/" in rel:
                continue
            try:
                with tokenize.open(path) as fh:
                    text = fh.read()
                test_modules.append(Module(rel, ast.parse(text), text.splitlines()))
            except (SyntaxError, UnicodeDecodeError):
                continue
    out: dict[str, Any] = {}
    for name in names:
        mod, _, attr = name.partition(":")
        hits: dict[str, list[str]] = {"product": [], "tests": []}
        for kind, group in (("product", files), ("tests", test_modules)):
            for module in group:
                for node in ast.walk(module.tree):
                    if isinstance(node, ast.ImportFrom) and node.module:
                        if attr:
                            if node.module == mod and any(a.name == attr for a in node.names):
                                hits[kind].append(_place(module, node))
                        elif node.module == mod or any(f"{node.module}.{a.name}" == mod for a in node.names):
                            hits[kind].append(_place(module, node))
                    elif isinstance(node, ast.Import) and not attr and any(a.name == mod for a in node.names):
                        hits[kind].append(_place(module, node))
        out[name] = {k: {"count": len(v), "places": sorted(v)} for k, v in hits.items()}
    return out
