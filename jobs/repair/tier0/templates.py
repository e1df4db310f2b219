"""Tier 0: classical program-repair templates, no LLM, zero cost (the default without an API key).

Two families of candidates, all validated later by execution:

- *Message-driven* templates read the error text: a name, import, module or attribute that no
  longer exists is resolved to the closest existing symbol through the :class:`SymbolTable`
  (the common CI break after a rename or a move); a changed call signature is updated at the
  call sites named by the failure; a ``None``/empty value gets a guard before the failing line.
- *Mutations* (:mod:`mutations`) of the most suspicious lines (:mod:`localize`): operator swaps,
  off-by-one, negated conditions, swapped arguments, wrong variable, wrong constant.

Candidates are ordered by the suspiciousness of the edited line, then by a template prior (name and
import fixes first for NameError/ImportError/AttributeError; operator swaps for assertion failures),
then by (path, line, column, template); mutations of error/log messages come after everything else,
and those inside the very raise a failure comes from are not proposed at all (a message cannot
change whether the code raises); deduplicated by :attr:`~jobs.repair.model.Proposal.key` and by
resulting content; never repeating ``request.tried``; at most ``min(n, max_candidates_per_round,
remaining.executions)`` per round. The output is a pure function of the request.
"""
# Long (~2,100 lines): all templates share one candidate order, dedup and budget (split: follow-up).

from __future__ import annotations

import bisect
import hashlib
import itertools
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import structlog
import tree_sitter as ts

from indexing.languages import is_test_path
from jobs.repair.budget import Budget
from jobs.repair.model import Edit, Failure, Proposal, Usage
from jobs.repair.ports import ProposalRequest, SourceView
from jobs.repair.tier0.localize import (
    FRAME_DECAY,
    Suspect,
    failure_frames,
    localize,
    raise_sites,
)
from jobs.repair.tier0.mutations import (
    CODE,
    MESSAGE,
    TEXT,
    UNUSED,
    Mutation,
    mutate,
    operator_order,
    pattern_reason,
)
from jobs.repair.tier0.symbols import (
    CALL_TYPES,
    FileSymbols,
    FunctionInfo,
    ImportInfo,
    ParsedFile,
    SymbolTable,
    callee_name,
    closest,
    function_types,
    is_js,
    parse_file,
    similarity,
    walk,
)

log = structlog.get_logger(__name__)

PROPOSER = "tier0"
MAX_MUTATIONS_PER_LINE = 15
MAX_MUTATED_LINES = 40
MAX_SITES = 20

# Template priors: lower first. Message-driven fixes are near-certain; mutations come after,
# in an order that depends on the error (operators.json "order").
PRIOR_HINTED = 0
PRIOR_EXACT = 1
PRIOR_CLOSEST = 2
PRIOR_GUARD = 10
PRIOR_MUTATION = 20
PRIOR_TEXT = 10
"""Added to a mutation inside string interpolation/formatting: after the same line's code mutations."""
BAND_MESSAGE = 1
"""Sort band of message mutations: after every other candidate."""
_CONTEXTS = (CODE, TEXT, MESSAGE)

# ---------------------------------------------------------------------------------------------
# Edits


def apply_edits(texts: Callable[[str], str | None], edits: Sequence[Edit]) -> dict[str, str] | None:
    """Apply ``replace`` edits in order (each ``old`` must occur exactly once at its turn);
    the changed files' new texts, or None when an edit does not apply."""
    current: dict[str, str] = {}
    for edit in edits:
        if edit.kind != "replace":
            return None
        text = current.get(edit.path)
        if text is None:
            text = texts(edit.path)
        if text is None or not edit.old:
            return None
        at = text.find(edit.old)
        if at < 0 or text.find(edit.old, at + 1) >= 0:
            return None
        current[edit.path] = text[:at] + edit.new + text[at + len(edit.old) :]
    return current


Splice = tuple[int, int, str]
"""(start byte, end byte, replacement) within one file."""


def _unique(text: str, old: str) -> bool:
    at = text.find(old)
    return bool(old.strip()) and at >= 0 and text.find(old, at + 1) < 0


def build_edits(path: str, text: str, splices: Sequence[Splice]) -> tuple[Edit, ...] | None:
    """Turn byte splices of one file into whole-line ``replace`` edits whose ``old`` is unique
    (widened with neighbouring lines until it is), applicable in order. None if splices overlap."""
    data = text.encode("utf-8", "surrogatepass")
    ordered = sorted(splices)
    for (_, e1, _), (s2, _, _) in itertools.pairwise(ordered):
        if s2 < e1:
            return None
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == 10]

    def line_of(offset: int) -> int:
        return bisect.bisect_right(starts, offset) - 1

    def seg_end(b: int) -> int:
        end = starts[b + 1] - 1 if b + 1 < len(starts) else len(data)
        # CRLF files: keep the "\r" out of ``old`` so it matches after newline normalization.
        return end - 1 if end > starts[b] and data[end - 1 : end] == b"\r" else end

    def render(a: int, b: int, group: Sequence[Splice]) -> tuple[str, str]:
        lo, hi = starts[a], seg_end(b)
        old = data[lo:hi]
        new = old
        for s, e, r in sorted(group, reverse=True):
            new = new[: s - lo] + r.encode("utf-8", "surrogatepass") + new[e - lo :]
        return old.decode("utf-8", "surrogatepass"), new.decode("utf-8", "surrogatepass")

    clusters: list[tuple[int, int, list[Splice]]] = []
    for s, e, r in ordered:
        a = line_of(s)
        b = max(a, line_of(e - 1)) if e > s else a
        if clusters and a <= clusters[-1][1] + 1:
            ca, cb, cg = clusters.pop()
            clusters.append((ca, max(cb, b), [*cg, (s, e, r)]))
        else:
            clusters.append((a, b, [(s, e, r)]))

    def widen(a: int, b: int, group: Sequence[Splice]) -> tuple[int, int]:
        up = True
        while True:
            old, _ = render(a, b, group)
            if _unique(text, old) or (a == 0 and b == len(starts) - 1):
                return a, b
            if (up and a > 0) or b == len(starts) - 1:
                a -= 1
            else:
                b += 1
            up = not up

    spans: list[tuple[int, int, list[Splice]]] = []
    for a0, b0, group in clusters:
        a, b = widen(a0, b0, group)
        while spans and a <= spans[-1][1] + 1:
            pa, pb, pg = spans.pop()
            group = pg + group
            a, b = widen(min(pa, a), max(pb, b), group)
        spans.append((a, b, group))
    rendered = [render(a, b, g) for a, b, g in spans]
    edits = tuple(Edit(path=path, kind="replace", old=old, new=new) for old, new in rendered if old != new)
    changed = data
    for s, e, r in sorted(ordered, reverse=True):
        changed = changed[:s] + r.encode("utf-8", "surrogatepass") + changed[e:]
    expected = changed.decode("utf-8", "surrogatepass")
    result = apply_edits(lambda p: text if p == path else None, edits) if edits else None
    if result is None or result.get(path) != expected:
        a, b = widen(spans[0][0], spans[-1][1], ordered)
        old, new = render(a, b, ordered)
        edits = (Edit(path=path, kind="replace", old=old, new=new),) if old != new else ()
    return edits or None


# ---------------------------------------------------------------------------------------------
# Workspace: the source view with parse caching


class _Workspace:
    def __init__(
        self, source: SourceView, table: SymbolTable, cache: dict[tuple[str, int], ParsedFile]
    ) -> None:
        self.source = source
        self.table = table
        self._texts: dict[str, str | None] = {}
        self._cache = cache

    def text(self, path: str) -> str | None:
        if path not in self._texts:
            self._texts[path] = self.source.read(path)
        return self._texts[path]

    def parsed(self, path: str) -> ParsedFile | None:
        text = self.text(path)
        if text is None:
            return None
        key = (path, hash(text))
        pf = self._cache.get(key)
        if pf is None:
            pf = parse_file(path, text)
            if pf is None:
                return None
            if len(self._cache) > 256:
                self._cache.clear()
            self._cache[key] = pf
        return pf

    def function_at(self, path: str, line: int) -> FunctionInfo | None:
        return self.table.function_at(path, line)


# ---------------------------------------------------------------------------------------------
# Candidates


@dataclass(slots=True)
class _Candidate:
    splices: dict[str, list[Splice]]
    variant: str
    explanation: str
    weight: float
    prior: float
    path: str
    line: int
    column: int = 0
    seq: int = 0
    band: int = 0

    def sort_key(self) -> tuple[int, float, float, str, int, int, str, int]:
        return (
            self.band,
            -round(self.weight, 4),
            self.prior,
            self.path,
            self.line,
            self.column,
            self.variant,
            self.seq,
        )


@dataclass(slots=True)
class _Context:
    request: ProposalRequest
    ws: _Workspace
    table: SymbolTable
    weights: dict[tuple[str, int], float]
    include_tests: bool
    out: list[_Candidate] = field(default_factory=list)

    def weight(self, path: str, line: int, floor: float = 0.0) -> float:
        return max(self.weights.get((path, line), 0.0), floor)

    def add(
        self,
        splices: dict[str, list[Splice]],
        variant: str,
        explanation: str,
        *,
        weight: float,
        prior: float,
        path: str,
        line: int,
        column: int = 0,
        band: int = 0,
    ) -> None:
        if not splices or not any(splices.values()):
            return
        self.out.append(
            _Candidate(
                {p: sorted(set(s)) for p, s in splices.items()},
                variant,
                explanation,
                weight,
                prior,
                path,
                line,
                column,
                len(self.out),
                band,
            )
        )


def _fn_label(ws: _Workspace, path: str, line: int) -> str:
    fn = ws.function_at(path, line)
    return f" (`{fn.qualname}`)" if fn is not None and fn.qualname else ""


def _failure_text(f: Failure) -> str:
    message = " ".join(f.message.split())
    if len(message) > 160:
        message = message[:159] + "…"
    return f"{f.type}: {message}" if f.type and message else (f.type or message)


def _sites(failure: Failure, table: SymbolTable) -> list[tuple[str, int, float]]:
    """Error locations of a failure, strongest first: its own path/line, then frames innermost first."""
    out: dict[tuple[str, int], float] = {}
    if failure.path and failure.line and failure.path in table.files:
        out[(failure.path, failure.line)] = 1.0
    for k, frame in enumerate(reversed(failure_frames(failure, table))):
        key = (frame.path, frame.line)
        out[key] = max(out.get(key, 0.0), FRAME_DECAY**k)
    return [(p, ln, w) for (p, ln), w in out.items()]


def _nodes_in_lines(root: ts.Node, first: int, last: int) -> Iterator[ts.Node]:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.start_point.row + 1 > last or node.end_point.row + 1 < first:
            continue
        yield node
        stack.extend(reversed(node.named_children))


def _field_of(node: ts.Node) -> str | None:
    parent = node.parent
    if parent is None:
        return None
    for i, child in enumerate(parent.children):
        if child == node:
            return parent.field_name_for_child(i)
    return None


_NAME_TYPES = frozenset({"identifier", "type_identifier"})


def _name_occurrences(pf: ParsedFile, name: str, first: int, last: int) -> list[ts.Node]:
    """Identifier nodes spelling ``name`` in the line range, excluding member names and keywords."""
    out = []
    for node in _nodes_in_lines(pf.root, first, last):
        if node.type not in _NAME_TYPES or pf.node_text(node) != name:
            continue
        fld = _field_of(node)
        parent = node.parent
        if fld in ("attribute", "property", "field"):
            continue
        if parent is not None and parent.type == "keyword_argument" and fld == "name":
            continue
        if parent is not None and parent.type in ("import_specifier",) and fld == "alias":
            continue
        out.append(node)
    return out


def _member_occurrences(pf: ParsedFile, attr: str, first: int, last: int) -> list[ts.Node]:
    """Member-name nodes (``x.attr``) spelling ``attr`` in the line range."""
    out = []
    for node in _nodes_in_lines(pf.root, first, last):
        if node.type in (
            "attribute",
            "member_expression",
            "selector_expression",
            "field_expression",
            "field_access",
        ):
            member = (
                node.child_by_field_name("attribute")
                or node.child_by_field_name("property")
                or node.child_by_field_name("field")
            )
            if member is not None and pf.node_text(member) == attr:
                out.append(member)
        elif node.type == "method_invocation":
            name = node.child_by_field_name("name")
            if (
                name is not None
                and pf.node_text(name) == attr
                and node.child_by_field_name("object") is not None
            ):
                out.append(name)
    return out


def _scope_range(ws: _Workspace, path: str, line: int, pf: ParsedFile) -> tuple[int, int]:
    fn = ws.table.named_function_at(path, line)
    return (fn.start_line, fn.end_line) if fn is not None else (1, pf.line_count)


# ---------------------------------------------------------------------------------------------
# Imports


def _quote_style(pf: ParsedFile, fs: FileSymbols | None) -> tuple[str, str]:
    quote, semi = "'", ";"
    if fs is not None:
        for imp in fs.imports:
            raw = pf.data[imp.start_byte : imp.end_byte].decode("utf-8", "surrogatepass")
            if '"' in raw and "'" not in raw:
                quote = '"'
            semi = ";" if raw.rstrip().endswith(";") else ""
            break
    return quote, semi


_IMPORT_STATEMENTS = frozenset(
    {"import_statement", "import_from_statement", "future_import_statement", "import_declaration"}
)


def _insertion_point(pf: ParsedFile) -> int:
    """Byte offset at the start of the line after the file's leading imports, or after its header
    (comments, shebang, docstring, ``"use strict"``, Go package clause); 0 when there is neither."""
    anchor: ts.Node | None = None
    seen_import = False
    for node in pf.root.named_children:
        is_import = node.type in _IMPORT_STATEMENTS or (
            node.type in ("lexical_declaration", "variable_declaration") and "require(" in pf.node_text(node)
        )
        header = node.type in ("comment", "package_clause") or (
            node.type == "expression_statement"
            and node.named_children
            and node.named_children[0].type == "string"
            and len(node.named_children) == 1
        )
        if is_import:
            anchor, seen_import = node, True
        elif header and not seen_import:
            anchor = node
        elif node.type != "comment":
            break
    if anchor is None:
        return 0
    _, end = pf.line_span(anchor.end_point.row + 1)
    return min(end + 1, len(pf.data))


def _add_import_splice(ws: _Workspace, pf: ParsedFile, name: str, target: FileSymbols) -> Splice | None:
    """A splice adding ``name`` imported from ``target`` to ``pf``."""
    at = _insertion_point(pf)
    prefix = "\n" if at == len(pf.data) and pf.data and not pf.data.endswith(b"\n") else ""
    if pf.language == "python":
        line = f"from {target.module} import {name}\n"
    elif is_js(pf.language):
        fs = ws.table.file(pf.path)
        quote, semi = _quote_style(pf, fs)
        like = next((imp.module for imp in (fs.imports if fs else ()) if imp.module.startswith(".")), "")
        spec = ws.table.relative_specifier(pf.path, target.path, like=like)
        uses_require = (
            fs is not None
            and any(i.kind == "require" for i in fs.imports)
            and not any(i.kind == "esm" for i in fs.imports)
        )
        if uses_require:
            line = f"const {{ {name} }} = require({quote}{spec}{quote}){semi}\n"
        else:
            line = f"import {{ {name} }} from {quote}{spec}{quote}{semi}\n"
    else:
        return None
    return (at, at, prefix + line)


def _import_node(pf: ParsedFile, imp: ImportInfo) -> ts.Node | None:
    node = pf.root.descendant_for_byte_range(imp.start_byte, imp.end_byte)
    while node is not None and (node.start_byte != imp.start_byte or node.end_byte != imp.end_byte):
        node = node.parent
    return node


def _module_spec_node(pf: ParsedFile, node: ts.Node) -> ts.Node | None:
    """The node spelling the module of an import statement (without quotes for strings)."""
    if node.type == "import_from_statement":
        return node.child_by_field_name("module_name")
    if node.type == "import_statement" and is_js(pf.language):
        source = node.child_by_field_name("source")
    else:
        source = None
        for sub in walk(node):
            if sub.type == "call_expression":
                args = sub.child_by_field_name("arguments")
                if args is not None and args.named_children:
                    source = args.named_children[0]
                    break
    if source is None:
        return None
    frag = next((c for c in source.named_children if c.type == "string_fragment"), None)
    return frag


def _imported_name_nodes(pf: ParsedFile, node: ts.Node, name: str) -> list[tuple[ts.Node, ts.Node, str]]:
    """(whole specifier node, name node, alias) for ``name`` in an import statement."""
    out: list[tuple[ts.Node, ts.Node, str]] = []
    for sub in walk(node):
        if sub.type == "aliased_import" or sub.type == "import_specifier":
            nm = sub.child_by_field_name("name")
            alias = sub.child_by_field_name("alias")
            if nm is not None and pf.node_text(nm) == name:
                out.append((sub, nm, pf.node_text(alias) if alias is not None else ""))
        elif (
            sub.type == "dotted_name"
            and sub.parent is not None
            and sub.parent.type == "import_from_statement"
        ):
            if _field_of(sub) == "name" and pf.node_text(sub) == name:
                out.append((sub, sub, ""))
        elif sub.type in ("shorthand_property_identifier_pattern",) and pf.node_text(sub) == name:
            out.append((sub, sub, ""))
        elif sub.type == "pair_pattern":
            key = sub.child_by_field_name("key")
            value = sub.child_by_field_name("value")
            if key is not None and pf.node_text(key) == name:
                out.append((sub, key, pf.node_text(value) if value is not None else ""))
    return out


def _specifier_list_removal(pf: ParsedFile, spec: ts.Node) -> Splice:
    """Remove one name from an import list, with its separating comma."""
    nxt = spec.next_sibling
    prev = spec.prev_sibling
    if nxt is not None and pf.node_text(nxt) == ",":
        end = nxt.end_byte
        after = nxt.next_sibling
        if after is not None:
            end = after.start_byte
        return (spec.start_byte, end, "")
    if prev is not None and pf.node_text(prev) == ",":
        return (prev.start_byte, spec.end_byte, "")
    return (spec.start_byte, spec.end_byte, "")


def _import_line_for(
    pf: ParsedFile, ws: _Workspace, importer: str, name: str, alias: str, target: FileSymbols, like: str
) -> str:
    if pf.language == "python":
        return f"from {target.module} import {name}{f' as {alias}' if alias else ''}"
    fs = ws.table.file(importer)
    quote, semi = _quote_style(pf, fs)
    spec = ws.table.relative_specifier(importer, target.path, like=like)
    return f"import {{ {name}{f' as {alias}' if alias else ''} }} from {quote}{spec}{quote}{semi}"


def _retarget_import(
    ws: _Workspace, pf: ParsedFile, imp: ImportInfo, name: str, target: FileSymbols, *, new_name: str = ""
) -> list[Splice]:
    """Splices that make ``imp`` import ``name`` from ``target`` (optionally as ``new_name``)."""
    node = _import_node(pf, imp)
    if node is None:
        return []
    entries = _imported_name_nodes(pf, node, name)
    if not entries:
        return []
    spec_node, name_node, alias = entries[0]
    if imp.kind == "require":
        return []
    only = len([n for n, _ in imp.names if n != "*"]) == 1 and not any(
        n in ("*", "default") for n, _ in imp.names
    )
    splices: list[Splice] = []
    if only:
        module_node = _module_spec_node(pf, node)
        if module_node is None:
            return []
        if pf.language == "python":
            new_module = target.module
        else:
            new_module = ws.table.relative_specifier(pf.path, target.path, like=imp.module)
        splices.append((module_node.start_byte, module_node.end_byte, new_module))
        if new_name:
            splices.append((name_node.start_byte, name_node.end_byte, new_name))
        return splices
    # Several names: drop this one from the statement and add a separate import after it.
    splices.append(_specifier_list_removal(pf, spec_node))
    line_end = pf.line_span(node.end_point.row + 1)[1]
    indent = pf.indent(node.start_point.row + 1)
    text = _import_line_for(pf, ws, pf.path, new_name or name, alias, target, imp.module)
    splices.append((line_end, line_end, "\n" + indent + text))
    return splices


def _rename_in_file(
    pf: ParsedFile, old: str, new: str, *, skip: Iterable[tuple[int, int]] = ()
) -> list[Splice]:
    """Rename every identifier ``old`` of the file to ``new`` (imports included)."""
    skipped = set(skip)
    out: list[Splice] = []
    for node in _name_occurrences(pf, old, 1, pf.line_count):
        if (node.start_byte, node.end_byte) in skipped:
            continue
        out.append((node.start_byte, node.end_byte, new))
    return out


# ---------------------------------------------------------------------------------------------
# Diagnoses


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """What an error message says, in template terms."""

    kind: str
    name: str = ""
    module: str = ""
    type_name: str = ""
    hint: str = ""
    names: tuple[str, ...] = ()
    want: int = -1
    given: int = -1


_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("import_name", re.compile(r"cannot import name '(?P<name>\w+)' from '(?P<module>[\w.]+)'")),
    ("missing_module", re.compile(r"No module named '(?P<module>[\w.]+)'")),
    (
        "undefined_name",
        re.compile(r"name '(?P<name>\w+)' is not defined(?:\. Did you mean: '(?P<hint>\w+)'\?)?"),
    ),
    (
        "module_attribute",
        re.compile(
            r"module '(?P<module>[\w.]+)' has no attribute '(?P<name>\w+)'(?:\. Did you mean: '(?P<hint>\w+)'\?)?"
        ),
    ),
    ("none_attribute", re.compile(r"'NoneType' object has no attribute '(?P<name>\w+)'")),
    (
        "attribute",
        re.compile(
            r"(?:type object )?'(?P<type>[\w.]+)'(?: object)? has no attribute '(?P<name>\w+)'(?:\. Did you mean: '(?P<hint>\w+)'\?)?"
        ),
    ),
    (
        "unexpected_keyword",
        re.compile(r"(?P<name>[\w.<>]+)\(\) got an unexpected keyword argument '(?P<hint>\w+)'"),
    ),
    (
        "missing_arguments",
        re.compile(
            r"(?P<name>[\w.<>]+)\(\) missing (?P<given>\d+) required (?:positional|keyword-only) arguments?: (?P<names>.+)"
        ),
    ),
    (
        "too_many_arguments",
        re.compile(
            r"(?P<name>[\w.<>]+)\(\) takes (?:from \d+ to )?(?P<want>\d+) positional arguments? but (?P<given>\d+) (?:was|were) given"
        ),
    ),
    (
        "none_value",
        re.compile(
            r"'NoneType' object is not (?:subscriptable|iterable)|type 'NoneType' has no len|operand type\(s\) for .*'NoneType'"
        ),
    ),
    (
        "none_attribute",
        re.compile(
            r"Cannot read propert(?:y|ies) (?:of (?:undefined|null) \(reading '(?P<name>[\w$]+)'\)|'(?P<name2>[\w$]+)' of (?:undefined|null))"
        ),
    ),
    (
        "import_name",
        re.compile(
            r"Module '?\"?(?P<module>[^'\"]+)\"?'? has no exported member '(?P<name>[\w$]+)'(?:\. Did you mean '(?P<hint>[\w$]+)'\?)?"
        ),
    ),
    (
        "import_name",
        re.compile(
            r"'?\"(?P<module>[^\"]+)\"'? has no exported member named '(?P<name>[\w$]+)'\. Did you mean '(?P<hint>[\w$]+)'\?"
        ),
    ),
    (
        "import_name",
        re.compile(
            r"The requested module '(?P<module>[^']+)' does not provide an export named '(?P<name>[\w$]+)'"
        ),
    ),
    ("missing_module", re.compile(r"Cannot find module '(?P<module>\.{1,2}/[^']+)'")),
    (
        "attribute",
        re.compile(
            r"Property '(?P<name>[\w$]+)' does not exist on type '(?P<type>[^']+)'(?:\. Did you mean '(?P<hint>[\w$]+)'\?)?"
        ),
    ),
    (
        "undefined_name",
        re.compile(r"Cannot find name '(?P<name>[\w$]+)'(?:\. Did you mean '(?P<hint>[\w$]+)'\?)?"),
    ),
    ("undefined_name", re.compile(r"ReferenceError:? (?P<name>[\w$]+) is not defined")),
    ("not_a_function", re.compile(r"(?P<type>[\w$.]+)\.(?P<name>[\w$]+) is not a function")),
    ("arity", re.compile(r"Expected (?P<want>\d+)(?:-\d+)? arguments?, but got (?P<given>\d+)")),
    (
        "attribute",
        re.compile(
            r"\.(?P<name>\w+) undefined \(type (?P<type>\S+) has no field or method \w+(?:, but does have (?:field |method )?(?P<hint>\w+))?\)"
        ),
    ),
    ("go_arity", re.compile(r"(?P<module>not enough|too many) arguments in call to (?P<name>[\w.()*]+)")),
    ("undefined_name", re.compile(r"undefined: (?P<name>[\w.]+)")),
    ("index", re.compile(r"IndexError|index out of range|out of bounds")),
    ("zero_division", re.compile(r"ZeroDivisionError|divide by zero|division by zero")),
    ("key_error", re.compile(r"^KeyError")),
)


def diagnose(failure: Failure) -> list[Diagnosis]:
    """The template-relevant facts of a failure's error text (possibly several)."""
    text = f"{failure.type}: {failure.message}" if failure.type else failure.message
    out: list[Diagnosis] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            span = match.span()
            if any(s <= span[0] < e for s, e in taken):
                continue
            taken.append(span)
            groups = {k: v for k, v in match.groupdict().items() if v}
            names = tuple(re.findall(r"'(\w+)'", groups.get("names", "")))
            name = groups.get("name", "") or groups.get("name2", "")
            if kind == "go_arity":
                kind = "missing_arguments" if groups.get("module") == "not enough" else "too_many_arguments"
                groups["module"] = ""
            if kind == "arity":
                want, given = int(groups["want"]), int(groups["given"])
                kind = "too_many_arguments" if given > want else "missing_arguments"
                groups["want"], groups["given"] = str(want), str(given)
            out.append(
                Diagnosis(
                    kind=kind,
                    name=name,
                    module=groups.get("module", ""),
                    type_name=groups.get("type", ""),
                    hint=groups.get("hint", ""),
                    names=names,
                    want=int(groups["want"]) if "want" in groups else -1,
                    given=int(groups["given"]) if "given" in groups else -1,
                )
            )
            break
    if failure.type == "KeyError" and not any(d.kind == "key_error" for d in out):
        out.append(Diagnosis("key_error", name=failure.message.strip("'\" ")))
    return out


def _mutation_order(failures: Sequence[Failure]) -> tuple[str, ...]:
    for f in failures:
        text = f"{f.type} {f.message}"
        if re.search(r"IndexError|index out of range|out of bounds|RangeError", text):
            return operator_order("index")
        if re.search(r"ZeroDivision|divide by zero", text):
            return operator_order("arithmetic")
        if re.search(r"TypeError|AttributeError|KeyError|NameError|ReferenceError", text):
            return operator_order("type")
    return operator_order("default")


# ---------------------------------------------------------------------------------------------
# Message-driven templates


def _language_of(ctx: _Context, path: str) -> str:
    fs = ctx.table.file(path)
    return fs.language if fs is not None else ""


def _site_lines_with(
    ctx: _Context, failure: Failure, finder: Callable[[ParsedFile, int, int], list[ts.Node]]
) -> list[tuple[str, int, float, list[ts.Node]]]:
    """Failure sites whose line has matching nodes; falls back to the sites' whole functions."""
    out: list[tuple[str, int, float, list[ts.Node]]] = []
    sites = _sites(failure, ctx.table)
    for path, line, weight in sites:
        pf = ctx.ws.parsed(path)
        if pf is None:
            continue
        nodes = finder(pf, line, line)
        if nodes:
            out.append((path, line, weight, nodes))
    if out:
        return out
    for path, line, weight in sites[:3]:
        pf = ctx.ws.parsed(path)
        if pf is None:
            continue
        first, last = _scope_range(ctx.ws, path, line, pf)
        nodes = finder(pf, first, last)
        if nodes:
            out.append((path, nodes[0].start_point.row + 1, weight * 0.9, nodes))
    return out


def _undefined_name(ctx: _Context, failure: Failure, diag: Diagnosis) -> None:
    name = diag.name
    if "." in name:  # Go: undefined: pkg.Name
        pkg, _, member = name.partition(".")
        _module_attribute(
            ctx, failure, Diagnosis("module_attribute", name=member, module=pkg, hint=diag.hint)
        )
        return
    for path, line, weight, nodes in _site_lines_with(
        ctx, failure, lambda pf, a, b: _name_occurrences(pf, name, a, b)
    )[:2]:
        _undefined_name_at(ctx, failure, diag, path, line, weight, nodes)


def _undefined_name_at(
    ctx: _Context,
    failure: Failure,
    diag: Diagnosis,
    path: str,
    line: int,
    weight: float,
    nodes: list[ts.Node],
) -> None:
    name = diag.name
    pf = ctx.ws.parsed(path)
    if pf is None:
        return
    lang = pf.language
    first, last = _scope_range(ctx.ws, path, line, pf)
    occurrences = _name_occurrences(pf, name, first, last) or nodes
    where = f"`{path}:{line}`{_fn_label(ctx.ws, path, line)}"
    cause = _failure_text(failure)
    w = ctx.weight(path, line, weight)

    def rename(
        new: str, prior: float, why: str, extra: Splice | None = None, *, variant: str = "rename_symbol"
    ) -> None:
        splices = [(n.start_byte, n.end_byte, new) for n in occurrences]
        if extra is not None:
            splices.append(extra)
        ctx.add(
            {path: splices},
            variant,
            f"Renamed `{name}` to `{new}` in {where}: {cause}; {why}.",
            weight=w,
            prior=prior,
            path=path,
            line=line,
            column=occurrences[0].start_point.column,
        )

    if diag.hint:
        rename(diag.hint, PRIOR_HINTED, f"the error itself suggests `{diag.hint}`")
    # Defined elsewhere under the same name: it was moved, import it.
    for fs in ctx.table.definers(name, language=lang)[:3]:
        if fs.path == path or (lang == "go" and fs.module == posixpath.dirname(path)):
            continue
        if is_test_path(fs.path) and not is_test_path(path):
            continue
        splice = _add_import_splice(ctx.ws, pf, name, fs)
        if splice is None:
            continue
        ctx.add(
            {path: [splice]},
            "fix_import",
            f"Imported `{name}` from `{fs.module}` in `{path}`: {cause}; `{name}` is defined in `{fs.path}`.",
            weight=w,
            prior=PRIOR_EXACT,
            path=path,
            line=line,
        )
    scope = ctx.table.scope_names(path, line)
    for i, cand in enumerate(closest(name, scope, n=3, cutoff=0.6)):
        if cand == diag.hint:
            continue
        rename(cand, PRIOR_CLOSEST + i * 0.1, f"`{cand}` is the closest name in scope")
    # Renamed *and* moved: the closest top-level name of another module, imported.
    others = {
        n: fs
        for fs in ctx.table.modules(lang)
        if fs.path != path and not is_test_path(fs.path)
        for n in fs.exports
    }
    for i, cand in enumerate(closest(name, sorted(others), n=2, cutoff=0.75)):
        if cand in scope:
            continue
        splice = _add_import_splice(ctx.ws, pf, cand, others[cand])
        if splice is not None:
            rename(
                cand,
                PRIOR_CLOSEST + 1 + i * 0.1,
                f"`{cand}` from `{others[cand].path}` is the closest existing name",
                splice,
                variant="fix_import",
            )


def _import_sites(ctx: _Context, failure: Failure, name: str, module: str) -> list[tuple[ImportInfo, float]]:
    """Import statements importing ``name`` from ``module`` (failure sites first)."""
    target = _resolve_module(ctx, module, failure)
    sites = {(p, ln): w for p, ln, w in _sites(failure, ctx.table)}
    site_files = {p for p, _ in sites}
    found: list[tuple[ImportInfo, float]] = []
    for fs in ctx.table.files.values():
        for imp in fs.imports:
            if not any(n == name for n, _ in imp.names):
                continue
            same = imp.module == module
            if not same and target is not None:
                resolved = _resolve_import(ctx, imp)
                same = resolved is not None and resolved.path == target.path
            if not same and is_js(fs.language) and module.startswith("."):
                same = posixpath.normpath(
                    posixpath.join(posixpath.dirname(fs.path), imp.module)
                ) == posixpath.normpath(posixpath.join(posixpath.dirname(fs.path), module))
            if not same:
                continue
            weight = max(
                (w for (p, ln), w in sites.items() if p == fs.path and imp.line <= ln <= imp.end_line),
                default=0.0,
            )
            if not weight:
                weight = 0.95 if fs.path in site_files else 0.9
            found.append((imp, weight))
    found.sort(key=lambda item: (-item[1], item[0].path, item[0].line))
    return found[:MAX_SITES]


def _resolve_module(ctx: _Context, module: str, failure: Failure) -> FileSymbols | None:
    if not module:
        return None
    if "/" in module or module.startswith("."):
        importer = failure.path or next((f.path for f in reversed(failure.frames)), "")
        fs = ctx.table.js_file(module, importer=importer) if importer else None
        if fs is not None:
            return fs
        stem = posixpath.normpath(module.lstrip("./"))
        for cand in ctx.table.files.values():
            if is_js(cand.language) and (cand.module == stem or cand.module.endswith("/" + stem)):
                return cand
        return None
    return ctx.table.python_file(module)


def _resolve_import(ctx: _Context, imp: ImportInfo) -> FileSymbols | None:
    if imp.kind in ("esm", "require"):
        return ctx.table.js_file(imp.module, importer=imp.path)
    if imp.kind in ("import", "from"):
        return ctx.table.python_file(imp.module, importer=imp.path)
    return None


def _module_distance(a: str, b: str) -> tuple[int, float]:
    pa, pb = re.split(r"[./]", a), re.split(r"[./]", b)
    shared = 0
    for x, y in zip(pa, pb, strict=False):
        if x != y:
            break
        shared += 1
    return -shared, -similarity(a, b)


def _import_name(ctx: _Context, failure: Failure, diag: Diagnosis) -> None:
    name, module = diag.name, diag.module
    sites = _import_sites(ctx, failure, name, module)
    if not sites:
        return
    source_fs = _resolve_module(ctx, module, failure)
    lang = ctx.table.files[sites[0][0].path].language
    cause = _failure_text(failure)
    groups: list[list[tuple[ImportInfo, float]]] = [sites]
    if len(sites) > 1:
        groups.append(sites[:1])

    def emit(
        build: Callable[[ImportInfo, ParsedFile], list[Splice]], variant: str, text: str, prior: float
    ) -> None:
        for gi, group in enumerate(groups):
            splices: dict[str, list[Splice]] = {}
            for imp, _ in group:
                pf = ctx.ws.parsed(imp.path)
                if pf is None:
                    continue
                got = build(imp, pf)
                if not got:
                    splices = {}
                    break
                splices.setdefault(imp.path, []).extend(got)
            head = group[0][0]
            where = f"`{head.path}:{head.line}`" + (f" and {len(group) - 1} more" if len(group) > 1 else "")
            ctx.add(
                splices,
                variant,
                f"{text} in {where}: {cause}.",
                weight=max(w for _, w in group),
                prior=prior + gi * 0.5,
                path=head.path,
                line=head.line,
            )

    # (a) moved: the same name is defined elsewhere.
    definers = [
        fs
        for fs in ctx.table.definers(name, language=lang)
        if (source_fs is None or fs.path != source_fs.path) and not is_test_path(fs.path)
    ]
    definers.sort(key=lambda fs: (*_module_distance(module, fs.module), fs.path))

    def retarget(target: FileSymbols) -> Callable[[ImportInfo, ParsedFile], list[Splice]]:
        return lambda imp, pf: _retarget_import(ctx.ws, pf, imp, name, target)

    def rename(new: str) -> Callable[[ImportInfo, ParsedFile], list[Splice]]:
        return lambda imp, pf: _rename_import(pf, imp, name, new)

    for i, target in enumerate(definers[:3]):
        emit(
            retarget(target),
            "fix_import",
            f"Imported `{name}` from `{target.module}` (where it is now defined) instead of `{module}`",
            PRIOR_EXACT + i * 0.1,
        )
    # (b) renamed inside the same module.
    if source_fs is not None:
        pool = [*source_fs.exports, *source_fs.imported_names()]
        cands = closest(name, pool, n=3, cutoff=0.6)
        if diag.hint and diag.hint not in cands:
            cands.insert(0, diag.hint)
        for i, cand in enumerate(cands):
            prior = PRIOR_HINTED if cand == diag.hint else PRIOR_CLOSEST + i * 0.1
            emit(
                rename(cand),
                "rename_symbol",
                f"Renamed `{name}` to `{cand}` (the closest name `{module}` still defines)",
                prior,
            )
    # (c) renamed and moved.
    others = {
        n: fs
        for fs in ctx.table.modules(lang)
        if (source_fs is None or fs.path != source_fs.path) and not is_test_path(fs.path)
        for n in fs.exports
    }
    for i, cand in enumerate(closest(name, sorted(others), n=2, cutoff=0.75)):
        target = others[cand]

        def build(
            imp: ImportInfo, pf: ParsedFile, cand: str = cand, target: FileSymbols = target
        ) -> list[Splice]:
            moved = _retarget_import(ctx.ws, pf, imp, name, target, new_name=cand)
            if not moved:
                return []
            node = _import_node(pf, imp)
            spans = {(s, e) for s, e, _ in moved}
            entries = _imported_name_nodes(pf, node, name) if node is not None else []
            alias = entries[0][2] if entries else ""
            uses = [] if alias else _rename_in_file(pf, name, cand)
            inside = [
                (s, e, r) for s, e, r in uses if node is not None and node.start_byte <= s < node.end_byte
            ]
            uses = [u for u in uses if u not in inside and (u[0], u[1]) not in spans]
            return moved + uses

        emit(
            build,
            "fix_import",
            f"Imported `{cand}` from `{target.module}` in place of `{name}`",
            PRIOR_CLOSEST + 1 + i * 0.1,
        )
    # (d) compatibility re-export in the old module.
    if source_fs is not None and definers:
        target = definers[0]
        spf = ctx.ws.parsed(source_fs.path)
        splice = _add_import_splice(ctx.ws, spf, name, target) if spf is not None else None
        if splice is not None and source_fs.language == "python":
            ctx.add(
                {source_fs.path: [splice]},
                "fix_import",
                f"Re-exported `{name}` from `{source_fs.path}` (it moved to `{target.path}`): {cause}.",
                weight=sites[0][1] * 0.9,
                prior=PRIOR_CLOSEST + 3,
                path=source_fs.path,
                line=1,
            )


def _rename_import(pf: ParsedFile, imp: ImportInfo, old: str, new: str) -> list[Splice]:
    node = _import_node(pf, imp)
    if node is None:
        return []
    entries = _imported_name_nodes(pf, node, old)
    if not entries:
        return []
    _, name_node, alias = entries[0]
    splices: list[Splice] = [(name_node.start_byte, name_node.end_byte, new)]
    if not alias:
        for s, e, r in _rename_in_file(pf, old, new):
            if not node.start_byte <= s < node.end_byte:
                splices.append((s, e, r))
    return splices


def _missing_module(ctx: _Context, failure: Failure, diag: Diagnosis) -> None:
    module = diag.module
    cause = _failure_text(failure)
    sites = {(p, ln): w for p, ln, w in _sites(failure, ctx.table)}
    site_files = {p for p, _ in sites}
    js = "/" in module or module.startswith(".")
    found: list[tuple[ImportInfo, float]] = []
    for fs in ctx.table.files.values():
        for imp in fs.imports:
            if js:
                hit = imp.kind in ("esm", "require") and imp.module == module
            else:
                hit = imp.kind in ("import", "from") and (
                    imp.module == module or imp.module.startswith(module + ".")
                )
            if hit:
                weight = max(
                    (w for (p, ln), w in sites.items() if p == fs.path and imp.line <= ln <= imp.end_line),
                    default=0.0,
                )
                found.append((imp, weight or (0.95 if fs.path in site_files else 0.9)))
    found.sort(key=lambda item: (-item[1], item[0].path, item[0].line))
    found = found[:MAX_SITES]
    if not found:
        return
    lang = ctx.table.files[found[0][0].path].language
    wanted = sorted({n for imp, _ in found for n, _ in imp.names if n not in ("*", "default")})
    scored: dict[str, float] = {}
    importers = {imp.path for imp, _ in found}
    for fs in ctx.table.modules(lang):
        if is_test_path(fs.path) or fs.path in importers:
            continue
        mod = fs.module if not js else fs.path
        if js:
            base_missing = posixpath.basename(module)
            base_cand = posixpath.splitext(posixpath.basename(fs.path))[0]
            score = similarity(posixpath.splitext(base_missing)[0], base_cand)
        else:
            score = 0.5 * similarity(module, fs.module) + 0.5 * similarity(
                module.split(".")[-1], fs.module.split(".")[-1]
            )
        if wanted and all(n in fs.exports or n in fs.imported_names() for n in wanted):
            score += 1.0
        if score >= 0.6:
            scored[mod] = score
    ranked = sorted(scored, key=lambda m: (-scored[m], m))[:3]
    for i, replacement in enumerate(ranked):
        splices: dict[str, list[Splice]] = {}
        for imp, _ in found:
            pf = ctx.ws.parsed(imp.path)
            node = _import_node(pf, imp) if pf is not None else None
            if pf is None or node is None:
                continue
            if js:
                spec = _module_spec_node(pf, node)
                if spec is None:
                    continue
                new_spec = ctx.table.relative_specifier(imp.path, replacement, like=imp.module)
                splices.setdefault(imp.path, []).append((spec.start_byte, spec.end_byte, new_spec))
                continue
            new_module = replacement + imp.module[len(module) :]
            for sub in walk(node):
                if (
                    sub.type == "dotted_name"
                    and pf.node_text(sub) == imp.module
                    and (
                        _field_of(sub) == "module_name"
                        or (
                            sub.parent is not None
                            and sub.parent.type in ("import_statement", "aliased_import")
                        )
                    )
                ):
                    splices.setdefault(imp.path, []).append((sub.start_byte, sub.end_byte, new_module))
                    break
            if imp.kind == "import" and not imp.alias:
                # ``import a.b`` used as ``a.b.f()``: rename the qualified uses too.
                for sub in walk(pf.root):
                    if (
                        sub.type == "attribute"
                        and pf.node_text(sub) == imp.module
                        and not (node.start_byte <= sub.start_byte < node.end_byte)
                    ):
                        splices.setdefault(imp.path, []).append((sub.start_byte, sub.end_byte, new_module))
        head = found[0][0]
        shown = (
            replacement if not js else ctx.table.relative_specifier(head.path, replacement, like=head.module)
        )
        ctx.add(
            splices,
            "fix_import",
            f"Imported `{shown}` instead of the missing module `{module}` in `{head.path}:{head.line}`: {cause}.",
            weight=found[0][1],
            prior=PRIOR_EXACT + i * 0.1,
            path=head.path,
            line=head.line,
        )


def _clean_type(type_name: str) -> str:
    text = type_name.replace("typeof ", "").strip("*&()")
    text = re.sub(r"<.*", "", text)
    return text.rsplit(".", 1)[-1]


def _member_rename(
    ctx: _Context,
    failure: Failure,
    attr: str,
    candidates: list[tuple[str, float, str]],
    sites: list[tuple[str, int, float, list[ts.Node]]],
    extra: Callable[[ParsedFile, str], list[Splice]] | None = None,
) -> None:
    cause = _failure_text(failure)
    for new, prior, why in candidates:
        splices: dict[str, list[Splice]] = {}
        for path, _line, _w, nodes in sites:
            for node in nodes:
                splices.setdefault(path, []).append((node.start_byte, node.end_byte, new))
        if not splices:
            return
        path, line, weight, nodes = sites[0]
        ctx.add(
            splices,
            "rename_symbol",
            f"Changed `.{attr}` to `.{new}` in `{path}:{line}`{_fn_label(ctx.ws, path, line)}: {cause}; {why}.",
            weight=ctx.weight(path, line, weight),
            prior=prior,
            path=path,
            line=line,
            column=nodes[0].start_point.column,
        )


def _attribute(ctx: _Context, failure: Failure, diag: Diagnosis) -> None:
    attr = diag.name
    sites = _site_lines_with(ctx, failure, lambda pf, a, b: _member_occurrences(pf, attr, a, b))[:3]
    if not sites:
        return
    lang = _language_of(ctx, sites[0][0])
    type_name = _clean_type(diag.type_name)
    members: list[str] = []
    if diag.kind == "not_a_function":
        obj = diag.type_name.rsplit(".", 1)[-1]
        fs = ctx.table.file(sites[0][0])
        if obj == "this":
            fn = ctx.ws.function_at(sites[0][0], sites[0][1])
            members = ctx.table.class_members(fn.container) if fn is not None and fn.container else []
        elif fs is not None:
            for imp in fs.imports:
                if obj in imp.bound_names():
                    target = _resolve_import(ctx, imp)
                    if target is not None:
                        members = list(target.exports)
        type_name = ""
    elif type_name:
        members = ctx.table.class_members(type_name)
    candidates: list[tuple[str, float, str]] = []
    if diag.hint:
        candidates.append((diag.hint, PRIOR_HINTED, f"the error itself suggests `{diag.hint}`"))
    owner = f"`{type_name}`" if type_name else "the object"
    for i, cand in enumerate(closest(attr, members, n=3, cutoff=0.6)):
        if cand != diag.hint:
            candidates.append((cand, PRIOR_CLOSEST + i * 0.1, f"{owner} defines `{cand}`"))
    if not members:
        for i, cand in enumerate(closest(attr, ctx.table.all_members(lang), n=3, cutoff=0.75)):
            if cand != diag.hint:
                candidates.append(
                    (
                        cand,
                        PRIOR_CLOSEST + 1 + i * 0.1,
                        f"`{cand}` is the closest member name in the repository",
                    )
                )
    _member_rename(ctx, failure, attr, candidates, sites)


def _module_attribute(ctx: _Context, failure: Failure, diag: Diagnosis) -> None:
    attr, module = diag.name, diag.module
    sites = _site_lines_with(ctx, failure, lambda pf, a, b: _member_occurrences(pf, attr, a, b))[:3]
    if not sites:
        return
    path = sites[0][0]
    fs = ctx.table.file(path)
    target: FileSymbols | None = None
    pool: list[str] = []
    if fs is not None and fs.language == "go":
        for imp in fs.imports:
            if module in imp.bound_names():
                directory = ctx.table.go_package_dir(imp.module)
                if directory is not None:
                    pool = [n for other in ctx.table.go_package_files(directory) for n in other.exports]
    else:
        target = ctx.table.python_file(module, importer=path)
        if target is None and fs is not None:
            for imp in fs.imports:
                if module.split(".")[-1] in imp.bound_names():
                    target = _resolve_import(ctx, imp)
        if target is not None:
            pool = [*target.exports, *target.imported_names()]
    candidates: list[tuple[str, float, str]] = []
    if diag.hint:
        candidates.append((diag.hint, PRIOR_HINTED, f"the error itself suggests `{diag.hint}`"))
    for i, cand in enumerate(closest(attr, pool, n=3, cutoff=0.6)):
        if cand != diag.hint:
            candidates.append((cand, PRIOR_CLOSEST + i * 0.1, f"`{module}` defines `{cand}`"))
    _member_rename(ctx, failure, attr, candidates, sites)


def _call_nodes(pf: ParsedFile, name: str, first: int, last: int) -> list[ts.Node]:
    out = []
    for node in _nodes_in_lines(pf.root, first, last):
        if node.type in CALL_TYPES and node.start_point.row + 1 <= last:
            callee, _ = callee_name(node, pf)
            if callee == name:
                out.append(node)
    return out


def _resolve_function(ctx: _Context, qualified: str) -> tuple[str, list[FunctionInfo]]:
    """(name used at call sites, candidate definitions) for a qualified name from a message."""
    parts = [p for p in re.split(r"[.()*]+", qualified) if p]
    if not parts:
        return "", []
    name = parts[-1]
    owner = parts[-2] if len(parts) > 1 else ""
    if name in ("__init__", "constructor", "<init>"):
        defs = [f for f in ctx.table.functions_named(name) if f.container == owner]
        return owner, defs
    defs = ctx.table.functions_named(name)
    if owner and any(f.container == owner for f in defs):
        defs = [f for f in defs if f.container == owner]
    if not defs:
        inits = [
            f
            for f in ctx.table.functions_named("__init__") + ctx.table.functions_named("constructor")
            if f.container == name
        ]
        if inits:
            return name, inits
    return name, defs


def _arguments(node: ts.Node, pf: ParsedFile) -> tuple[ts.Node | None, list[ts.Node], list[ts.Node]]:
    """(argument list node, positional args, keyword args) of a call."""
    args = node.child_by_field_name("arguments")
    if args is None:
        return None, [], []
    positional, keywords = [], []
    for a in args.named_children:
        if a.type == "comment":
            continue
        if a.type == "keyword_argument":
            keywords.append(a)
        elif a.type not in ("list_splat", "dictionary_splat", "spread_element", "variadic_argument"):
            positional.append(a)
    return args, positional, keywords


def _append_argument(pf: ParsedFile, args: ts.Node, text: str) -> Splice:
    """Insert ``text`` as the last argument of an argument list."""
    close = args.children[-1]
    inner = [c for c in args.children[1:-1] if c.type != "comment"]
    if not inner:
        return (close.start_byte, close.start_byte, text)
    last = inner[-1]
    if pf.node_text(last) == ",":  # keep the trailing-comma style
        return (last.end_byte, last.end_byte, f" {text},")
    return (last.end_byte, last.end_byte, f", {text}")


def _remove_argument(pf: ParsedFile, arg: ts.Node) -> Splice:
    nxt = arg.next_sibling
    prev = arg.prev_sibling
    if prev is not None and pf.node_text(prev) == ",":
        return (prev.start_byte, arg.end_byte, "")
    if nxt is not None and pf.node_text(nxt) == ",":
        after = nxt.next_sibling
        return (arg.start_byte, after.start_byte if after is not None else nxt.end_byte, "")
    return (arg.start_byte, arg.end_byte, "")


def _zero_value(type_text: str, language: str) -> str:
    t = type_text.strip()
    if language == "go":
        if re.fullmatch(r"u?int\d*|float\d+|byte|rune|uintptr|complex\d+", t):
            return "0"
        if t == "string":
            return '""'
        if t == "bool":
            return "false"
        if t.startswith(("*", "[]", "map[", "chan", "func", "interface")) or t in ("error", "any"):
            return "nil"
        return f"{t}{{}}"
    if is_js(language):
        return "undefined"
    return "None"


def _call_signature(ctx: _Context, failure: Failure, diag: Diagnosis) -> None:
    qualified = diag.name or _callee_by_arity(ctx, failure, diag.given)
    call_name, defs = _resolve_function(ctx, qualified)
    if not call_name:
        return
    sites = _site_lines_with(ctx, failure, lambda pf, a, b: _call_nodes(pf, call_name, a, b))[:2]
    if not sites:
        return
    fn = defs[0] if defs else None
    for path, line, weight, calls in sites:
        _call_signature_at(ctx, failure, diag, call_name, fn, path, line, weight, calls)


def _callee_by_arity(ctx: _Context, failure: Failure, given: int) -> str:
    """The callee of the call at the failure's location that passes ``given`` arguments (tsc
    reports arity errors without the function's name)."""
    for path, line, _ in _sites(failure, ctx.table):
        pf = ctx.ws.parsed(path)
        if pf is None:
            continue
        for node in _nodes_in_lines(pf.root, line, line):
            if node.type in CALL_TYPES:
                _, positional, keywords = _arguments(node, pf)
                name, _ = callee_name(node, pf)
                if name and len(positional) + len(keywords) == given:
                    return name
    return ""


def _call_signature_at(
    ctx: _Context,
    failure: Failure,
    diag: Diagnosis,
    call_name: str,
    fn: FunctionInfo | None,
    path: str,
    line: int,
    weight: float,
    calls: list[ts.Node],
) -> None:
    pf = ctx.ws.parsed(path)
    if pf is None:
        return
    cause = _failure_text(failure)
    call = calls[0]
    w = ctx.weight(path, line, weight)
    where = f"`{path}:{call.start_point.row + 1}`{_fn_label(ctx.ws, path, line)}"
    args, positional, keywords = _arguments(call, pf)
    if args is None:
        return

    def add(
        splices: list[Splice], text: str, prior: float, variant: str = "update_call_site", p: str = path
    ) -> None:
        ctx.add(
            {p: splices},
            variant,
            f"{text} in {where}: {cause}.",
            weight=w,
            prior=prior,
            path=path,
            line=line,
        )

    if diag.kind == "unexpected_keyword":
        kw = diag.hint
        node = next(
            (
                k
                for k in keywords
                if (n := k.child_by_field_name("name")) is not None and pf.node_text(n) == kw
            ),
            None,
        )
        if node is None:
            return
        kw_name = node.child_by_field_name("name")
        passed = {pf.node_text(n) for k in keywords if (n := k.child_by_field_name("name")) is not None}
        params = [
            p.name
            for p in (fn.params if fn else ())
            if p.kind not in ("self", "var_positional", "var_keyword", "positional_only")
            and p.name not in passed
        ]
        for i, cand in enumerate(closest(kw, params, n=3, cutoff=0.4)):
            assert kw_name is not None
            add(
                [(kw_name.start_byte, kw_name.end_byte, cand)],
                f"Renamed keyword argument `{kw}=` to `{cand}=` (the parameter of `{call_name}`)",
                PRIOR_EXACT + i * 0.1,
            )
        add(
            [_remove_argument(pf, node)],
            f"Dropped keyword argument `{kw}=` that `{call_name}` no longer accepts",
            PRIOR_CLOSEST + 1,
        )
    elif diag.kind == "missing_arguments":
        missing = list(diag.names)
        if not missing and fn is not None:
            given = len(positional) + len(keywords)
            required = [
                p for p in fn.params if p.kind in ("positional", "positional_only") and not p.has_default
            ]
            missing = [p.name for p in required[given:]]
        if not missing:
            return
        scope = set(ctx.table.scope_names(path, line))
        types = {p.name: p.type for p in (fn.params if fn else ())}
        lang = pf.language
        choices: list[tuple[list[str], float, str]] = []
        if all(m in scope for m in missing):
            choices.append((list(missing), PRIOR_EXACT, "the same names are in scope at the call"))
        examples = _example_arguments(ctx, call_name, fn, missing)
        if examples:
            choices.append((examples, PRIOR_EXACT + 0.2, "other call sites pass these values"))
        choices.append(
            (
                [_zero_value(types.get(m, ""), lang) for m in missing],
                PRIOR_CLOSEST + 0.5,
                "a neutral value",
            )
        )
        for values, prior, why in choices:
            if lang == "python":
                parts = [f"{m}={v}" for m, v in zip(missing, values, strict=True)]
            else:
                parts = list(values)
            add(
                [_append_argument(pf, args, ", ".join(parts))],
                f"Passed {', '.join(f'`{p}`' for p in parts)} to `{call_name}` ({why})",
                prior,
            )
        if fn is not None and lang == "python":
            # The other way round: the new parameter should have been optional.
            dpf = ctx.ws.parsed(fn.path)
            if dpf is not None:
                splices = _default_params(dpf, fn, missing)
                if splices:
                    ctx.add(
                        {fn.path: splices},
                        "update_signature",
                        f"Gave {', '.join(f'`{m}`' for m in missing)} of `{fn.qualname}` (`{fn.path}:{fn.start_line}`) a default of None: {cause}.",
                        weight=w * 0.9,
                        prior=PRIOR_CLOSEST + 2,
                        path=fn.path,
                        line=fn.start_line,
                    )
    elif diag.kind == "too_many_arguments":
        extra = (
            len(positional)
            - (diag.want - (1 if fn is not None and any(p.kind == "self" for p in fn.params) else 0))
            if diag.want >= 0
            else 1
        )
        if fn is not None and pf.language == "go":
            extra = len(positional) - len(fn.positional())
        if extra < 1 or extra > len(positional):
            extra = 1
        keyword_only = {p.name for p in (fn.params if fn else ()) if p.kind == "keyword_only"}
        for arg in positional[-extra:]:
            text = pf.node_text(arg)
            if text in keyword_only:
                add(
                    [(arg.start_byte, arg.end_byte, f"{text}={text}")],
                    f"Passed `{text}` by keyword to `{call_name}`",
                    PRIOR_HINTED,
                )
        for i, arg in enumerate(reversed(positional)):
            if extra == 1:
                add(
                    [_remove_argument(pf, arg)],
                    f"Dropped argument `{pf.node_text(arg)}` from the call to `{call_name}`",
                    PRIOR_EXACT + i * 0.1,
                )
        if extra > 1:
            add(
                [_remove_argument(pf, a) for a in positional[-extra:]],
                f"Dropped the last {extra} arguments of the call to `{call_name}`",
                PRIOR_EXACT,
            )


def _default_params(pf: ParsedFile, fn: FunctionInfo, names: Sequence[str]) -> list[Splice]:
    node = pf.root.descendant_for_point_range((fn.start_line - 1, 0), (fn.start_line - 1, 0))
    while node is not None and node.type not in function_types(pf.language):
        node = node.parent
    if node is None:
        for cand in walk(pf.root):
            if cand.type in function_types(pf.language) and cand.start_point.row + 1 == fn.start_line:
                node = cand
                break
    if node is None:
        return []
    plist = node.child_by_field_name("parameters")
    if plist is None:
        return []
    out: list[Splice] = []
    for p in plist.named_children:
        if p.type == "identifier" and pf.node_text(p) in names:
            out.append((p.end_byte, p.end_byte, "=None"))
        elif p.type == "typed_parameter":
            ident = next((c for c in p.named_children if c.type == "identifier"), None)
            if ident is not None and pf.node_text(ident) in names:
                out.append((p.end_byte, p.end_byte, " = None"))
    # A parameter with a default may not precede one without: only when the others follow suit.
    return out


def _example_arguments(
    ctx: _Context, call_name: str, fn: FunctionInfo | None, missing: Sequence[str]
) -> list[str]:
    """Values other call sites pass for the missing parameters (simple expressions only)."""
    if fn is None:
        return []
    index = {p.name: i for i, p in enumerate(p for p in fn.params if p.kind != "self")}
    found: dict[str, str] = {}
    scanned = 0
    for fs in ctx.table.files.values():
        if not any(c.name == call_name for f in fs.functions for c in f.calls):
            continue
        scanned += 1
        if scanned > 10:
            break
        pf = ctx.ws.parsed(fs.path)
        if pf is None:
            continue
        for call in _call_nodes(pf, call_name, 1, pf.line_count):
            _, positional, keywords = _arguments(call, pf)
            for k in keywords:
                n, v = k.child_by_field_name("name"), k.child_by_field_name("value")
                if (
                    n is not None
                    and v is not None
                    and pf.node_text(n) in missing
                    and v.type in ("identifier", "integer", "string", "true", "false", "none", "float")
                ):
                    found.setdefault(pf.node_text(n), pf.node_text(v))
            for m in missing:
                i = index.get(m)
                if (
                    i is not None
                    and i < len(positional)
                    and positional[i].type
                    in (
                        "identifier",
                        "integer",
                        "string",
                        "number",
                        "int_literal",
                        "true",
                        "false",
                        "none",
                        "float",
                    )
                ):
                    found.setdefault(m, pf.node_text(positional[i]))
    return [found[m] for m in missing] if all(m in found for m in missing) else []


# --- guards -------------------------------------------------------------------------------------

_STATEMENT_PARENTS = frozenset(
    {"block", "module", "statement_block", "program", "statement_list", "switch_case"}
)


def _statement_at(pf: ParsedFile, line: int) -> ts.Node | None:
    start, end = pf.line_span(line)
    text = pf.data[start:end]
    offset = start + (len(text) - len(text.lstrip()))
    node = pf.root.descendant_for_byte_range(offset, offset)
    while node is not None and (node.parent is None or node.parent.type not in _STATEMENT_PARENTS):
        node = node.parent
    return node


def _guard_targets(pf: ParsedFile, line: int, diag: Diagnosis) -> list[tuple[str, str]]:
    """(expression, condition kind) pairs to guard on ``line``."""
    out: list[tuple[str, str]] = []
    simple = ("identifier", "attribute", "member_expression", "subscript", "subscript_expression")
    for node in _nodes_in_lines(pf.root, line, line):
        if node.start_point.row + 1 != line and node.end_point.row + 1 != line:
            continue
        target: ts.Node | None = None
        kind = "none"
        if diag.kind == "none_attribute" and node.type in ("attribute", "member_expression"):
            member = node.child_by_field_name("attribute") or node.child_by_field_name("property")
            if member is not None and pf.node_text(member) == diag.name:
                target = node.child_by_field_name("object")
        elif diag.kind in ("none_value", "index", "key_error") and node.type in (
            "subscript",
            "subscript_expression",
        ):
            target = node.child_by_field_name("value") or node.child_by_field_name("object")
            kind = {"none_value": "none", "index": "empty", "key_error": "key"}[diag.kind]
            if kind == "key":
                key = node.child_by_field_name("subscript") or node.child_by_field_name("index")
                if key is not None and target is not None and target.type in simple:
                    out.append((f"{pf.node_text(key)}\0{pf.node_text(target)}", "key"))
                continue
        elif diag.kind == "none_value" and node.type in ("call",) and pf.node_text(node).startswith("len("):
            args = node.child_by_field_name("arguments")
            target = args.named_children[0] if args is not None and args.named_children else None
        elif diag.kind == "none_value" and node.type == "for_statement":
            target = node.child_by_field_name("right")
        elif diag.kind == "zero_division" and node.type in ("binary_operator", "binary_expression"):
            op = node.child_by_field_name("operator")
            if op is not None and pf.node_text(op) in ("/", "//", "%"):
                target = node.child_by_field_name("right")
                kind = "zero"
        if target is not None and target.type in simple:
            out.append((pf.node_text(target), kind))
    return list(dict.fromkeys(out))[:2]


def _return_values(pf: ParsedFile, fn_node: ts.Node | None) -> tuple[list[str], bool]:
    """(plausible early-return values, function returns something) from the function's returns."""
    if fn_node is None:
        return ["None"], False
    values: list[str] = []
    returns_value = False
    for node in walk(fn_node, stop=function_types(pf.language)):
        if node.type != "return_statement":
            continue
        expr = node.named_children[0] if node.named_children else None
        if expr is None:
            continue
        returns_value = True
        t = expr.type
        if t in ("integer", "number", "float"):
            values.append("0")
        elif t in ("list", "array", "list_comprehension"):
            values.append("[]")
        elif t in ("dictionary", "object", "dictionary_comprehension"):
            values.append("{}")
        elif t in ("string",):
            values.append('""')
        elif t in ("true", "false"):
            values.append("False" if pf.language == "python" else "false")
        elif t in ("none", "null", "undefined"):
            values.append(pf.node_text(expr))
    none = "None" if pf.language == "python" else "null"
    return list(dict.fromkeys([*values, none])), returns_value


def _none_guard(ctx: _Context, failure: Failure, diag: Diagnosis) -> None:
    frames = [
        (p, ln, w) for p, ln, w in _sites(failure, ctx.table) if not is_test_path(p) or ctx.include_tests
    ]
    if not frames:
        return
    path, line, weight = frames[0]
    pf = ctx.ws.parsed(path)
    if pf is None or not (pf.language == "python" or is_js(pf.language)):
        return
    stmt = _statement_at(pf, line)
    if stmt is None or stmt.type in ("elif_clause", "else_clause", "except_clause"):
        return
    targets = _guard_targets(pf, line, diag)
    if not targets:
        return
    fn_node = stmt.parent
    while fn_node is not None and fn_node.type not in function_types(pf.language):
        fn_node = fn_node.parent
    in_loop = False
    up = stmt.parent
    while up is not None and up is not fn_node:
        if up.type in ("for_statement", "while_statement", "for_in_statement"):
            in_loop = True
            break
        up = up.parent
    values, returns_value = _return_values(pf, fn_node)
    indent = pf.indent(stmt.start_point.row + 1)
    unit = "\t" if indent.startswith("\t") else "    "
    at = pf.line_span(stmt.start_point.row + 1)[0]
    cause = _failure_text(failure)
    where = f"`{path}:{stmt.start_point.row + 1}`{_fn_label(ctx.ws, path, line)}"
    w = ctx.weight(path, line, weight)
    py = pf.language == "python"
    for ti, (expr, kind) in enumerate(targets):
        if kind == "key":
            key, container = expr.split("\0")
            cond = f"{key} not in {container}" if py else f"!({key} in {container})"
            shown = f"`{container}[{key}]`"
        elif kind == "zero":
            cond = f"not {expr}" if py else f"!{expr}"
            shown = f"`{expr}` being zero"
        elif kind == "empty":
            cond = f"not {expr}" if py else f"!{expr} || {expr}.length === 0"
            shown = f"`{expr}` being empty"
        else:
            cond = f"{expr} is None" if py else f"{expr} == null"
            shown = f"`{expr}` being {'None' if py else 'null/undefined'}"
        exits: list[str] = []
        if fn_node is None:
            continue
        if returns_value:
            exits += [f"return {v}" for v in values]
        else:
            exits.append("return")
        if in_loop:
            exits.insert(1 if returns_value else 0, "continue")
        for ei, exit_stmt in enumerate(exits[:3]):
            if py:
                guard = f"{indent}if {cond}:\n{indent}{unit}{exit_stmt}\n"
            else:
                guard = f"{indent}if ({cond}) {{\n{indent}{unit}{exit_stmt};\n{indent}}}\n"
            ctx.add(
                {path: [(at, at, guard)]},
                "none_guard",
                f"Guarded against {shown} before {where} (`{exit_stmt}`): {cause}.",
                weight=w,
                prior=PRIOR_GUARD + ti + ei * 0.1,
                path=path,
                line=stmt.start_point.row + 1,
            )


_STATIC_KINDS = frozenset({"undefined_name", "import_name", "missing_module", "module_attribute"})

_TEMPLATES: dict[str, Callable[[_Context, Failure, Diagnosis], None]] = {
    "undefined_name": _undefined_name,
    "import_name": _import_name,
    "missing_module": _missing_module,
    "attribute": _attribute,
    "not_a_function": _attribute,
    "module_attribute": _module_attribute,
    "unexpected_keyword": _call_signature,
    "missing_arguments": _call_signature,
    "too_many_arguments": _call_signature,
    "none_value": _none_guard,
    "none_attribute": _none_guard,
    "index": _none_guard,
    "zero_division": _none_guard,
    "key_error": _none_guard,
}


# --- mutations ----------------------------------------------------------------------------------


def _mutation_candidates(
    ctx: _Context,
    suspects: Sequence[Suspect],
    order: tuple[str, ...],
    raised: set[tuple[str, int, int]],
) -> None:
    """Mutations of the most suspicious lines; ``raised`` are the raise statements the failures come
    from, whose message mutations are not proposed."""
    failures = ctx.request.task.failures
    head = failures[0] if failures else None
    by_file: dict[str, list[Suspect]] = {}
    for s in suspects:
        if is_test_path(s.path) and not ctx.include_tests:
            continue
        by_file.setdefault(s.path, []).append(s)
    per_line: dict[tuple[str, int], list[Mutation]] = {}
    for path in sorted(by_file):
        pf = ctx.ws.parsed(path)
        if pf is None:
            continue
        fs = ctx.table.file(path)
        lines = [s.line for s in by_file[path]]
        spans = [(a, b) for p, a, b in raised if p == path]
        for m in mutate(pf, lines, symbols=fs, class_fields=lambda c: _fields_of(ctx.table, c)):
            if m.context == MESSAGE and any(a <= m.start and m.end <= b for a, b in spans):
                continue  # the message of the raise that failed cannot decide whether it raises
            per_line.setdefault((path, m.line), []).append(m)
    taken = 0
    for s in suspects:
        muts = per_line.get((s.path, s.line))
        if not muts:
            continue
        taken += 1
        if taken > MAX_MUTATED_LINES:
            break
        muts = sorted(
            muts,
            key=lambda m: (
                _CONTEXTS.index(m.context),
                order.index(m.operator),
                m.column,
                m.start,
                m.order,
                m.replacement,
            ),
        )
        for m in muts[:MAX_MUTATIONS_PER_LINE]:
            where = f"`{s.path}:{m.line}`" + (f" (`{s.function}`)" if s.function else "")
            reason = pattern_reason(m.operator)
            if m.note == UNUSED:
                reason = f"`{m.replacement}` is in scope but never read, a sign it was meant to be used"
            if head is not None:
                why = f"`{head.test_id}` fails with `{_failure_text(head)}` and this line is on its path; {reason}"
            else:
                why = reason
            ctx.add(
                {s.path: [(m.start, m.end, m.replacement)]},
                m.operator,
                f"Changed {m.describe()} in {where}: {why}.",
                weight=s.weight,
                prior=PRIOR_MUTATION
                + order.index(m.operator)
                - (order.index(m.operator) + 0.5) * (m.note == UNUSED)
                + PRIOR_TEXT * (m.context == TEXT),
                path=s.path,
                line=m.line,
                column=m.column,
                band=BAND_MESSAGE if m.context == MESSAGE else 0,
            )


def _fields_of(table: SymbolTable, cls: str) -> list[str]:
    out: list[str] = []
    for c in table.classes_named(cls):
        out.extend(c.fields)
    return list(dict.fromkeys(out))


# ---------------------------------------------------------------------------------------------
# The proposer


class TemplateProposer:
    """Tier 0: template and mutation candidates from the failure and the symbol index; no model,
    zero cost. Deterministic: identical requests give identical proposals."""

    name = PROPOSER

    def __init__(self, *, max_candidates_per_round: int = 40) -> None:
        self.max_candidates_per_round = max_candidates_per_round
        self._symbols: dict[tuple[str, int], FileSymbols] = {}
        self._parsed: dict[tuple[str, int], ParsedFile] = {}

    def propose(self, request: ProposalRequest, remaining: Budget) -> list[Proposal]:
        """Up to ``min(n, max_candidates_per_round, remaining.executions)`` new candidates, best first."""
        limit = min(request.n, self.max_candidates_per_round, remaining.executions)
        if limit <= 0:
            return []
        try:
            return self._propose(request, limit)
        except Exception as exc:  # errors are data in the loop: never raise for template trouble
            log.warning("tier0.failed", error=f"{type(exc).__name__}: {exc}")
            return []

    def _propose(self, request: ProposalRequest, limit: int) -> list[Proposal]:
        if len(self._symbols) > 20_000:
            self._symbols.clear()
        task = request.task
        feedback = [f for fb in request.feedback for f in fb.failures]
        named = [
            path
            for f in [*task.failures, *feedback]
            for path in (f.path, *(fr.path for fr in f.frames), f.test_id.partition("::")[0])
            if path
        ]
        table = SymbolTable.build(
            request.source, cache=self._symbols, priority=[*named, *(p for p, _ in task.hints)]
        )
        ws = _Workspace(request.source, table, self._parsed)
        include_tests = task.about_tests
        suspects = localize(
            task.failures,
            table,
            hints=task.hints,
            feedback=feedback,
            include_tests=include_tests,
            parse=ws.parsed,
            call_path=request.call_path,
        )
        weights = {(s.path, s.line): s.weight for s in suspects}
        ctx = _Context(request, ws, table, weights, include_tests)
        seen_diag: set[tuple[str, Diagnosis]] = set()
        for failure in [*task.failures, *feedback]:
            for diag in diagnose(failure):
                key = (failure.path or failure.test_id, diag)
                if key in seen_diag:
                    continue
                seen_diag.add(key)
                template = _TEMPLATES.get(diag.kind)
                if template is None:
                    continue
                try:
                    template(ctx, failure, diag)
                except Exception as exc:  # one broken template must not hide the others
                    log.warning(
                        "tier0.template_failed", template=diag.kind, error=f"{type(exc).__name__}: {exc}"
                    )
        # A name/import/module that does not exist is a static error: no mutation elsewhere fixes it.
        static = bool(task.failures) and all(
            any(d.kind in _STATIC_KINDS for d in diagnose(f)) for f in task.failures
        )
        if not static:
            raised = raise_sites([*task.failures, *feedback], table, ws.parsed)
            _mutation_candidates(ctx, suspects, _mutation_order(task.failures), raised)
        return self._finish(ctx, limit, request.tried)

    def _finish(self, ctx: _Context, limit: int, tried: frozenset[str]) -> list[Proposal]:
        out: list[Proposal] = []
        keys: set[str] = set()
        results: set[tuple[tuple[str, str], ...]] = set()
        for cand in sorted(ctx.out, key=_Candidate.sort_key):
            if len(out) >= limit:
                break
            edits: list[Edit] = []
            for path in sorted(cand.splices):
                text = ctx.ws.text(path)
                built = build_edits(path, text, cand.splices[path]) if text is not None else None
                if built is None:
                    edits = []
                    break
                edits.extend(built)
            if not edits:
                continue
            proposal = Proposal(
                edits=tuple(edits),
                explanation=cand.explanation,
                proposer=PROPOSER,
                variant=cand.variant,
                usage=Usage(),
            )
            key = proposal.key
            if key in keys or key in tried:
                continue
            keys.add(key)
            new_texts = apply_edits(ctx.ws.text, edits)
            if not new_texts:
                continue
            signature = tuple(
                sorted(
                    (p, hashlib.sha256(t.encode("utf-8", "surrogatepass")).hexdigest())
                    for p, t in new_texts.items()
                )
            )
            if signature in results or any(new_texts[p] == ctx.ws.text(p) for p in new_texts):
                continue
            results.add(signature)
            if not all(_still_parses(ctx.ws, p, t) for p, t in new_texts.items()):
                continue
            out.append(proposal)
        return out


def _still_parses(ws: _Workspace, path: str, new_text: str) -> bool:
    """False when the change introduces a syntax error into a file that parsed cleanly."""
    before = ws.parsed(path)
    if before is None or before.root.has_error:
        return True
    after = parse_file(path, new_text)
    return after is None or not after.root.has_error
