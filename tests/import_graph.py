"""The import graph of ARCS and the violations of tests/import_contracts.toml.

Built from the source with :mod:`ast` (nothing is imported, so it is fast and side-effect free):
one :class:`Import` per import statement (also inside functions and under ``if TYPE_CHECKING:``),
resolved to the deepest module of ours it names, the same way grimp (import-linter's graph) does:
``from a.b import c`` is an edge to ``a.b.c`` when that is a module, else to ``a.b``.

Violations are plain strings, one per (category, importer, imported, scope) so that a baseline of
them stays stable while code moves within a file:

* ``[layer] RULES: a -> b`` / ``... (type-checking)``: a module-level import that breaks a contract
  (``layers``, ``pure-core``, ``protected``, ``leaves``...); RULES is ``+``-joined when it breaks several;
* ``[function-level] RULES: a -> b``: an import inside a function that breaks a contract, or closes
  a cycle (``cycle``: a and b are in one strongly connected component of the run-time graph);
* ``[cycle] a, b, c``: the members of a strongly connected component (size > 1) of the run-time
  graph (module-level and function-level imports; TYPE_CHECKING imports never run);
* ``[typing-cycle] a, b, c``: the members of a component of the graph that counts TYPE_CHECKING
  imports too, when it is not already a run-time cycle: code that cannot be read (or moved) one
  module at a time, although it imports fine.

Used by tests/test_import_contracts.py and scripts/import-graph.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import sys
import tempfile
import tomllib
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

ROOT = Path(__file__).resolve().parent.parent
CONTRACTS = Path(__file__).resolve().parent / "import_contracts.toml"
BASELINE = Path(__file__).resolve().parent / "fixtures" / "import_baseline.txt"

Scope = Literal["module", "function", "type-checking"]
CATEGORIES = ("layer", "function-level", "cycle", "typing-cycle")

_ENV_ATTRS = frozenset({"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"})
_PROCESS_ATTRS = frozenset(
    {"system", "popen", "fork", "forkpty", "kill", "killpg", "posix_spawn", "posix_spawnp"}
)


@dataclass(frozen=True)
class Import:
    """One import statement's target, as seen from ``importer``."""

    importer: str
    target: str  # a module of ours, or a dotted external name (``subprocess``, ``http.client``)
    internal: bool
    scope: Scope
    line: int


@dataclass(frozen=True)
class Contracts:
    """tests/import_contracts.toml, parsed."""

    packages: tuple[str, ...]
    data_dirs: tuple[str, ...]
    layers: tuple[tuple[str, ...], ...]
    protected: tuple[tuple[str, str, tuple[str, ...]], ...]  # (name, module prefix, allowed importers)
    forbidden: tuple[tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...], bool], ...]
    independence: tuple[tuple[str, tuple[str, ...]], ...]  # (name, packages that import none of the others)
    effects: Mapping[str, tuple[str, ...]]
    leaves: tuple[str, ...] = ()
    """Stdlib-only, effect-free modules every package may import (independence and forbidden
    contracts do not apply to imports of them; the ``leaves`` rule keeps them stdlib-only)."""

    @property
    def effect_roots(self) -> tuple[str, ...]:
        """Every effect root, whatever its kind."""
        return tuple(root for roots in self.effects.values() for root in roots)


def load_contracts(path: Path = CONTRACTS) -> Contracts:
    """Parse the contracts file."""
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    return Contracts(
        packages=tuple(raw["packages"]),
        data_dirs=tuple(raw.get("data_dirs", ())),
        layers=tuple(tuple(layer) for layer in raw["layers"]),
        protected=tuple(
            (p["name"], p["module"], tuple(p.get("allowed_importers", ()))) for p in raw.get("protected", ())
        ),
        forbidden=tuple(
            (
                f["name"],
                tuple(f["source"]),
                tuple(f.get("forbidden", ())),
                tuple(f.get("allowed", ())),
                bool(f.get("forbid_effectful", False)),
            )
            for f in raw.get("forbidden", ())
        ),
        independence=tuple((i["name"], tuple(i["modules"])) for i in raw.get("independence", ())),
        effects={kind: tuple(roots) for kind, roots in raw.get("effects", {}).items()},
        leaves=tuple(raw.get("leaves", ())),
    )


def under(module: str, prefix: str) -> bool:
    """``module`` is ``prefix`` or a submodule of it."""
    return module == prefix or module.startswith(prefix + ".")


def _longest_prefix(module: str, prefixes: Iterable[str]) -> str | None:
    best: str | None = None
    for prefix in prefixes:
        if under(module, prefix) and (best is None or len(prefix) > len(best)):
            best = prefix
    return best


# --- building the graph ---------------------------------------------------------------------------


def discover(root: Path, contracts: Contracts) -> dict[str, Path]:
    """Module name -> file, for every module of the configured packages."""
    data = [root / d for d in contracts.data_dirs]
    modules: dict[str, Path] = {}
    for package in contracts.packages:
        for path in sorted((root / package).rglob("*.py")):
            if any(d in path.parents for d in data) and path.parent not in data:
                continue  # inside a sample repository
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


class _Collector(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, known: frozenset[str]) -> None:
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.known = known
        self.tops = frozenset(m.split(".")[0] for m in known)
        self.imports: list[Import] = []
        self._function = 0
        self._type_checking = 0

    @property
    def scope(self) -> Scope:
        if self._function:
            return "function"
        return "type-checking" if self._type_checking else "module"

    def _add(self, target: str, line: int) -> None:
        internal = target.split(".")[0] in self.tops
        if internal:
            resolved = self._resolve_internal(target)
            if resolved is None:
                return
            target = resolved
        self.imports.append(Import(self.module, target, internal, self.scope, line))

    def _resolve_internal(self, dotted: str) -> str | None:
        parts = dotted.split(".")
        while parts:
            candidate = ".".join(parts)
            if candidate in self.known:
                return candidate
            parts.pop()
        return None

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._function += 1
        self.generic_visit(node)
        self._function -= 1

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._function += 1
        self.generic_visit(node)
        self._function -= 1

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._function += 1
        self.generic_visit(node)
        self._function -= 1

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node.test):
            self.generic_visit(node)
            return
        self.visit(node.test)
        self._type_checking += 1
        for stmt in node.body:
            self.visit(stmt)
        self._type_checking -= 1
        for stmt in node.orelse:
            self.visit(stmt)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base_parts = self.package.split(".")
            if node.level > 1:
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
            base = ".".join([*base_parts, *([node.module] if node.module else [])])
        else:
            base = node.module or ""
        if base == "__future__":
            return
        if base == "os":
            for alias in node.names:
                if alias.name in _ENV_ATTRS:
                    self._add("os.environ", node.lineno)
                elif alias.name in _PROCESS_ATTRS or alias.name.startswith(("exec", "spawn")):
                    self._add("os.process", node.lineno)
            return
        for alias in node.names:
            self._add(f"{base}.{alias.name}" if alias.name != "*" else base, node.lineno)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.value, ast.Name) and node.value.id == "os":
            if node.attr in _ENV_ATTRS:
                self._add("os.environ", node.lineno)
            elif node.attr in _PROCESS_ATTRS or node.attr.startswith(("exec", "spawn")):
                self._add("os.process", node.lineno)
        self.generic_visit(node)


def collect(modules: Mapping[str, Path], cache: Path | None = None) -> list[Import]:
    """Every import of every module (duplicates within a module and scope are kept).

    Parsing is most of the cost (~1 s of CPU for the whole tree), so each file's imports are cached
    in ``cache`` by the file's hash; the cache is keyed by this file's source and the module list
    (resolution depends on which modules exist), so a change to either starts it afresh.
    """
    known = frozenset(modules)
    key = hashlib.sha256(Path(__file__).read_bytes() + "\n".join(sorted(known)).encode()).hexdigest()[:20]
    store = (cache or Path(tempfile.gettempdir()) / "arcs-import-graph") / f"{key}.json"
    try:
        cached: dict[str, list[list[Any]]] = json.loads(store.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        cached = {}
    fresh: dict[str, list[list[Any]]] = {}
    found: list[Import] = []
    for name, path in modules.items():
        source = path.read_bytes()
        digest = f"{name}:{hashlib.sha256(source).hexdigest()}"
        rows = cached.get(digest)
        if rows is None:
            collector = _Collector(name, path.name == "__init__.py", known)
            collector.visit(ast.parse(source, filename=str(path)))
            rows = [[i.target, i.internal, i.scope, i.line] for i in collector.imports]
        fresh[digest] = rows
        for target, internal, scope, line in rows:
            if not (internal and target == name):
                found.append(Import(name, str(target), bool(internal), cast(Scope, scope), int(line)))
    if fresh != cached:
        try:
            store.parent.mkdir(parents=True, exist_ok=True)
            partial = store.with_suffix(f".{os.getpid()}.tmp")
            partial.write_text(json.dumps(fresh), encoding="utf-8")
            partial.replace(store)
        except OSError:
            pass  # a read-only temp dir only costs the next run a parse
    return found


# --- graph algorithms -----------------------------------------------------------------------------


def strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative), each sorted; singletons included."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    nodes = sorted(set(graph) | {t for targets in graph.values() for t in targets})
    succ = {n: sorted(set(graph.get(n, ()))) for n in nodes}
    for start in nodes:
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(succ[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(succ[child])))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def shortest_path(graph: Mapping[str, Iterable[str]], start: str, goal: str, within: set[str]) -> list[str]:
    """A shortest path start -> goal through ``within`` (BFS); [] when there is none."""
    previous: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            path = [node]
            while (before := previous[path[-1]]) is not None:
                path.append(before)
            return path[::-1]
        for child in sorted(graph.get(node, ())):
            if child in within and child not in previous:
                previous[child] = node
                queue.append(child)
    return []


# --- contracts ------------------------------------------------------------------------------------


@dataclass
class Analysis:
    """The graph, the effectful modules and the violations, with where each one comes from."""

    modules: dict[str, Path]
    imports: list[Import]
    runtime: dict[str, set[str]]  # module-level + function-level edges between our modules
    import_time: dict[str, set[str]]  # module-level edges only
    effectful: dict[str, str]  # our module -> why (the effect root or the module it gets it from)
    components: list[list[str]]  # run-time SCCs of size > 1, biggest first
    import_time_components: list[list[str]]
    violations: dict[str, list[Import]] = field(default_factory=dict)  # entry -> occurrences
    typing_components: list[list[str]] = field(default_factory=list)
    """SCCs of size > 1 when ``TYPE_CHECKING`` imports count as edges too (a ``[typing-cycle]``
    violation unless the component is a run-time cycle already)."""

    def where(self, entry: str) -> str:
        """``path:line`` of each occurrence of a baseline entry (for failure messages)."""
        spots = [
            f"{self.modules[i.importer].relative_to(ROOT)}:{i.line}" for i in self.violations.get(entry, [])
        ]
        return ", ".join(sorted(set(spots))) if spots else "-"


def _layer_index(module: str, contracts: Contracts) -> int | None:
    owner = _longest_prefix(module, [p for layer in contracts.layers for p in layer])
    if owner is None:
        return None
    return next(i for i, layer in enumerate(contracts.layers) if owner in layer)


def _effect_root(target: str, roots: Sequence[str]) -> str | None:
    return _longest_prefix(target, roots)


def _effectful(
    imports: Sequence[Import], runtime: Mapping[str, set[str]], roots: Sequence[str]
) -> dict[str, str]:
    why: dict[str, str] = {}
    for imp in imports:
        if imp.scope != "type-checking" and not imp.internal:
            root = _effect_root(imp.target, roots)
            if root is not None and imp.importer not in why:
                why[imp.importer] = root
    # Propagate backwards along run-time edges: importing an effectful module makes one effectful.
    importers: dict[str, set[str]] = defaultdict(set)
    for source, targets in runtime.items():
        for target in targets:
            importers[target].add(source)
    queue = deque(sorted(why))
    while queue:
        module = queue.popleft()
        for source in sorted(importers[module]):
            if source not in why:
                why[source] = module
                queue.append(source)
    return why


def _leaf_rule(imp: Import, contracts: Contracts) -> bool:
    """A leaf importing anything but the standard library (or another leaf), or an effect root."""
    if imp.internal:
        return not any(under(imp.target, leaf) for leaf in contracts.leaves)
    if _effect_root(imp.target, contracts.effect_roots) is not None:
        return True
    return imp.target.split(".")[0] not in sys.stdlib_module_names


def _rules_broken(imp: Import, contracts: Contracts, effectful: Mapping[str, str]) -> list[str]:
    rules: list[str] = []
    if any(under(imp.importer, leaf) for leaf in contracts.leaves) and _leaf_rule(imp, contracts):
        rules.append("leaves")
    to_leaf = imp.internal and any(under(imp.target, leaf) for leaf in contracts.leaves)
    if imp.internal:
        source_layer = _layer_index(imp.importer, contracts)
        target_layer = _layer_index(imp.target, contracts)
        if source_layer is not None and target_layer is not None and target_layer < source_layer:
            rules.append("layers")
        for name, module, allowed in contracts.protected:
            if under(imp.target, module) and not any(under(imp.importer, a) for a in allowed):
                rules.append(name)
        for name, members in contracts.independence if not to_leaf else ():
            source = _longest_prefix(imp.importer, members)
            target = _longest_prefix(imp.target, members)
            if source is not None and target is not None and source != target:
                rules.append(name)
    for name, sources, forbidden, allowed, forbid_effectful in contracts.forbidden:
        if not any(under(imp.importer, s) for s in sources):
            continue
        if imp.internal:
            if to_leaf or any(under(imp.target, a) for a in allowed):
                continue
            if any(under(imp.target, f) for f in forbidden) or (forbid_effectful and imp.target in effectful):
                rules.append(name)
        else:
            effect = forbid_effectful and _effect_root(imp.target, contracts.effect_roots) is not None
            if effect or any(under(imp.target, f) for f in forbidden):
                rules.append(name)
    return rules


def analyse(root: Path = ROOT, contracts: Contracts | None = None, cache: Path | None = None) -> Analysis:
    """Build the graph of the code under ``root`` and find every violation of the contracts."""
    contracts = contracts or load_contracts()
    modules = discover(root, contracts)
    imports = collect(modules, cache)
    runtime: dict[str, set[str]] = {m: set() for m in modules}
    import_time: dict[str, set[str]] = {m: set() for m in modules}
    for imp in imports:
        if imp.internal and imp.scope != "type-checking":
            runtime[imp.importer].add(imp.target)
            if imp.scope == "module":
                import_time[imp.importer].add(imp.target)
    components = sorted((c for c in strongly_connected(runtime) if len(c) > 1), key=lambda c: (-len(c), c))
    import_time_components = sorted(
        (c for c in strongly_connected(import_time) if len(c) > 1), key=lambda c: (-len(c), c)
    )
    component_of = {m: i for i, c in enumerate(components) for m in c}
    effectful = _effectful(imports, runtime, contracts.effect_roots)
    analysis = Analysis(modules, imports, runtime, import_time, effectful, components, import_time_components)
    typed: dict[str, set[str]] = {m: set(t) for m, t in runtime.items()}
    for imp in imports:
        if imp.internal and imp.scope == "type-checking":
            typed[imp.importer].add(imp.target)
    analysis.typing_components = sorted(
        (c for c in strongly_connected(typed) if len(c) > 1), key=lambda c: (-len(c), c)
    )

    for imp in imports:
        rules = _rules_broken(imp, contracts, effectful)
        if imp.scope == "function":
            same = imp.internal and component_of.get(imp.importer, -1) == component_of.get(imp.target, -2)
            if same:
                rules.append("cycle")
            if rules:
                entry = f"[function-level] {'+'.join(rules)}: {imp.importer} -> {imp.target}"
                analysis.violations.setdefault(entry, []).append(imp)
        elif rules:
            suffix = " (type-checking)" if imp.scope == "type-checking" else ""
            entry = f"[layer] {'+'.join(rules)}: {imp.importer} -> {imp.target}{suffix}"
            analysis.violations.setdefault(entry, []).append(imp)
    for component in components:
        analysis.violations[f"[cycle] {', '.join(component)}"] = []
    for component in analysis.typing_components:
        if component not in components:
            analysis.violations[f"[typing-cycle] {', '.join(component)}"] = []
    return analysis


# --- baseline -------------------------------------------------------------------------------------


def read_baseline(path: Path = BASELINE) -> set[str]:
    """The committed entries (comments and blank lines ignored)."""
    if not path.exists():
        return set()
    lines = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return {line for line in lines if line and not line.startswith("#")}


def category(entry: str) -> str:
    """``layer``, ``function-level``, ``cycle`` or ``typing-cycle``."""
    return entry[1 : entry.index("]")]


def render_baseline(analysis: Analysis) -> str:
    """The baseline file's text for the current code: grouped by category, sorted."""
    out = [
        "# Known import-contract violations (tests/import_contracts.toml), a ratchet for issue #12.",
        "# Generated by scripts/import-graph --write; tests/test_import_contracts.py fails on any",
        "# violation not listed here and on any entry listed here that no longer occurs.",
    ]
    for cat in CATEGORIES:
        entries = sorted(e for e in analysis.violations if category(e) == cat)
        out += ["", f"# {cat}: {len(entries)}", *entries]
    return "\n".join(out) + "\n"
