"""Classical program-repair mutation operators over tree-sitter syntax trees.

Each operator looks for grammar node types (``binary_expression``, ``comparison_operator``,
``boolean_operator``, unary ``not``/``!``, integer literals, slices, subscripts, call arguments,
identifiers, ``if`` conditions) on the lines it is asked about and yields small, single-splice
:class:`Mutation` values. The node types and operator swap tables live in ``operators.json`` so
that one implementation serves Python, JavaScript/TypeScript, Go, Java and Rust.

Operators (the ``operator`` of a mutation, used as the proposal's ``variant``):

- ``swap_comparison``: ``<`` <-> ``<=`` / ``>`` / ``>=``, ``==`` <-> ``!=``, ``is`` <-> ``is not``...
- ``swap_arithmetic``: ``+`` <-> ``-``, ``*`` <-> ``/``, ``/`` <-> ``//``, augmented assignments.
- ``swap_boolean``: ``and`` <-> ``or``, ``&&`` <-> ``||``.
- ``negate_condition``: negate an if/while/ternary condition, or drop an existing negation.
- ``off_by_one``: integer literal +-1; ``range()``/slice/``.slice()`` bounds and indices +-1;
  ``len(x)`` -> ``len(x) - 1`` / ``+ 1``; ``e - 1`` / ``e + 1`` -> ``e``; ``v = e`` -> ``v = e + 1`` /
  ``e - 1`` when ``v`` is read by the condition of a loop around the assignment (loop progress).
- ``swap_arguments``: swap two adjacent positional call arguments of the same apparent kind.
- ``wrong_variable``: replace a local/parameter with another one in scope; ``self.a`` -> ``self.b``.
- ``wrong_constant``: flip a boolean literal; replace a literal with a nearby one of the same kind.
- ``mutate_clause``: drop one clause of an ``and``/``or`` (``&&``/``||``), or negate one clause.
- ``call_target``: call the sibling function (``min``/``max``, ``startswith``/``endswith``, ...).
- ``swap_variables``: swap two variables of the smallest expression holding both; swapped lambda
  parameters are a ``swap_arguments``.
- ``mutate_return``: return the negation of a predicate (``return p(x)`` -> ``return not p(x)``).

``operators.json`` is the one table of these patterns: names, why each is plausible, their order per
failure kind, the swap tables and the per-language node types.

Each mutation also says where it sits (:attr:`Mutation.context`): in code, in text built by string
interpolation/formatting, or in a *message* (the arguments of a raise/throw/panic, of an exception
constructor, of a logging/print call, or an assert's message). A message cannot change whether code
takes a path, so the proposer ranks message mutations last (or drops them, see ``templates``).
"""
# Long (~950 lines): eight mutation operators over one shared per-file inventory (literals, scopes).

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import tree_sitter as ts

from indexing.languages import family as language_family
from jobs.repair.tier0.symbols import (
    FileSymbols,
    FunctionInfo,
    ParsedFile,
    callee_name,
    function_types,
    similarity,
)

_DATA = Path(__file__).with_name("operators.json")


@cache
def _operator_table() -> dict[str, Any]:
    """The operator table shipped with ARCS (``operators.json``), read once."""
    data: dict[str, Any] = json.loads(_DATA.read_text(encoding="utf-8"))
    return data


OPERATORS: tuple[str, ...] = tuple(_operator_table()["patterns"])
"""Every mutation operator, in ``operators.json``'s ``patterns`` order (the ``operator`` of a mutation)."""
UNUSED = "unused variable"
"""``Mutation.note`` of a wrong-variable mutation that puts a never-read variable to use."""
CODE = ""
"""``Mutation.context`` of a mutation in ordinary code."""
TEXT = "text"
"""``Mutation.context`` inside string interpolation/formatting whose result is data (returned, compared)."""
MESSAGE = "message"
"""``Mutation.context`` inside an error, log or assert message."""
_RAISES = frozenset({"raise_statement", "throw_statement", "throw_expression"})
_INTERPOLATIONS = frozenset({"interpolation", "template_substitution", "string_interpolation"})
_PANIC_MACROS = frozenset({"panic", "unreachable", "todo", "unimplemented", "bail"})
_MESSAGE_FUNCTIONS = frozenset({"print", "panic", "warn"})
"""Plain calls whose arguments are only a message (Python ``print``/``warnings.warn``, Go ``panic``)."""
_LOGGERS = re.compile(r"^_*(?:console|log|logger|logging|warnings)$", re.IGNORECASE)
"""Receivers whose every method takes a message: ``console.error(...)``, ``logger.info(...)``."""
_RECEIVER_METHODS = {
    "fmt": re.compile(r"^(?:Print|Fprint|Errorf$)"),
    "errors": re.compile(r"^(?:New|Errorf)$"),
    "t": re.compile(r"^(?:Error|Fatal|Log|Skip)"),
    "b": re.compile(r"^(?:Error|Fatal|Log|Skip)"),
}
_IMPORTS = frozenset({"import_spec", "import_statement", "export_statement"})
_EXCEPTION_CLASS = re.compile(r"^(?:[A-Z]\w*(?:Error|Exception|Warning)|Error|Exception)$")
_SIMPLE = frozenset(
    {
        "identifier",
        "call",
        "call_expression",
        "attribute",
        "member_expression",
        "selector_expression",
        "field_expression",
        "field_access",
        "method_invocation",
        "subscript",
        "subscript_expression",
        "index_expression",
        "array_access",
        "parenthesized_expression",
        "true",
        "false",
        "none",
        "integer",
        "number",
        "int_literal",
        "this",
        "self",
    }
)
_SEQUENCE_PARENTS = frozenset(
    {"expression_list", "pattern_list", "tuple_pattern", "list_pattern", "array_pattern", "object_pattern"}
)
_NOT_READ_FIELDS = frozenset(
    {"name", "function", "alias", "key", "pattern", "attribute", "property", "field", "label", "type"}
)
_ASSIGNMENTS = frozenset(
    {
        "assignment",
        "augmented_assignment",
        "assignment_expression",
        "augmented_assignment_expression",
        "assignment_statement",
        "short_var_declaration",
        "compound_assignment_expr",
        "for_statement",
        "for_in_statement",
        "range_clause",
        "assignment_pattern",
    }
)
_NOT_READ_PARENTS = frozenset(
    {
        "parameters",
        "typed_parameter",
        "typed_default_parameter",
        "list_splat_pattern",
        "dictionary_splat_pattern",
        "rest_pattern",
        "variadic_parameter_declaration",
        "self_parameter",
        "formal_parameters",
        "parameter_list",
        "lambda_parameters",
        "parameter_declaration",
        "formal_parameter",
        "parameter",
        "dotted_name",
        "aliased_import",
        "import_statement",
        "import_from_statement",
        "import_specifier",
        "global_statement",
        "nonlocal_statement",
        "decorator",
        "as_pattern_target",
        "for_in_clause",
        "keyword_argument",
        "labeled_statement",
        "shorthand_property_identifier",
        "function_declaration",
        "method_definition",
        "class_definition",
        "function_definition",
        "variable_declarator",
        "range_clause",
        "short_var_declaration",
    }
)
_RECEIVERS = frozenset({"self", "cls", "this"})


@dataclass(frozen=True, slots=True)
class LanguageConfig:
    """Grammar node types and operator spellings of one language (from ``operators.json``)."""

    operators: frozenset[str]
    binary: frozenset[str]
    negations: frozenset[str]
    conditions: tuple[tuple[str, str], ...]
    integer: frozenset[str]
    floats: frozenset[str]
    string: frozenset[str]
    boolean_types: frozenset[str]
    booleans: tuple[tuple[str, str], ...]
    calls: frozenset[str]
    keyword_arguments: frozenset[str]
    subscripts: tuple[tuple[str, str], ...]
    slices: frozenset[str]
    length_calls: frozenset[str]
    length_members: frozenset[str]
    range_calls: frozenset[str]
    slice_methods: frozenset[str]
    identifier: frozenset[str]
    receiver: str
    negate: str
    negate_compound: str
    lambdas: frozenset[str]
    returns: frozenset[str]


@cache
def _load() -> tuple[dict[str, dict[str, tuple[str, ...]]], dict[str, LanguageConfig]]:
    data = _operator_table()
    swaps = {
        operator: {op: tuple(repl) for op, repl in table.items()} for operator, table in data["swaps"].items()
    }
    configs: dict[str, LanguageConfig] = {}
    for name, raw in data["languages"].items():
        configs[name] = LanguageConfig(
            operators=frozenset(raw["operators"]),
            binary=frozenset(raw["binary"]),
            negations=frozenset(raw["not"]),
            conditions=tuple(sorted(raw["conditions"].items())),
            integer=frozenset(raw["integer"]),
            floats=frozenset(raw["float"]),
            string=frozenset(raw["string"]),
            boolean_types=frozenset(raw["boolean_types"]),
            booleans=tuple(sorted(raw["booleans"].items())),
            calls=frozenset(raw["calls"]),
            keyword_arguments=frozenset(raw["keyword_arguments"]),
            subscripts=tuple(sorted(raw["subscripts"].items())),
            slices=frozenset(raw["slices"]),
            length_calls=frozenset(raw["length_calls"]),
            length_members=frozenset(raw["length_members"]),
            range_calls=frozenset(raw["range_calls"]),
            slice_methods=frozenset(raw["slice_methods"]),
            identifier=frozenset(raw["identifier"]),
            receiver=raw["receiver"],
            negate=raw["negate"],
            negate_compound=raw["negate_compound"],
            lambdas=frozenset(raw.get("lambdas", ())),
            returns=frozenset(raw.get("returns", ())),
        )
    return swaps, configs


def language_config(language: str) -> LanguageConfig | None:
    """The mutation config of ``language`` (TypeScript/TSX share JavaScript's)."""
    _, configs = _load()
    return configs.get(language_family(language))


def swap_table(operator: str) -> dict[str, tuple[str, ...]]:
    """Operator spelling -> replacements, for one swap operator class."""
    swaps, _ = _load()
    return swaps.get(operator, {})


@cache
def _patterns() -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    data = _operator_table()
    return dict(data["patterns"]), {k: tuple(v) for k, v in data["order"].items()}


def pattern_reason(operator: str) -> str:
    """Why a mutation by ``operator`` is a plausible fix (``operators.json`` ``patterns``)."""
    return _patterns()[0].get(operator, "")


def operator_order(kind: str) -> tuple[str, ...]:
    """Operators most plausible first for a failure ``kind`` (``default``, ``index``, ``arithmetic``,
    ``type``); operators a kind does not list come last, in :data:`OPERATORS` order."""
    orders = _patterns()[1]
    listed = orders.get(kind, orders["default"])
    return (*listed, *(op for op in OPERATORS if op not in listed))


@dataclass(frozen=True, slots=True)
class Mutation:
    """One single-splice change: bytes [start, end) of the file become ``replacement``."""

    operator: str
    line: int
    """1-based line the change is about (the operator token's or the node's first line)."""
    column: int
    start: int
    end: int
    replacement: str
    original: str
    note: str = ""
    context: str = CODE
    """:data:`CODE`, :data:`TEXT` or :data:`MESSAGE`: where the changed code sits."""
    order: int = 0
    """Position of the replacement among its operator's alternatives (most plausible first)."""

    def describe(self) -> str:
        """``a < b`` -> ``a <= b`` style summary (single-line, shortened)."""
        return f"`{_short(self.original)}` to `{_short(self.replacement)}`"

    def apply(self, data: bytes) -> bytes:
        """The file bytes with this mutation applied."""
        return data[: self.start] + self.replacement.encode("utf-8", "surrogatepass") + data[self.end :]


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _field_of(node: ts.Node) -> str | None:
    parent = node.parent
    if parent is None:
        return None
    for i, child in enumerate(parent.children):
        if child == node:
            return parent.field_name_for_child(i)
    return None


def _is_negative(node: ts.Node, pf: ParsedFile) -> bool:
    parent = node.parent
    if parent is None or parent.type not in ("unary_operator", "unary_expression"):
        return False
    op = parent.child_by_field_name("operator")
    return op is not None and pf.node_text(op) == "-"


class _Context:
    """Per-file state shared by the operators (literal inventories, scopes)."""

    def __init__(
        self,
        pf: ParsedFile,
        cfg: LanguageConfig,
        symbols: FileSymbols | None,
        class_fields: Callable[[str], Sequence[str]] | None,
    ) -> None:
        self.pf = pf
        self.cfg = cfg
        self.symbols = symbols
        self.class_fields = class_fields
        self._literals: dict[str, list[tuple[str, int]]] | None = None
        self._reads: dict[tuple[int, int], dict[str, int]] = {}

    def literals(self, kind: str) -> list[tuple[str, int]]:
        """(text, line) of the file's literals of one kind: ``int`` / ``float`` / ``string``."""
        if self._literals is None:
            found: dict[str, list[tuple[str, int]]] = {"int": [], "float": [], "string": []}
            stack = [self.pf.root]
            while stack:
                node = stack.pop()
                kind_of = self.literal_kind(node)
                if kind_of:
                    found[kind_of].append((self.pf.node_text(node), node.start_point.row + 1))
                    continue
                stack.extend(node.named_children)
            self._literals = found
        return self._literals.get(kind, [])

    def literal_kind(self, node: ts.Node) -> str:
        cfg = self.cfg
        if node.type in cfg.integer or node.type in cfg.floats:
            text = self.pf.node_text(node)
            if re.fullmatch(r"[0-9]+", text):
                return "int"
            return "float" if re.fullmatch(r"[0-9][0-9_]*(\.[0-9_]*)?([eE][-+]?[0-9]+)?", text) else ""
        if node.type in cfg.string:
            text = self.pf.node_text(node)
            if (
                len(text) > 42
                or "\n" in text
                or any(c.type in ("interpolation", "escape_sequence") for c in node.named_children)
            ):
                return ""
            if self.pf.language == "python":
                parent = node.parent
                if parent is not None and parent.type == "expression_statement":
                    return ""  # docstring
                if re.match(r"[a-zA-Z]*[fF]", text):
                    return ""
            return "string"
        return ""

    def reads(self, fn: FunctionInfo) -> dict[str, int]:
        """How often each identifier is read inside ``fn`` (cached per function)."""
        key = (fn.start_line, fn.end_line)
        counts = self._reads.get(key)
        if counts is None:
            counts = {}
            for node in _nodes_on(self.pf.root, list(range(fn.start_line, fn.end_line + 1))):
                if node.type in self.cfg.identifier and _is_read(node):
                    text = self.pf.node_text(node)
                    counts[text] = counts.get(text, 0) + 1
            self._reads[key] = counts
        return counts

    def function_at(self, line: int) -> FunctionInfo | None:
        if self.symbols is None:
            return None
        best: FunctionInfo | None = None
        for fn in self.symbols.functions:
            if fn.contains(line) and (best is None or fn.start_line >= best.start_line):
                best = fn
        return best


def mutate(
    pf: ParsedFile,
    lines: Iterable[int],
    *,
    symbols: FileSymbols | None = None,
    class_fields: Callable[[str], Sequence[str]] | None = None,
) -> list[Mutation]:
    """All mutations of the given lines of ``pf``, deduplicated, in (line, column, operator) order.

    ``symbols`` (the file's :class:`FileSymbols`) enables ``wrong_variable`` on locals/parameters;
    ``class_fields`` (class name -> field names) enables ``self.a`` -> ``self.b``.
    """
    cfg = language_config(pf.language)
    targets = sorted(set(lines))
    if cfg is None or not targets:
        return []
    ctx = _Context(pf, cfg, symbols, class_fields)
    wanted = set(targets)
    out: dict[tuple[int, int, str], Mutation] = {}
    for node in _nodes_on(pf.root, targets):
        for mutation in _node_mutations(node, ctx):
            if mutation.line not in wanted or mutation.replacement == mutation.original:
                continue
            out.setdefault((mutation.start, mutation.end, mutation.replacement), mutation)
    return sorted(
        out.values(),
        key=lambda m: (m.line, OPERATORS.index(m.operator), m.column, m.start, m.end, m.replacement),
    )


def _nodes_on(root: ts.Node, targets: list[int]) -> Iterator[ts.Node]:
    """Named nodes whose line range intersects one of the (sorted) target lines."""
    stack = [root]
    while stack:
        node = stack.pop()
        first, last = node.start_point.row + 1, node.end_point.row + 1
        i = bisect.bisect_left(targets, first)
        if i == len(targets) or targets[i] > last:
            continue
        yield node
        stack.extend(reversed(node.named_children))


def _mk(
    ctx: _Context,
    operator: str,
    anchor: ts.Node,
    node: ts.Node,
    replacement: str,
    note: str = "",
    *,
    order: int = 0,
) -> Mutation:
    return Mutation(
        operator=operator,
        line=anchor.start_point.row + 1,
        column=anchor.start_point.column,
        start=node.start_byte,
        end=node.end_byte,
        replacement=replacement,
        original=ctx.pf.node_text(node),
        note=note,
        context=mutation_context(ctx.pf, node),
        order=order,
    )


def _node_mutations(node: ts.Node, ctx: _Context) -> Iterator[Mutation]:
    cfg = ctx.cfg
    t = node.type
    if t in cfg.binary:
        yield from _binary(node, ctx)
    if t in cfg.negations:
        yield from _unnegate(node, ctx)
    for ctype, field in cfg.conditions:
        if t == ctype:
            yield from _negate(node, field, ctx)
    if t in cfg.integer:
        yield from _integer(node, ctx)
    if t in cfg.integer or t in cfg.floats or t in cfg.string or t in cfg.boolean_types:
        yield from _constant(node, ctx)
    if t in cfg.calls:
        yield from _call(node, ctx)
    for stype, field in cfg.subscripts:
        if t == stype:
            yield from _index(node, field, ctx)
    if t in cfg.slices:
        yield from _slice(node, ctx)
    if cfg.length_members and t in ("member_expression", "field_access", "field_expression"):
        yield from _length_member(node, ctx)
    if t in cfg.identifier:
        yield from _wrong_variable(node, ctx)
    if t in ("attribute", "member_expression", "field_access"):
        yield from _wrong_field(node, ctx)
    if t in _ASSIGNMENT_TYPES:
        yield from _loop_progress(node, ctx)
    if t in cfg.binary:
        yield from _clause(node, ctx)
        yield from _swap_variables(node, ctx)
    if t in cfg.calls:
        yield from _call_target(node, ctx)
        yield from _swap_variables(node, ctx)
    if t in cfg.lambdas:
        yield from _lambda_parameters(node, ctx)
    if t in cfg.returns:
        yield from _return(node, ctx)


# --- operator swaps -----------------------------------------------------------------------------


def _operator_tokens(node: ts.Node) -> list[ts.Node]:
    tokens = [
        c for i, c in enumerate(node.children) if node.field_name_for_child(i) in ("operator", "operators")
    ]
    return tokens


def _is_string(node: ts.Node | None, ctx: _Context) -> bool:
    return node is not None and (
        node.type in ctx.cfg.string or node.type in ("template_string", "concatenated_string")
    )


def _binary(node: ts.Node, ctx: _Context) -> Iterator[Mutation]:
    pf, cfg = ctx.pf, ctx.cfg
    left = node.child_by_field_name("left")
    right = node.child_by_field_name("right")
    if left is None and node.named_children:
        left = node.named_children[0]
    if right is None and len(node.named_children) > 1:
        right = node.named_children[-1]
    for token in _operator_tokens(node):
        op = " ".join(pf.node_text(token).split())
        for operator in ("swap_comparison", "swap_arithmetic", "swap_boolean"):
            replacements = swap_table(operator).get(op)
            if not replacements:
                continue
            if (
                operator == "swap_arithmetic"
                and op in ("+", "+=")
                and (_is_string(left, ctx) or _is_string(right, ctx))
            ):
                continue  # string concatenation
            for order, repl in enumerate(replacements):
                if repl in cfg.operators:
                    yield _mk(ctx, operator, token, token, repl, order=order)
        # ``e - 1`` / ``e + 1`` -> ``e``: the classic off-by-one adjustment, removed.
        if (
            op in ("+", "-")
            and left is not None
            and right is not None
            and right.type in cfg.integer
            and pf.node_text(right) == "1"
            and node.type
            not in ("augmented_assignment", "augmented_assignment_expression", "assignment_statement")
            and node.type not in ("compound_assignment_expr", "assignment_expression")
        ):
            yield _mk(ctx, "off_by_one", token, node, pf.node_text(left), "drop +-1")


def _negation_operand(node: ts.Node, ctx: _Context) -> ts.Node | None:
    """The operand of a logical negation node, or None when ``node`` is not a ``not``/``!``."""
    pf = ctx.pf
    if node.type == "not_operator":
        return node.child_by_field_name("argument")
    if node.type != "unary_expression":
        return None
    op = node.child_by_field_name("operator")
    if op is None:
        op = next((c for c in node.children if not c.is_named), None)
    if op is None or pf.node_text(op) != "!":
        return None
    operand = node.child_by_field_name("argument") or node.child_by_field_name("operand")
    if operand is None and node.named_children:
        operand = node.named_children[-1]
    return operand


def _unnegate(node: ts.Node, ctx: _Context) -> Iterator[Mutation]:
    operand = _negation_operand(node, ctx)
    if operand is not None:
        yield _mk(ctx, "negate_condition", node, node, ctx.pf.node_text(operand), "drop negation")


def _is_single_comparison(node: ts.Node, ctx: _Context) -> bool:
    if node.type == "comparison_operator":
        return True
    if node.type == "binary_expression":
        return any(
            " ".join(ctx.pf.node_text(t).split()) in swap_table("swap_comparison")
            for t in _operator_tokens(node)
        )
    return False


def _negate(node: ts.Node, field: str, ctx: _Context) -> Iterator[Mutation]:
    if field.startswith("#"):
        index = int(field[1:])
        cond = node.named_children[index] if len(node.named_children) > index else None
    else:
        cond = node.child_by_field_name(field)
    if cond is None:
        return
    if cond.type == "parenthesized_expression" and len(cond.named_children) == 1:
        cond = cond.named_children[0]
    if _negation_operand(cond, ctx) is not None or _is_single_comparison(cond, ctx):
        return  # dropping the negation / swapping the comparison covers it
    text = ctx.pf.node_text(cond)
    template = ctx.cfg.negate if cond.type in _SIMPLE else ctx.cfg.negate_compound
    yield _mk(ctx, "negate_condition", cond, cond, template.format(text), "negate condition")


# --- off by one ---------------------------------------------------------------------------------


def _integer(node: ts.Node, ctx: _Context) -> Iterator[Mutation]:
    text = ctx.pf.node_text(node)
    if not re.fullmatch(r"[0-9]+", text):
        return
    value = int(text)
    negative = _is_negative(node, ctx.pf)
    yield _mk(ctx, "off_by_one", node, node, str(value + 1), "literal +1")
    if value > 1 or (value == 1 and not negative):
        yield _mk(ctx, "off_by_one", node, node, str(value - 1), "literal -1")
    elif value == 0 and ctx.pf.language == "python" and _in_subscript(node):
        yield _mk(ctx, "off_by_one", node, node, "-1", "last element")


def _in_subscript(node: ts.Node) -> bool:
    parent = node.parent
    return parent is not None and parent.type in ("subscript", "slice")


def _adjusted(node: ts.Node, ctx: _Context) -> bool:
    """True for ``e + 1`` / ``e - 1`` (handled by dropping the adjustment)."""
    if node.type not in ctx.cfg.binary:
        return False
    right = node.child_by_field_name("right")
    tokens = _operator_tokens(node)
    return (
        right is not None
        and right.type in ctx.cfg.integer
        and bool(tokens)
        and ctx.pf.node_text(tokens[0]) in ("+", "-")
    )


def _bound(node: ts.Node, ctx: _Context, note: str) -> Iterator[Mutation]:
    """``X`` -> ``X + 1`` / ``X - 1`` for a non-literal bound or index expression."""
    if node.type in ctx.cfg.integer or node.type in ctx.cfg.string or _adjusted(node, ctx):
        return
    if (
        node.type in ("unary_operator", "unary_expression")
        and node.named_children
        and node.named_children[-1].type in ctx.cfg.integer
    ):
        return
    text = ctx.pf.node_text(node)
    tokens = _operator_tokens(node) if node.type in ctx.cfg.binary else []
    additive = len(tokens) == 1 and ctx.pf.node_text(tokens[0]) in ("+", "-")  # ``a + b + 1`` needs no parens
    base = text if node.type in _SIMPLE or additive else f"({text})"
    yield _mk(ctx, "off_by_one", node, node, f"{base} + 1", note)
    yield _mk(ctx, "off_by_one", node, node, f"{base} - 1", note)


_ASSIGNMENT_TYPES = frozenset({"assignment", "assignment_expression", "assignment_statement"})
_WHILE_TYPES = frozenset({"while_statement", "while_expression", "do_statement", "for_statement"})


def _loop_progress(node: ts.Node, ctx: _Context) -> Iterator[Mutation]:
    """``v = e`` -> ``v = e + 1`` / ``e - 1`` when ``v`` is read by the condition of a loop around it:
    a loop variable that is assigned without moving past ``e`` (``lo = mid``) never ends the loop."""
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if left is None or right is None or left.type not in ctx.cfg.identifier:
        return
    name = ctx.pf.node_text(left)
    loop = node.parent
    while loop is not None and loop.type not in _WHILE_TYPES:
        loop = loop.parent
    condition = loop.child_by_field_name("condition") if loop is not None else None
    if condition is None or not re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", ctx.pf.node_text(condition)):
        return
    yield from _bound(right, ctx, "loop progress")


def _call(node: ts.Node, ctx: _Context) -> Iterator[Mutation]:
    cfg, pf = ctx.cfg, ctx.pf
    name, method = callee_name(node, pf)
    args_node = node.child_by_field_name("arguments")
    if args_node is None:
        return
    positional = [
        a for a in args_node.named_children if a.type not in cfg.keyword_arguments and a.type != "comment"
    ]
    if name in cfg.range_calls and not method and positional:
        bounds = [positional[0]] if len(positional) == 1 else [positional[1], positional[0]]
        for bound in bounds:
            yield from _bound(bound, ctx, "range bound")
    if name in cfg.slice_methods and method:
        for bound in positional[:2]:
            yield from _bound(bound, ctx, "slice bound")
    if (name in cfg.length_calls and not method) or (
        name in cfg.length_members and method and not positional
    ):
        yield from _length(node, ctx)
    yield from _swap_arguments(positional, ctx)


def _length(node: ts.Node, ctx: _Context) -> Iterator[Mutation]:
    parent = node.parent
    if parent is not None and _adjusted(parent, ctx) and parent.child_by_field_name("left") == node:
        return
    text = ctx.pf.node_text(node)
    yield _mk(ctx, "off_by_one", node, node, f"{text} - 1", "length -1")
    yield _mk(ctx, "off_by_one", node, node, f"{text} + 1", "length +1")


def _length_member(node: ts.Node, ctx: _Context) -> Iterator[Mutation]:
    prop = node.child_by_field_name("property") or node.child_by_field_name("field")
    parent = node.parent
    if prop is None or ctx.pf.node_text(prop) not in ctx.cfg.length_members:
        return
    if parent is not None and parent.type in ctx.cfg.calls:
        return  # a method call: handled as a call
    if _field_of(node) == "left":
        return
    yield from _length(node, ctx)


def _index(node: ts.Node, field: str, ctx: _Context) -> Iterator[Mutation]:
    if field.startswith("#"):
        index = int(field[1:])
        idx = node.named_children[index] if len(node.named_children) > index else None
        indices = [idx] if idx is not None else []
    else:
        indices = node.children_by_field_name(field)
    if len(indices) != 1:
        return
    idx = indices[0]
    if idx.type in ctx.cfg.slices or idx.type in ("slice", "range_expression"):
        return
    yield from _bound(idx, ctx, "index")


def _slice(node: ts.Node, ctx: _Context) -> Iterator[Mutation]:
    pf = ctx.pf
    if pf.language == "go":
        for field in ("end", "start"):
            bound = node.child_by_field_name(field)
            if bound is not None:
                yield from _bound(bound, ctx, "slice bound")
        return
    # Python ``a:b:c`` / Rust ``a..b``: position relative to the first separator token.
    separators = [c for c in node.children if not c.is_named and pf.node_text(c) in (":", "..", "..=")]
    if not separators:
        return
    first_sep = separators[0].start_byte
    second_sep = separators[1].start_byte if len(separators) > 1 else None
    for child in node.named_children:
        if second_sep is not None and child.start_byte > second_sep:
            continue  # the step
        yield from _bound(child, ctx, "slice bound" if child.start_byte > first_sep else "slice start")


# --- arguments ----------------------------------------------------------------------------------


def _apparent_kind(node: ts.Node, ctx: _Context) -> str:
    cfg = ctx.cfg
    t = node.type
    if t in cfg.integer or t in cfg.floats:
        return "number"
    if t in ("unary_operator", "unary_expression") and node.named_children:
        inner = node.named_children[-1]
        if inner.type in cfg.integer or inner.type in cfg.floats:
            return "number"
    if t in cfg.string or t in ("template_string", "concatenated_string"):
        return "string"
    if t in cfg.boolean_types:
        return "bool"
    if t in ("none", "null", "undefined", "nil", "null_literal"):
        return "none"
    if t in (
        "list",
        "dictionary",
        "tuple",
        "set",
        "array",
        "object",
        "composite_literal",
        "list_comprehension",
    ):
        return "collection"
    if t in ("lambda", "arrow_function", "function_expression", "func_literal", "closure_expression"):
        return "function"
    return "expr"


def _swap_arguments(positional: list[ts.Node], ctx: _Context) -> Iterator[Mutation]:
    pf = ctx.pf
    for i in range(min(len(positional) - 1, 3)):
        a, b = positional[i], positional[i + 1]
        if _apparent_kind(a, ctx) != _apparent_kind(b, ctx):
            continue
        if pf.node_text(a) == pf.node_text(b):
            continue
        between = pf.data[a.end_byte : b.start_byte].decode("utf-8", "surrogatepass")
        original = pf.data[a.start_byte : b.end_byte].decode("utf-8", "surrogatepass")
        yield Mutation(
            operator="swap_arguments",
            line=a.start_point.row + 1,
            column=a.start_point.column,
            start=a.start_byte,
            end=b.end_byte,
            replacement=f"{pf.node_text(b)}{between}{pf.node_text(a)}",
            original=original,
            note=f"arguments {i + 1} and {i + 2}",
            context=mutation_context(pf, a),
        )


# --- variables and constants --------------------------------------------------------------------


def _is_read(node: ts.Node) -> bool:
    """True when an identifier is read (not declared, assigned, called, imported, or a keyword)."""
    current = node
    parent = node.parent
    while parent is not None and parent.type in _SEQUENCE_PARENTS:
        current, parent = parent, parent.parent
    if parent is None or parent.type in _NOT_READ_PARENTS:
        return False
    field = _field_of(current)
    if field in _NOT_READ_FIELDS:
        return False
    return field != "left" or parent.type not in _ASSIGNMENTS


def _wrong_variable(node: ts.Node, ctx: _Context) -> Iterator[Mutation]:
    pf = ctx.pf
    name = pf.node_text(node)
    if name in _RECEIVERS or not _is_read(node):
        return
    line = node.start_point.row + 1
    fn = ctx.function_at(line)
    if fn is None:
        return
    params = [p.name for p in fn.params if p.name and p.kind != "self" and p.name not in _RECEIVERS]
    local_names = [n for n, first in fn.locals if first < line]
    scope = list(dict.fromkeys([*params, *local_names]))
    if name not in scope:
        return
    reads = ctx.reads(fn)
    # A parameter or local that is never read is the classic sign of the variable meant here.
    others = sorted(
        (n for n in scope if n != name), key=lambda n: (reads.get(n, 0) > 0, -similarity(name, n), n)
    )
    for other in others[:3]:
        yield _mk(ctx, "wrong_variable", node, node, other, UNUSED if not reads.get(other) else "variable")


def _wrong_field(node: ts.Node, ctx: _Context) -> Iterator[Mutation]:
    if ctx.class_fields is None or not ctx.cfg.receiver:
        return
    obj = node.child_by_field_name("object")
    attr = (
        node.child_by_field_name("attribute")
        or node.child_by_field_name("property")
        or node.child_by_field_name("field")
    )
    if obj is None or attr is None or ctx.pf.node_text(obj) != ctx.cfg.receiver:
        return
    if _field_of(node) in ("left", "function") or not _is_read(node):
        return
    line = node.start_point.row + 1
    fn = ctx.function_at(line)
    if fn is None or not fn.container:
        return
    name = ctx.pf.node_text(attr)
    fields = [f for f in ctx.class_fields(fn.container) if f != name]
    if name not in ctx.class_fields(fn.container):
        return
    for other in sorted(fields, key=lambda n: (-similarity(name, n), n))[:3]:
        yield _mk(ctx, "wrong_variable", attr, attr, other, "field")


def _constant(node: ts.Node, ctx: _Context) -> Iterator[Mutation]:
    pf, cfg = ctx.pf, ctx.cfg
    text = pf.node_text(node)
    if node.type in cfg.boolean_types:
        flipped = dict(cfg.booleans).get(text)
        if flipped:
            yield _mk(ctx, "wrong_constant", node, node, flipped, "boolean")
        return
    kind = ctx.literal_kind(node)
    if not kind or (kind == "string" and _in_import(node)):
        return
    line = node.start_point.row + 1
    seen = {text}
    if kind == "int":
        seen |= {str(int(text) + 1), str(int(text) - 1)}
    picks: list[str] = []
    for other, _ in sorted(ctx.literals(kind), key=lambda item: (abs(item[1] - line), item[1], item[0])):
        if other in seen:
            continue
        seen.add(other)
        picks.append(other)
        if len(picks) == 2:
            break
    for other in picks:
        yield _mk(ctx, "wrong_constant", node, node, other, kind)


# --- clauses, call targets, swapped variables, returns (issue #29) ------------------------------

_BOOLEAN_OPS = frozenset({"and", "or", "&&", "||"})
_PREDICATE = re.compile(
    r"^(?:is|has|can|should|startswith|endswith|startsWith|endsWith|Has|Is|exists|contains|any|all|isinstance|callable|match|fullmatch|search)",
    re.IGNORECASE,
)


def _negated(node: ts.Node, ctx: _Context) -> str:
    text = ctx.pf.node_text(node)
    simple = node.type in _SIMPLE or node.type in ctx.cfg.calls
    return (ctx.cfg.negate if simple else ctx.cfg.negate_compound).format(text)


def _clause(node: ts.Node, ctx: _Context) -> Iterator[Mutation]:
    """``a and b`` -> ``a`` / ``b`` (a clause too many) and ``not a and b`` / ``a and not b``."""
    tokens = _operator_tokens(node)
    if len(tokens) != 1 or " ".join(ctx.pf.node_text(tokens[0]).split()) not in _BOOLEAN_OPS:
        return
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if left is None or right is None:
        return
    for keep in (left, right):
        yield _mk(ctx, "mutate_clause", tokens[0], node, ctx.pf.node_text(keep), "remove clause")
    for clause in (left, right):
        if _negation_operand(clause, ctx) is None and clause.type not in ctx.cfg.binary:
            yield _mk(ctx, "mutate_clause", clause, clause, _negated(clause, ctx), "negate clause")


def _call_target(node: ts.Node, ctx: _Context) -> Iterator[Mutation]:
    """``min(...)`` -> ``max(...)``: the sibling function from the ``call_target`` table."""
    name, _ = callee_name(node, ctx.pf)
    replacements = swap_table("call_target").get(name)
    if not replacements:
        return
    target = node.child_by_field_name("function") or node
    if target.type not in ctx.cfg.identifier and node.type != "method_invocation":
        for field in ("attribute", "property", "field", "name"):
            sub = target.child_by_field_name(field)
            if sub is not None and ctx.pf.node_text(sub) == name:
                target = sub
                break
    if node.type == "method_invocation":
        target = node.child_by_field_name("name") or target
    if ctx.pf.node_text(target) != name:
        return
    for order, repl in enumerate(replacements):
        yield _mk(ctx, "call_target", target, target, repl, order=order)


def _scope_names(node: ts.Node, ctx: _Context) -> set[str]:
    fn = ctx.function_at(node.start_point.row + 1)
    if fn is None:
        return set()
    line = node.start_point.row + 1
    return {p.name for p in fn.params if p.name and p.name not in _RECEIVERS} | {
        n for n, first in fn.locals if first < line
    }


def _reads_in(node: ts.Node, ctx: _Context, scope: set[str]) -> list[ts.Node]:
    out: list[ts.Node] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in ctx.cfg.identifier and ctx.pf.node_text(n) in scope and _is_read(n):
            out.append(n)
        elif n.type not in ctx.cfg.lambdas:
            stack.extend(n.named_children)
    return sorted(out, key=lambda n: n.start_byte)


def _swap_variables(node: ts.Node, ctx: _Context) -> Iterator[Mutation]:
    """Swap two variables read in ``node``, the smallest binary/call expression holding both."""
    scope = _scope_names(node, ctx)
    if len(scope) < 2:
        return
    reads = _reads_in(node, ctx, scope)
    names = list(dict.fromkeys(ctx.pf.node_text(n) for n in reads))
    if not 2 <= len(names) <= 4:
        return
    inner = [
        c
        for c in node.named_children
        if c.type in ctx.cfg.binary or c.type in ctx.cfg.calls or c.named_children
    ]
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if any({a, b} <= {ctx.pf.node_text(n) for n in _reads_in(c, ctx, scope)} for c in inner):
                continue  # a smaller expression holds both: swapped there
            data = ctx.pf.data
            parts: list[bytes] = []
            at = node.start_byte
            for n in reads:
                text = ctx.pf.node_text(n)
                if text not in (a, b):
                    continue
                parts += [data[at : n.start_byte], (b if text == a else a).encode()]
                at = n.end_byte
            parts.append(data[at : node.end_byte])
            repl = b"".join(parts).decode("utf-8", "surrogatepass")
            yield _mk(ctx, "swap_variables", node, node, repl, f"{a} <-> {b}")


def _lambda_parameters(node: ts.Node, ctx: _Context) -> Iterator[Mutation]:
    """``lambda a, b: ...`` -> ``lambda b, a: ...`` (the callback's arguments come the other way)."""
    params = node.child_by_field_name("parameters") or next(
        (
            c
            for c in node.named_children
            if c.type
            in (
                "lambda_parameters",
                "formal_parameters",
                "parameters",
                "inferred_parameters",
                "closure_parameters",
            )
        ),
        None,
    )
    if params is None:
        return
    simple = [c for c in params.named_children if c.type in ctx.cfg.identifier]
    if len(simple) < 2 or len(simple) != len(params.named_children):
        return
    a, b = simple[0], simple[1]
    between = ctx.pf.data[a.end_byte : b.start_byte].decode("utf-8", "surrogatepass")
    yield Mutation(
        operator="swap_arguments",
        line=a.start_point.row + 1,
        column=a.start_point.column,
        start=a.start_byte,
        end=b.end_byte,
        replacement=f"{ctx.pf.node_text(b)}{between}{ctx.pf.node_text(a)}",
        original=ctx.pf.data[a.start_byte : b.end_byte].decode("utf-8", "surrogatepass"),
        note="lambda parameters",
        context=mutation_context(ctx.pf, a),
    )


def _return(node: ts.Node, ctx: _Context) -> Iterator[Mutation]:
    """``return p(x)`` -> ``return not p(x)`` for a predicate-looking call or name (comparisons and
    boolean operators are mutated by the swaps)."""
    value = next((c for c in node.named_children if c.type != "comment"), None)
    if value is None or value.type in ctx.cfg.binary or _negation_operand(value, ctx) is not None:
        return
    if value.type in ctx.cfg.calls:
        name, _ = callee_name(value, ctx.pf)
    elif value.type in ctx.cfg.identifier or value.type in ("attribute", "member_expression", "field_access"):
        name = ctx.pf.node_text(value).rsplit(".", 1)[-1]
    else:
        return
    if _PREDICATE.match(name):
        yield _mk(ctx, "mutate_return", value, value, _negated(value, ctx), "negate predicate")


# --- where a mutation sits ---------------------------------------------------------------------


def message_call(call: ts.Node, pf: ParsedFile) -> bool:
    """True for a call whose arguments only make a message: an exception constructor
    (``ValueError(...)``, ``new Error(...)``, ``errors.New(...)``), a logging/print call
    (``logger.info``, ``console.error``, ``print``, ``fmt.Printf``, ``t.Errorf``) or a panic."""
    if call.type == "macro_invocation":
        macro = call.child_by_field_name("macro")
        return macro is not None and pf.node_text(macro) in _PANIC_MACROS
    name, method = callee_name(call, pf)
    if not name:
        return False
    if _EXCEPTION_CLASS.match(name):
        return True
    if not method:
        return name in _MESSAGE_FUNCTIONS
    function = (
        call.child_by_field_name("function")
        or call.child_by_field_name("constructor")
        or call.child_by_field_name("type")
    )
    receiver = call.child_by_field_name("object")
    if receiver is None and function is not None:
        receiver = function.child_by_field_name("object") or function.child_by_field_name("operand")
    if receiver is None:
        return False
    last = pf.node_text(receiver).rsplit(".", 1)[-1]
    if _LOGGERS.match(last):
        return True
    pattern = _RECEIVER_METHODS.get(pf.node_text(receiver))
    return pattern is not None and bool(pattern.match(name))


def _string_format(node: ts.Node, child: ts.Node, pf: ParsedFile) -> bool:
    """True when ``child`` is the formatted operand of ``"..." % x`` or an argument of ``"...".format(x)``."""
    if node.type == "binary_operator":
        left = node.child_by_field_name("left")
        op = node.child_by_field_name("operator")
        return (
            left is not None
            and left.type == "string"
            and op is not None
            and pf.node_text(op) == "%"
            and child != left
        )
    if node.type == "call" and _field_of(child) == "arguments":
        function = node.child_by_field_name("function")
        if function is not None and function.type == "attribute":
            obj = function.child_by_field_name("object")
            attr = function.child_by_field_name("attribute")
            return (
                obj is not None
                and obj.type == "string"
                and attr is not None
                and pf.node_text(attr) == "format"
            )
    return False


def mutation_context(pf: ParsedFile, node: ts.Node) -> str:
    """Where ``node`` sits: :data:`MESSAGE` (raise/throw/panic arguments, exception constructors,
    logging/print calls, an assert's message), :data:`TEXT` (string interpolation or formatting)
    or :data:`CODE`. Looks outwards up to the enclosing function."""
    cfg = language_config(pf.language)
    calls = cfg.calls if cfg is not None else frozenset()
    stop = function_types(pf.language) | {"lambda", "class_definition", "class_body"}
    text = False
    child, up = node, node.parent
    while up is not None and up.type not in stop:
        t = up.type
        if t in _RAISES:
            return MESSAGE
        if t == "assert_statement":
            first = up.named_children[0] if up.named_children else None
            if first is not None and child != first:
                return MESSAGE
            break  # the asserted condition is code
        if (
            (t in calls or t == "macro_invocation")
            and child.type in ("argument_list", "arguments", "token_tree")
            and message_call(up, pf)
        ):
            return MESSAGE
        if t in _INTERPOLATIONS or _string_format(up, child, pf):
            text = True
        child, up = up, up.parent
    return TEXT if text else CODE


def _in_import(node: ts.Node) -> bool:
    """True for a module specifier (``import "fmt"``, ``from './a.js'``): another module's name is
    not a plausible constant fix."""
    return node.parent is not None and node.parent.type in _IMPORTS


def apply_all(data: bytes, mutations: Iterable[Mutation]) -> bytes:
    """Apply non-overlapping mutations (right to left)."""
    out = data
    for m in sorted(mutations, key=lambda m: m.start, reverse=True):
        out = m.apply(out)
    return out
