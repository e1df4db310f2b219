"""Suspiciousness ranking of source lines from observed failures (no coverage needed).

A failure's frames (innermost last) and error location are the strongest evidence; around
them, the rest of the enclosing function (lines before the frame line were executed, lines
after it were not), then the repository functions it calls (a call on the failing line of a
test is the function under test). Several failing tests that hit the same line raise it:
weights are averaged over the failures, so a line on every failing path keeps weight ~1.

Frames in test files are used to find the code under test but are not themselves suspects
unless the task is about tests.

With the source trees at hand (``parse``), control flow sharpens this:

- When the innermost repository frame is a deliberate ``raise``/``throw``/``panic``/``assert``, the
  code raised on purpose: the suspects are the conditions that led there (the enclosing
  ``if``/``elif``/``else``/loop/``case`` headers, and the conditions of the earlier early exits that
  were *not* taken), nearest first. Blame as in design by contract: called straight from a test
  (whose inputs are the specification), the function's own decision is wrong and its guards rank
  right after the raise line; called from repository code, the call that passed the arguments
  ranks first and the guards right after it.
- Lines in the body of an early exit before a frame line (``if c: ...; return``) did not run on the
  failing path and count as unexecuted lines.
- In a function reached by a call (the code under test of a failing assertion), the lines the caller
  can observe (return values, conditions, stores, effects and the local values flowing into them)
  rank above the rest (logging, dead locals).
- With the failing tests' call path (one traced run, :class:`jobs.repair.call_path.CallPath`), the
  lines a failing test ran are ranked by their Ochiai score, the evidence above a prior that raises
  a line by at most :data:`PRIOR` of its score (issue #29); lines the trace shows no failing test
  ran are dropped, except a traced function's header (its defaults ran when it was defined), and
  lines it cannot speak for (suspects past its record) keep
  :data:`UNTRACED` of their normalised weight.
- A ``timeout`` failure (a hang, with the frames of where the interruption caught it): the loop
  around the innermost frame that is in a loop is suspect as a whole, its assignments to the names
  of its own condition first.
"""
# Long (~800 lines): the spectrum and the static scores (raise sites, paths) share one function index.

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import tree_sitter as ts

from indexing.languages import is_test_path
from jobs.repair.call_path import CallPath
from jobs.repair.model import Failure, Frame
from jobs.repair.tier0.mutations import message_call
from jobs.repair.tier0.symbols import (
    CALL_TYPES,
    FunctionInfo,
    ParsedFile,
    SymbolTable,
    function_types,
    walk,
)

FRAME_DECAY = 0.8
"""Each frame further out from the innermost one counts this much less."""
BEFORE_FRAME = 0.6
"""Lines of the frame's function before the frame line (executed)."""
AFTER_FRAME = 0.25
"""Lines after the frame line (not executed on the failing path, but may hold the missing case)."""
SIGNATURE = 0.3
TEST_CALLEE_ON_LINE = 0.9
TEST_CALLEE = 0.75
CALLEE_ON_LINE = 0.5
CALLEE = 0.35
SECOND_LEVEL = 0.5
LOCATED = 0.5
"""Test-frame callees count this much less when deeper frames locate the failure in the code."""
HINT = 0.7
HANG_LOOP = 0.9
"""A ``timeout`` failure (a hang): every line of the loop around its innermost frame ran again and
again, so the frame line (wherever the interruption caught it) is no better a suspect than they are."""
HANG_UPDATE = 1.1
"""... and the loop's lines that assign a name its header reads rank first: a loop that never ends is
one whose condition's variables stop moving (``lo = mid`` for ``lo = mid + 1``)."""
FEEDBACK = 0.5
MAX_CALLEES = 4
GUARD = 0.95
"""The nearest condition guarding a deliberate raise, relative to the raise frame (called from a test)
or to its caller's frame (called from repository code); the raise line itself keeps its weight."""
GUARD_DECAY = 0.9
"""Each further guard of the raise counts this much less."""
UNOBSERVED = 0.8
"""Lines of a called function that its caller cannot observe (logging, dead locals)."""

PRIOR = 0.5
"""With a call path: a line's static weight (frames, callees, hints, the change signal), as a share
of the strongest one, raises its Ochiai score by up to this factor (``ochiai * (1 + PRIOR * w)``)."""
UNTRACED = 0.3
"""With a call path that does not cover a line: its normalised static weight counts this much."""

Parse = Callable[[str], ParsedFile | None]
"""Path -> parsed file (None when unreadable or unsupported)."""


@dataclass(frozen=True, slots=True)
class Suspect:
    """A ranked source line."""

    path: str
    line: int
    weight: float
    function: str = ""
    """Qualified name of the enclosing function ('' at module level)."""
    reason: str = ""
    """Strongest evidence: ``error``, ``frame``, ``guard``, ``function``, ``callee``, ``hint``."""


@dataclass(frozen=True, slots=True)
class _Point:
    path: str
    line: int
    weight: float
    test: bool


def failure_frames(failure: Failure, table: SymbolTable) -> list[Frame]:
    """The failure's repository frames (innermost last); synthesized from the test id when the
    runner gave none (``tests/test_x.py::test_y`` -> the whole test function)."""
    frames = [f for f in failure.frames if f.path in table.files]
    if frames:
        return frames
    test_id = failure.test_id
    path, name = "", ""
    if "::" in test_id:
        path, _, rest = test_id.partition("::")
        name = rest.split("::")[-1]
    elif " > " in test_id:
        path, _, rest = test_id.partition(" > ")
        name = ""
    else:
        name = re.split(r"[./]", test_id)[-1]
    name = re.sub(r"\[.*\]$", "", name).strip()
    if path and path in table.files:
        fs = table.files[path]
        for fn in fs.functions:
            if name and fn.name == name:
                return [Frame(path, fn.end_line, fn.qualname)]
        # No named test function (JS callbacks): the whole file is the test body.
        end = max((fn.end_line for fn in fs.functions), default=0)
        return [Frame(path, end, "")] if end else []
    if name:
        hits = sorted(
            (fn for fn in table.functions_named(name) if is_test_path(fn.path)),
            key=lambda f: (f.path, f.start_line),
        )
        if hits:
            return [Frame(hits[0].path, hits[0].end_line, hits[0].qualname)]
    return []


# ---------------------------------------------------------------------------------------------
# Control flow around a frame line (tree-sitter node types shared by the supported languages)

_RAISES = frozenset({"raise_statement", "throw_statement", "throw_expression"})
_PANIC_MACROS = frozenset({"panic", "unreachable", "todo", "unimplemented", "bail"})
_RETURNS = frozenset({"return_statement", "return_expression"})
_YIELDS = frozenset({"yield", "yield_expression", "yield_statement"})
_IFS = frozenset({"if_statement", "elif_clause", "if_expression", "if_let_expression"})
_LOOPS = frozenset(
    {
        "while_statement",
        "while_expression",
        "while_let_expression",
        "for_statement",
        "for_in_statement",
        "enhanced_for_statement",
        "for_expression",
    }
)
_SWITCHES = frozenset(
    {
        "switch_statement",
        "expression_switch_statement",
        "type_switch_statement",
        "match_statement",
        "match_expression",
        "switch_expression",
    }
)
_CASES = frozenset(
    {
        "switch_case",
        "case_clause",
        "expression_case",
        "type_case",
        "match_arm",
        "switch_block_statement_group",
        "switch_rule",
    }
)
_DECISIONS = _IFS | _LOOPS | _SWITCHES | _CASES
_HEADER_FIELDS = frozenset({"condition", "initializer", "value", "subject", "pattern", "label", "type"})
"""Fields of a decision's header (not statements of its body)."""
_HANDLERS = frozenset({"except_clause", "except_group_clause", "catch_clause"})
MAX_TRY_GUARD = 10
"""A raise in an ``except``/``catch`` was led there by its ``try`` body, when that body is short."""
_BLOCKS = frozenset(
    {
        "block",
        "statement_block",
        "statement_list",
        "module",
        "program",
        "source_file",
        "else_clause",
        "switch_case",
        "switch_default",
        "expression_case",
        "default_case",
        "case_clause",
        "switch_block_statement_group",
    }
)
_SCOPES = frozenset(
    {
        "lambda",
        "lambda_expression",
        "arrow_function",
        "function_expression",
        "func_literal",
        "closure_expression",
        "class_definition",
        "class_declaration",
        "class_body",
        "class",
    }
)
_ASSIGNMENTS = frozenset(
    {
        "assignment",
        "augmented_assignment",
        "assignment_expression",
        "augmented_assignment_expression",
        "assignment_statement",
        "short_var_declaration",
        "variable_declarator",
        "let_declaration",
        "compound_assignment_expr",
        "inc_statement",
        "dec_statement",
        "update_expression",
    }
)
_STORES = frozenset(
    {
        "attribute",
        "subscript",
        "member_expression",
        "subscript_expression",
        "selector_expression",
        "index_expression",
        "field_expression",
        "field_access",
        "array_access",
        "pointer_expression",
        "unary_expression",
    }
)
"""Assignment targets that write state the caller can see (``self.x``, ``a[i]``, ``*p``)."""

Rows = tuple[int, int]
"""An inclusive range of 1-based lines."""


@dataclass(frozen=True, slots=True)
class ControlPath:
    """What the syntax says about how execution reached a frame line."""

    raises: bool = False
    """The line is a deliberate raise/throw/panic/assert: the error is the code's own verdict."""
    raise_span: tuple[int, int] = (0, 0)
    """Byte range of that raise statement."""
    guards: tuple[Rows, ...] = ()
    """Condition lines that decided the path to the line, nearest first (for a raise)."""
    skipped: frozenset[int] = field(default_factory=frozenset)
    """Lines of early-exit branches before the line: they did not run on this path."""

    def guard_lines(self) -> frozenset[int]:
        """Every line of every guard."""
        return frozenset(n for a, b in self.guards for n in range(a, b + 1))


def _scope_stop(pf: ParsedFile) -> frozenset[str]:
    return function_types(pf.language) | _SCOPES


def _child_field(node: ts.Node) -> str | None:
    parent = node.parent
    if parent is None:
        return None
    for i, child in enumerate(parent.children):
        if child == node:
            return parent.field_name_for_child(i)
    return None


def _rows(node: ts.Node) -> Rows:
    return node.start_point.row + 1, node.end_point.row + 1


def _is_raise(node: ts.Node, pf: ParsedFile) -> bool:
    """A statement or call that raises on purpose: raise/throw, Go ``panic(...)``, Rust ``panic!``."""
    if node.type in _RAISES:
        return True
    if node.type == "call_expression" and pf.language == "go":
        function = node.child_by_field_name("function")
        return function is not None and function.type == "identifier" and pf.node_text(function) == "panic"
    if node.type == "macro_invocation":
        macro = node.child_by_field_name("macro")
        return macro is not None and pf.node_text(macro) in _PANIC_MACROS
    return False


def _is_exit(node: ts.Node, pf: ParsedFile) -> bool:
    return node.type in _RETURNS or _is_raise(node, pf)


def _header(node: ts.Node) -> Rows:
    """Lines of a decision's header: ``if``/``elif`` up to the condition, a loop or ``switch`` up to
    its body, a ``case`` label's first line."""
    start = node.start_point.row + 1
    if node.type in _CASES:
        return start, start
    condition = node.child_by_field_name("condition")
    if node.type in _IFS and condition is not None:
        return start, condition.end_point.row + 1  # Go: ``if v := f(); v > 1`` includes the initializer
    body = node.child_by_field_name("body") or node.child_by_field_name("consequence")
    if body is None:
        return start, start
    before = body.prev_sibling
    return start, (before.end_point.row + 1) if before is not None else start


def _branch_rows(branch: ts.Node, header: Rows) -> set[int]:
    first, last = _rows(branch)
    return {n for n in range(first, last + 1) if not header[0] <= n <= header[1]}


def _exit_guards(pf: ParsedFile, stmt: ts.Node, stop: frozenset[str]) -> tuple[list[Rows], set[int]]:
    """Conditions of the early exits (return/raise) inside an earlier statement, nearest first, and
    the lines of the branches holding them: reaching a later line means none of them was taken."""
    guards: list[Rows] = []
    skipped: set[int] = set()
    exits = [n for n in walk(stmt, stop=stop) if n != stmt and _is_exit(n, pf)]
    for exit_node in reversed(exits):
        child, up = exit_node, exit_node.parent
        innermost = True
        while up is not None and child != stmt:
            if up.type in _DECISIONS and _child_field(child) not in _HEADER_FIELDS:
                header = _header(up)
                guards.append(header)
                if innermost:
                    skipped |= _branch_rows(child, header)
                    innermost = False
            child, up = up, up.parent
    return guards, skipped


def _statement_on_line(pf: ParsedFile, line: int) -> ts.Node | None:
    if line < 1 or line > pf.line_count:
        return None
    start, end = pf.line_span(line)
    text = pf.data[start:end]
    offset = start + len(text) - len(text.lstrip())
    if offset >= end:
        return None
    return pf.root.descendant_for_byte_range(offset, offset)


def raise_at(pf: ParsedFile, line: int) -> ts.Node | None:
    """The deliberate raise on ``line`` (raise/throw statement, Go ``panic``, Rust ``panic!``, a
    Python ``assert``), or None. One-liners such as ``if (bad) throw new Error(...)`` count."""
    node = _statement_on_line(pf, line)
    stop = _scope_stop(pf)
    statement: ts.Node | None = None
    while node is not None and node.type not in stop:
        if _is_raise(node, pf) or node.type == "assert_statement":
            return node
        if node.parent is not None and node.parent.type in _BLOCKS:
            statement = node
            break
        node = node.parent
    if statement is None:
        return None
    for sub in walk(statement, stop=stop):
        if sub.start_point.row + 1 == line and (_is_raise(sub, pf) or sub.type == "assert_statement"):
            return sub
    return None


def control_path(pf: ParsedFile, line: int) -> ControlPath:
    """How execution reached ``line`` inside its function, from the syntax alone.

    Walking out from the statement on ``line`` to the function: at each level the earlier statements
    of the same block that hold early exits (their conditions were false, their exit branches did
    not run), then the decision whose branch holds the level (``if``/``elif``/``else`` conditions,
    loop headers, ``case`` labels; for an ``else``/``elif`` also the conditions before it), or for
    an ``except``/``catch`` handler the (short) ``try`` body that raised into it.
    Guards are reported only when ``line`` is a deliberate raise.
    """
    raising = raise_at(pf, line)
    node = raising if raising is not None else _statement_on_line(pf, line)
    stop = _scope_stop(pf)
    guards: list[Rows] = []
    skipped: set[int] = set()
    if raising is not None and raising.type == "assert_statement" and raising.named_children:
        guards.append(_rows(raising.named_children[0]))
    child = node
    up = node.parent if node is not None else None
    while child is not None and up is not None and up.type not in stop:
        if up.type in _BLOCKS:
            sibling = child.prev_named_sibling
            while sibling is not None:
                if _child_field(sibling) not in _HEADER_FIELDS and sibling.type != "comment":
                    g, sk = _exit_guards(pf, sibling, stop)
                    guards += g
                    skipped |= sk
                sibling = sibling.prev_named_sibling
        where = _child_field(child)
        if up.type in _HANDLERS and up.parent is not None:
            body = up.parent.child_by_field_name("body")
            if body is not None and body.end_point.row - body.start_point.row < MAX_TRY_GUARD:
                guards.append(_rows(body))
        if up.type in _DECISIONS and where not in _HEADER_FIELDS:
            if up.type in _IFS and where == "alternative":
                # In an else/elif: every earlier condition of the chain was false, its branch skipped.
                earlier = [
                    c
                    for i, c in enumerate(up.children)
                    if c.end_byte <= child.start_byte and up.field_name_for_child(i) == "alternative"
                ]
                for clause in reversed(earlier):
                    header = _header(clause)
                    guards.append(header)
                    consequence = clause.child_by_field_name("consequence")
                    if consequence is not None:
                        skipped |= _branch_rows(consequence, header)
                header = _header(up)
                guards.append(header)
                consequence = up.child_by_field_name("consequence")
                if consequence is not None:
                    skipped |= _branch_rows(consequence, header)
            else:
                guards.append(_header(up))
        child, up = up, up.parent
    if raising is None:
        return ControlPath(skipped=frozenset(skipped))
    ordered = list(dict.fromkeys(guards))
    covered = {n for a, b in ordered for n in range(a, b + 1)}
    return ControlPath(
        raises=True,
        raise_span=(raising.start_byte, raising.end_byte),
        guards=tuple(ordered),
        skipped=frozenset(skipped - covered),
    )


def _names(node: ts.Node, pf: ParsedFile) -> set[str]:
    return {pf.node_text(n) for n in walk(node) if n.type == "identifier"}


def _header_names(node: ts.Node, last_row: int, pf: ParsedFile) -> set[str]:
    """Identifiers of a loop header (the pre-order walk reaches the body after the header)."""
    out: set[str] = set()
    for sub in walk(node):
        if sub.start_point.row + 1 > last_row:
            break
        if sub.type == "identifier":
            out.add(pf.node_text(sub))
    return out


def _targets(node: ts.Node) -> ts.Node | None:
    return (
        node.child_by_field_name("left")
        or node.child_by_field_name("name")
        or node.child_by_field_name("pattern")
        or node.child_by_field_name("argument")
        or (node.named_children[0] if node.type in ("inc_statement", "dec_statement") else None)
    )


def hang_loop(pf: ParsedFile, line: int) -> tuple[Rows, frozenset[int]] | None:
    """The innermost loop around ``line``: its lines, and those of its assignments to a name its
    header reads (None when ``line`` is in no loop)."""
    loop: ts.Node | None = None
    for node in walk(pf.root):
        if node.type in _LOOPS and node.start_point.row + 1 <= line <= node.end_point.row + 1:
            loop = node  # pre-order: a later match is nested in the earlier one
    if loop is None:
        return None
    names = _header_names(loop, _header(loop)[1], pf)
    updates: set[int] = set()
    for sub in walk(loop):
        if sub.type in _ASSIGNMENTS or sub.type in ("update_expression", "inc_statement", "dec_statement"):
            target = _targets(sub)
            if target is not None and _names(target, pf) & names:
                a, b = _rows(sub)
                updates.update(range(a, b + 1))
    return _rows(loop), frozenset(updates)


def observed_lines(pf: ParsedFile, fn: FunctionInfo) -> frozenset[int] | None:
    """Lines of ``fn`` its caller can observe: returned/yielded values, decisions (conditions, loop
    headers, case labels), stores through attributes/subscripts, calls made for their effect (not
    logging), and the local assignments whose values flow into those. None when ``fn`` is not found."""
    node = _function_node(pf, fn)
    if node is None:
        return None
    stop = _scope_stop(pf)
    seeds: set[int] = set()
    needed: set[str] = set()
    bindings: list[tuple[Rows, set[str], ts.Node]] = []
    for sub in walk(node, stop=stop):
        if sub == node:
            continue
        t = sub.type
        if t in _RETURNS or t in _YIELDS or _is_raise(sub, pf):
            a, b = _rows(sub)
            seeds.update(range(a, b + 1))
            if not _is_raise(sub, pf):
                needed |= _names(sub, pf)
        elif t in _DECISIONS:
            a, b = _header(sub)
            seeds.update(range(a, b + 1))
            cond = sub.child_by_field_name("condition") or sub.child_by_field_name("value")
            if cond is not None:
                needed |= _names(cond, pf)
            elif t in _LOOPS:
                needed |= _header_names(sub, b, pf)
        elif t in _ASSIGNMENTS:
            target = _targets(sub)
            if target is None:
                continue
            if target.type in _STORES:
                a, b = _rows(sub)
                seeds.update(range(a, b + 1))
                needed |= _names(sub, pf)
            else:
                bindings.append((_rows(sub), _names(target, pf), sub))
        elif t == "expression_statement" and sub.named_children:
            call = sub.named_children[0]
            if call.type == "await_expression" and call.named_children:
                call = call.named_children[0]
            if call.type in CALL_TYPES and not message_call(call, pf):
                a, b = _rows(sub)
                seeds.update(range(a, b + 1))
                needed |= _names(call, pf)
    taken: set[int] = set()
    changed = True
    while changed:
        changed = False
        for i, (rows, targets, sub) in enumerate(bindings):
            if i not in taken and targets & needed:
                taken.add(i)
                seeds.update(range(rows[0], rows[1] + 1))
                needed |= _names(sub, pf)
                changed = True
    return frozenset(seeds)


def _function_node(pf: ParsedFile, fn: FunctionInfo) -> ts.Node | None:
    types = function_types(pf.language)
    node = _statement_on_line(pf, fn.start_line)
    while node is not None:
        if node.type in types and node.start_point.row + 1 == fn.start_line:
            return node
        node = node.parent
    for sub in walk(pf.root):
        if (
            sub.type in types
            and sub.end_point.row + 1 == fn.end_line
            and sub.start_point.row + 1 >= fn.start_line
        ):
            return sub
    return None


class _Flow:
    """Control-flow facts per file location, computed on demand from parsed files."""

    def __init__(self, parse: Parse | None) -> None:
        self.parse = parse
        self._paths: dict[tuple[str, int], ControlPath | None] = {}
        self._observed: dict[tuple[str, int], frozenset[int] | None] = {}

    def path(self, path: str, line: int) -> ControlPath | None:
        key = (path, line)
        if key not in self._paths:
            pf = self.parse(path) if self.parse is not None else None
            self._paths[key] = control_path(pf, line) if pf is not None else None
        return self._paths[key]

    def observed(self, fn: FunctionInfo) -> frozenset[int] | None:
        key = (fn.path, fn.start_line)
        if key not in self._observed:
            pf = self.parse(fn.path) if self.parse is not None else None
            self._observed[key] = observed_lines(pf, fn) if pf is not None else None
        return self._observed[key]


class _Scores:
    """Per-failure maximum weight of each line, with the reason and function that produced it."""

    def __init__(self) -> None:
        self.best: dict[tuple[str, int], tuple[float, str, str]] = {}

    def add(self, path: str, line: int, weight: float, reason: str, function: str) -> None:
        key = (path, line)
        current = self.best.get(key)
        if current is None or weight > current[0]:
            self.best[key] = (weight, reason, function)


def _resolve_callees(table: SymbolTable, caller: FunctionInfo, name: str, method: bool) -> list[FunctionInfo]:
    """Repository functions a call named ``name`` inside ``caller`` may reach (bounded)."""
    hits = [fn for fn in table.functions_named(name) if not is_test_path(fn.path)]
    if not method:
        for cls in table.classes_named(name):
            hits += [
                fn
                for fn in table.functions_named("__init__") + table.functions_named("constructor")
                if fn.container == cls.name and fn.path == cls.path
            ]
    if len(hits) <= MAX_CALLEES:
        return sorted(hits, key=lambda f: (f.path, f.start_line))
    caller_fs = table.files.get(caller.path)
    imported = {imp.module.split(".")[-1].split("/")[-1] for imp in caller_fs.imports} if caller_fs else set()

    def rank(fn: FunctionInfo) -> tuple[int, str, int]:
        stem = posixpath.splitext(posixpath.basename(fn.path))[0]
        near = 0 if fn.path == caller.path else 1 if stem in imported else 2
        return near, fn.path, fn.start_line

    return sorted(hits, key=rank)[:MAX_CALLEES]


def _add_function(
    scores: _Scores,
    fn: FunctionInfo,
    weight: float,
    reason: str,
    *,
    pivot: int | None,
    include_tests: bool,
    skipped: frozenset[int] = frozenset(),
    observed: frozenset[int] | None = None,
) -> None:
    """Weigh every line of ``fn``: around a frame line (``pivot``) executed lines before it beat
    the rest, ``skipped`` lines count as unexecuted; without a pivot (a called function) the lines
    outside ``observed`` (when known) count less."""
    if is_test_path(fn.path) and not include_tests:
        return
    for line in range(fn.start_line, fn.end_line + 1):
        if line == fn.start_line:
            w = weight * SIGNATURE
        elif pivot is None:
            w = weight if observed is None or line in observed else weight * UNOBSERVED
        elif line == pivot:
            continue
        elif line < pivot and line not in skipped:
            w = weight * BEFORE_FRAME * (1.0 - min(pivot - line, 40) / 200)
        else:
            w = weight * AFTER_FRAME
        scores.add(fn.path, line, w, reason, fn.qualname)


def _points(failure: Failure, table: SymbolTable) -> list[_Point]:
    """The failure's locations, strongest first: its own path/line, then frames innermost first."""
    points: list[_Point] = []
    if failure.path and failure.line and failure.path in table.files:
        points.append(_Point(failure.path, failure.line, 1.0, is_test_path(failure.path)))
    depth = 0
    for frame in reversed(failure_frames(failure, table)):
        if points and (frame.path, frame.line) == (points[0].path, points[0].line):
            depth += 1
            continue
        points.append(_Point(frame.path, frame.line, FRAME_DECAY**depth, is_test_path(frame.path)))
        depth += 1
    return points


def code_frame(failure: Failure, table: SymbolTable) -> tuple[str, int] | None:
    """The strongest location of ``failure`` outside test files (normally the innermost repository
    frame), or None when every location is in a test."""
    return next(((p.path, p.line) for p in _points(failure, table) if not p.test), None)


def raise_sites(failures: Iterable[Failure], table: SymbolTable, parse: Parse) -> set[tuple[str, int, int]]:
    """(path, start byte, end byte) of the deliberate raises the failures come from (their
    :func:`code_frame` is a raise/throw/panic/assert): their message cannot change the outcome."""
    out: set[tuple[str, int, int]] = set()
    for failure in failures:
        where = code_frame(failure, table)
        pf = parse(where[0]) if where is not None else None
        if where is None or pf is None:
            continue
        node = raise_at(pf, where[1])
        if node is not None:
            out.add((where[0], node.start_byte, node.end_byte))
    return out


def _score_failure(
    failure: Failure,
    table: SymbolTable,
    *,
    include_tests: bool,
    seen_callees: set[tuple[str, int]],
    flow: _Flow,
) -> _Scores:
    scores = _Scores()
    points = _points(failure, table)
    # Functions that are frames themselves: their frame line says more than a callee expansion.
    framed = {
        (fn.path, fn.start_line) for p in points if (fn := table.function_at(p.path, p.line)) is not None
    }
    # With frames inside the code under test, the traceback already says where execution went.
    located = any(not p.test for p in points)
    innermost = next((p for p in points if not p.test), None)
    for point in points:
        fn = table.function_at(point.path, point.line)
        qual = fn.qualname if fn else ""
        if not point.test or include_tests:
            reason = "error" if point is points[0] and failure.line == point.line else "frame"
            scores.add(point.path, point.line, point.weight, reason, qual)
        if fn is None:
            continue
        control = flow.path(point.path, point.line) if not point.test else None
        skipped = control.skipped if control is not None else frozenset()
        _add_function(
            scores,
            fn,
            point.weight,
            "function",
            pivot=point.line,
            include_tests=include_tests,
            skipped=skipped,
        )
        # A deliberate raise: the conditions that led there are the suspects, nearest first.
        raising = control is not None and control.raises and point is innermost
        guard_lines: frozenset[int] = frozenset()
        if raising and control is not None:
            guard_lines = control.guard_lines()
            at = points.index(point)
            caller = points[at + 1] if at + 1 < len(points) else None
            base = caller.weight if caller is not None and not caller.test else point.weight
            for i, (first, last) in enumerate(control.guards):
                w = base * GUARD * GUARD_DECAY**i
                for line in range(max(first, fn.start_line + 1), min(last, fn.end_line) + 1):
                    scores.add(point.path, line, w, "guard", qual)
        for call in fn.calls:
            if call.line > point.line or call.line in skipped:
                continue
            # Calls in a raise's message do not decide anything; calls in its guards do.
            on_line = call.line in guard_lines if raising else call.line == point.line
            if point.test:
                factor = TEST_CALLEE_ON_LINE if on_line else TEST_CALLEE
                if located:
                    factor *= LOCATED
            else:
                factor = CALLEE_ON_LINE if on_line else CALLEE
            for callee in _resolve_callees(table, fn, call.name, call.method):
                if (callee.path, callee.start_line) in framed:
                    continue  # recursion, or a function the traceback already located
                cw = point.weight * factor
                _add_function(
                    scores,
                    callee,
                    cw,
                    "callee",
                    pivot=None,
                    include_tests=include_tests,
                    observed=flow.observed(callee),
                )
                key = (callee.path, callee.start_line)
                if key in seen_callees:
                    continue
                seen_callees.add(key)
                for sub in callee.calls:
                    for second in _resolve_callees(table, callee, sub.name, sub.method):
                        if second.path == callee.path and second.start_line == callee.start_line:
                            continue
                        _add_function(
                            scores,
                            second,
                            cw * SECOND_LEVEL,
                            "callee",
                            pivot=None,
                            include_tests=include_tests,
                            observed=flow.observed(second),
                        )
    if failure.type == "timeout" and flow.parse is not None:
        # The innermost repository frame inside a loop: a helper the loop calls may be where the
        # interruption caught it, while the loop that never ends is further out.
        for point in (p for p in points if not p.test):
            pf = flow.parse(point.path)
            loop = hang_loop(pf, point.line) if pf is not None else None
            if loop is None:
                continue
            (first, last), updates = loop
            fn = table.function_at(point.path, point.line)
            for line in range(first, last + 1):
                w = point.weight * (HANG_UPDATE if line in updates else HANG_LOOP)
                scores.add(point.path, line, w, "hang", fn.qualname if fn else "")
            break
    return scores


def localize(
    failures: Sequence[Failure],
    table: SymbolTable,
    *,
    hints: Iterable[tuple[str, int]] = (),
    feedback: Sequence[Failure] = (),
    include_tests: bool = False,
    limit: int = 400,
    parse: Parse | None = None,
    call_path: CallPath | None = None,
) -> list[Suspect]:
    """Rank repository lines by suspiciousness, best first (ties by path and line).

    ``feedback`` failures (observed on earlier candidates) count half; ``hints`` are (path, line)
    locations from logs. Test files are excluded unless ``include_tests``. With ``parse`` (path ->
    parsed file), control flow refines the ranking; with ``call_path`` (the failing tests' traced
    lines) the Ochiai scores rank and the static weights are priors (see the module docstring).
    """
    flow = _Flow(parse)
    totals: dict[tuple[str, int], float] = {}
    info: dict[tuple[str, int], tuple[float, str, str]] = {}
    primary = [f for f in failures]
    n = max(1, len(primary))
    for scale, group in ((1.0, primary), (FEEDBACK, list(feedback))):
        for failure in group:
            seen: set[tuple[str, int]] = set()
            scores = _score_failure(failure, table, include_tests=include_tests, seen_callees=seen, flow=flow)
            for key, (weight, reason, function) in scores.best.items():
                totals[key] = totals.get(key, 0.0) + scale * weight / n
                current = info.get(key)
                if current is None or weight > current[0]:
                    info[key] = (weight, reason, function)
    for path, line in hints:
        if path not in table.files or (is_test_path(path) and not include_tests):
            continue
        key = (path, line)
        fn = table.function_at(path, line)
        if totals.get(key, 0.0) < HINT:
            totals[key] = HINT
            info[key] = (HINT, "hint", fn.qualname if fn else "")
        if fn is not None:
            hint_scores = _Scores()
            _add_function(hint_scores, fn, HINT * 0.6, "hint", pivot=line, include_tests=include_tests)
            for k, (w, reason, function) in hint_scores.best.items():
                if totals.get(k, 0.0) < w:
                    totals[k] = w
                    info[k] = (w, reason, function)
    if call_path is not None:
        totals = _with_call_path(totals, info, call_path, table, include_tests)
    ranked = sorted(totals.items(), key=lambda item: (-round(item[1], 6), item[0][0], item[0][1]))
    return [
        Suspect(path, line, round(weight, 6), info[(path, line)][2], info[(path, line)][1])
        for (path, line), weight in ranked[:limit]
    ]


def _with_call_path(
    totals: dict[tuple[str, int], float],
    info: dict[tuple[str, int], tuple[float, str, str]],
    call_path: CallPath,
    table: SymbolTable,
    include_tests: bool,
) -> dict[tuple[str, int], float]:
    """The static weights re-ranked by the traced run (see the module docstring); ``info`` gains the
    ``spectrum`` reason for the lines only the trace names."""
    strongest = max(totals.values(), default=0.0) or 1.0
    out: dict[tuple[str, int], float] = {}
    for path, lines in call_path.lines.items():
        if path not in table.files or (is_test_path(path) and not include_tests):
            continue
        for line, score in lines.items():
            if score <= 0:
                continue
            key = (path, line)
            out[key] = score * (1.0 + PRIOR * totals.get(key, 0.0) / strongest)
            if key not in info:
                fn = table.function_at(path, line)
                info[key] = (score, "spectrum", fn.qualname if fn else "")
    for key, weight in totals.items():
        if key in out:
            continue
        if not call_path.covers(*key):
            out[key] = UNTRACED * weight / strongest
        elif (head := call_path.header_score(*key)) is not None:
            # A signature line (defaults are evaluated at definition time, not by the call):
            # the function ran, so its header is as suspect as its best line, scaled by the prior.
            out[key] = head * weight / strongest
    return out
