"""Symbol table of a source tree (tree-sitter): definitions, members, signatures, imports.

Tier 0 uses it to resolve a name that no longer exists to the closest one that does (the
common CI break after a rename or a move), to find a function's parameters when a call
signature changed, and to find callees of the failing functions for localization.

Python, JavaScript, TypeScript and Go are covered in depth (imports, exports, members);
Java and Rust get functions, classes and members. Everything is computed from the text
handed in; nothing here touches the file system.
"""
# Long (~1,400 lines): the per-language extractors share one scope walk and are small and interleaved.

from __future__ import annotations

import builtins
import difflib
import posixpath
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

import tree_sitter as ts

from indexing.languages import code_language, family_members, parser_for
from indexing.languages import family as language_family
from jobs.repair.ports import SourceView

_JS_RESOLVE_SUFFIXES = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")

MAX_FILE_BYTES = 512_000
MAX_FILES = 5_000

# Names always visible in Python modules (the interpreter's own builtins).
PYTHON_BUILTINS = frozenset(dir(builtins))


def language_for(path: str) -> str | None:
    """The tree-sitter language of ``path`` by extension, or None when unsupported (declaration
    files such as ``.d.ts`` and ``.pyi`` included: see ``exclusions`` in ``indexing/languages.json``)."""
    return code_language(path, purpose="symbols")


def is_js(language: str) -> bool:
    """JavaScript, TypeScript or TSX: one module system and one symbol space (the ``javascript`` family)."""
    return language_family(language) == "javascript"


def walk(node: ts.Node, *, stop: frozenset[str] = frozenset()) -> Iterator[ts.Node]:
    """Pre-order traversal of named nodes; does not descend below node types in ``stop``."""
    cursor = node.walk()  # a cursor never leaves the node it starts from
    descend = True
    while True:
        if descend:
            current = cursor.node
            if current is not None:
                if current.is_named:
                    yield current
                if (current.type not in stop or current == node) and cursor.goto_first_child():
                    continue
        if cursor.goto_next_sibling():
            descend = True
            continue
        if not cursor.goto_parent():
            return
        descend = False


class ParsedFile:
    """One parsed file: bytes, tree, and line helpers (1-based lines)."""

    __slots__ = ("_line_starts", "data", "language", "path", "text", "tree")

    def __init__(self, path: str, text: str, language: str) -> None:
        self.path = path
        self.text = text
        self.language = language
        self.data = text.encode("utf-8", "surrogatepass")
        self.tree = parser_for(language).parse(self.data)
        self._line_starts = [0, *(m.end() for m in re.finditer(b"\n", self.data))]

    @property
    def root(self) -> ts.Node:
        """The root node of the syntax tree."""
        return self.tree.root_node

    @property
    def line_count(self) -> int:
        """Number of lines (a trailing newline does not open a new line)."""
        n = len(self._line_starts)
        return n - 1 if self.data.endswith(b"\n") else n

    def node_text(self, node: ts.Node) -> str:
        """Source text of ``node``."""
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "surrogatepass")

    def line_span(self, line: int) -> tuple[int, int]:
        """Byte offsets [start, end) of ``line`` without its newline."""
        start = self._line_starts[line - 1]
        end = self._line_starts[line] - 1 if line < len(self._line_starts) else len(self.data)
        return start, end

    def line(self, line: int) -> str:
        """Text of a 1-based line ('' when out of range)."""
        if line < 1 or line > len(self._line_starts):
            return ""
        start, end = self.line_span(line)
        return self.data[start:end].decode("utf-8", "surrogatepass")

    def indent(self, line: int) -> str:
        """Leading whitespace of ``line``."""
        text = self.line(line)
        return text[: len(text) - len(text.lstrip())]


def parse_file(path: str, text: str) -> ParsedFile | None:
    """Parse ``text`` as the language of ``path``; None when the language is unsupported."""
    language = language_for(path)
    if language is None:
        return None
    return ParsedFile(path, text, language)


ParamKind = Literal["positional", "positional_only", "keyword_only", "var_positional", "var_keyword", "self"]


@dataclass(frozen=True, slots=True)
class Param:
    """One declared parameter."""

    name: str
    kind: ParamKind = "positional"
    has_default: bool = False
    type: str = ""


@dataclass(frozen=True, slots=True)
class Call:
    """A call inside a function: callee's simple name, 1-based line, and whether it is a method call."""

    name: str
    line: int
    method: bool = False


@dataclass(frozen=True, slots=True)
class FunctionInfo:
    """A function or method definition."""

    path: str
    name: str
    qualname: str
    container: str
    """Enclosing class / receiver type ('' for free functions)."""
    start_line: int
    end_line: int
    params: tuple[Param, ...] = ()
    calls: tuple[Call, ...] = ()
    locals: tuple[tuple[str, int], ...] = ()
    """Local names with the line of their first binding, in order."""
    language: str = ""

    def contains(self, line: int) -> bool:
        """True when ``line`` is inside the definition."""
        return self.start_line <= line <= self.end_line

    def positional(self) -> tuple[Param, ...]:
        """Parameters a caller passes positionally (no receiver, no star-parameters)."""
        return tuple(p for p in self.params if p.kind in ("positional", "positional_only"))


@dataclass(frozen=True, slots=True)
class ClassInfo:
    """A class-like type: class, struct, interface, object type alias."""

    path: str
    name: str
    start_line: int
    end_line: int
    methods: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()
    bases: tuple[str, ...] = ()

    @property
    def members(self) -> tuple[str, ...]:
        """Methods and fields, deduplicated."""
        return tuple(dict.fromkeys((*self.methods, *self.fields)))


ImportKind = Literal["import", "from", "esm", "require", "go"]


@dataclass(frozen=True, slots=True)
class ImportInfo:
    """One import statement (Python ``import``/``from``, ES module/require, Go import spec)."""

    path: str
    line: int
    end_line: int
    kind: ImportKind
    module: str
    """As written: ``app.util``, ``..util``, ``./dates``, ``example.com/app/util``."""
    names: tuple[tuple[str, str], ...] = ()
    """(imported name, local alias or '') pairs; ``*`` for star/namespace imports."""
    alias: str = ""
    """Local name bound to the module itself (``import a.b as c``, Go ``u "x/util"``)."""
    start_byte: int = 0
    end_byte: int = 0

    def bound_names(self) -> tuple[str, ...]:
        """Local names this import binds."""
        out = [alias or name for name, alias in self.names if name != "*"]
        out += [alias for name, alias in self.names if name == "*" and alias]
        if self.alias:
            out.append(self.alias)
        elif self.kind == "import":
            out.append(self.module.split(".")[0])
        elif self.kind == "go":
            out.append(self.module.rsplit("/", 1)[-1])
        return tuple(out)


@dataclass(frozen=True, slots=True)
class FileSymbols:
    """What one file defines, exports and imports."""

    path: str
    language: str
    module: str
    """Python dotted module, JS/TS path without extension, Go package directory."""
    package: str = ""
    """Go package name."""
    defines: tuple[str, ...] = ()
    exports: tuple[str, ...] = ()
    functions: tuple[FunctionInfo, ...] = ()
    classes: tuple[ClassInfo, ...] = ()
    imports: tuple[ImportInfo, ...] = ()

    def imported_names(self) -> tuple[str, ...]:
        """Names bound by this file's imports."""
        return tuple(dict.fromkeys(n for imp in self.imports for n in imp.bound_names()))


# ---------------------------------------------------------------------------------------------
# Name similarity


_TOKEN = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def name_tokens(name: str) -> frozenset[str]:
    """snake_case / camelCase words of an identifier, lower-cased."""
    return frozenset(t.lower() for t in _TOKEN.findall(name))


def similarity(a: str, b: str) -> float:
    """How alike two identifiers are (0..1): character ratio or shared-words ratio, whichever is higher."""
    if a == b:
        return 1.0
    ratio = difflib.SequenceMatcher(None, a.lower(), b.lower()).ratio()
    if a.lower() == b.lower():
        return 0.99
    ta, tb = name_tokens(a), name_tokens(b)
    shared = ta & tb
    if shared:
        ratio = max(ratio, 0.45 + 0.5 * len(shared) / len(ta | tb))
    return round(ratio, 6)


def closest(name: str, candidates: Iterable[str], *, n: int = 3, cutoff: float = 0.6) -> list[str]:
    """The ``n`` candidates most similar to ``name`` (excluding itself), best first, ties by name."""
    scored: list[tuple[float, str]] = []
    lowered = name.lower()
    for cand in set(candidates):
        if cand == name or not cand:
            continue
        # Cheap upper bound before the full ratio (repositories have many names).
        quick = difflib.SequenceMatcher(None, lowered, cand.lower())
        if quick.real_quick_ratio() < cutoff and not (name_tokens(name) & name_tokens(cand)):
            continue
        score = similarity(name, cand)
        if score >= cutoff:
            scored.append((score, cand))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [cand for _, cand in scored[:n]]


# ---------------------------------------------------------------------------------------------
# Per-language extraction

_FUNCTION_TYPES: dict[str, frozenset[str]] = {
    "python": frozenset({"function_definition"}),
    "javascript": frozenset(
        {
            "function_declaration",
            "generator_function_declaration",
            "method_definition",
            "function_expression",
            "arrow_function",
        }
    ),
    "go": frozenset({"function_declaration", "method_declaration", "func_literal"}),
    "java": frozenset({"method_declaration", "constructor_declaration", "lambda_expression"}),
    "rust": frozenset({"function_item", "closure_expression"}),
}
_FUNCTION_TYPES["typescript"] = _FUNCTION_TYPES["javascript"]
_FUNCTION_TYPES["tsx"] = _FUNCTION_TYPES["javascript"]

_CLASS_TYPES: dict[str, frozenset[str]] = {
    "python": frozenset({"class_definition"}),
    "javascript": frozenset(
        {"class_declaration", "class", "abstract_class_declaration", "interface_declaration"}
    ),
    "go": frozenset({"type_spec"}),
    "java": frozenset(
        {"class_declaration", "interface_declaration", "enum_declaration", "record_declaration"}
    ),
    "rust": frozenset({"struct_item", "enum_item", "trait_item", "union_item"}),
}
_CLASS_TYPES["typescript"] = _CLASS_TYPES["javascript"]
_CLASS_TYPES["tsx"] = _CLASS_TYPES["javascript"]

CALL_TYPES = frozenset(
    {"call", "call_expression", "new_expression", "method_invocation", "object_creation_expression"}
)

_IDENTIFIER_TYPES = frozenset({"identifier", "shorthand_property_identifier_pattern"})


def function_types(language: str) -> frozenset[str]:
    """Node types that open a function scope in ``language``."""
    return _FUNCTION_TYPES.get(language, frozenset())


def callee_name(call: ts.Node, pf: ParsedFile) -> tuple[str, bool]:
    """(simple name of the called function, is a method/attribute call) of a call node; '' if unknown."""
    if call.type == "method_invocation":
        name = call.child_by_field_name("name")
        return (pf.node_text(name) if name else "", call.child_by_field_name("object") is not None)
    if call.type in ("new_expression", "object_creation_expression"):
        target = call.child_by_field_name("constructor") or call.child_by_field_name("type")
    else:
        target = call.child_by_field_name("function")
    if target is None:
        return "", False
    if target.type in ("identifier", "type_identifier"):
        return pf.node_text(target), False
    for field_name in ("attribute", "property", "field", "name"):
        sub = target.child_by_field_name(field_name)
        if sub is not None and sub.type.endswith("identifier"):
            return pf.node_text(sub), True
    if target.type == "scoped_identifier":  # rust a::b
        name = target.child_by_field_name("name")
        return (pf.node_text(name) if name else "", False)
    return "", False


def definition_name(node: ts.Node, pf: ParsedFile) -> str:
    """Declared name of a function/class node ('' for anonymous ones, named after their variable)."""
    name = node.child_by_field_name("name")
    if name is not None:
        return pf.node_text(name)
    parent = node.parent
    if parent is not None and parent.type == "variable_declarator":
        target = parent.child_by_field_name("name")
        if target is not None and target.type == "identifier":
            return pf.node_text(target)
    if parent is not None and parent.type in ("pair", "assignment_expression"):
        target = parent.child_by_field_name("key") or parent.child_by_field_name("left")
        if target is not None:
            text = pf.node_text(target)
            return text.rsplit(".", 1)[-1]
    return ""


def _pattern_identifiers(node: ts.Node, pf: ParsedFile) -> list[str]:
    """Identifiers bound by an assignment target / destructuring pattern."""
    if node.type in _IDENTIFIER_TYPES:
        return [pf.node_text(node)]
    if node.type in (
        "attribute",
        "subscript",
        "member_expression",
        "subscript_expression",
        "selector_expression",
        "index_expression",
        "field_expression",
    ):
        return []
    out: list[str] = []
    for child in node.named_children:
        if child.type in ("pair_pattern",):
            value = child.child_by_field_name("value")
            if value is not None:
                out.extend(_pattern_identifiers(value, pf))
            continue
        if child.type in ("type_annotation", "type"):
            continue
        out.extend(_pattern_identifiers(child, pf))
    return out


def _params(node: ts.Node, pf: ParsedFile) -> tuple[Param, ...]:
    plist = node.child_by_field_name("parameters")
    if plist is None:
        return ()
    lang = pf.language
    out: list[Param] = []
    if lang == "python":
        state: ParamKind = "positional"
        collected: list[Param] = []
        for child in plist.named_children:
            kind = state
            if child.type == "identifier":
                collected.append(Param(pf.node_text(child), kind))
            elif child.type in ("default_parameter", "typed_default_parameter"):
                name = child.child_by_field_name("name")
                typ = child.child_by_field_name("type")
                collected.append(
                    Param(pf.node_text(name) if name else "", kind, True, pf.node_text(typ) if typ else "")
                )
            elif child.type == "typed_parameter":
                ident = next((c for c in child.named_children if c.type == "identifier"), None)
                splat = next(
                    (
                        c
                        for c in child.named_children
                        if c.type in ("list_splat_pattern", "dictionary_splat_pattern")
                    ),
                    None,
                )
                typ = child.child_by_field_name("type")
                if splat is not None:
                    sub = next((c for c in splat.named_children if c.type == "identifier"), None)
                    k: ParamKind = "var_positional" if splat.type == "list_splat_pattern" else "var_keyword"
                    collected.append(Param(pf.node_text(sub) if sub else "", k))
                    if k == "var_positional":
                        state = "keyword_only"
                elif ident is not None:
                    collected.append(
                        Param(pf.node_text(ident), kind, False, pf.node_text(typ) if typ else "")
                    )
            elif child.type == "list_splat_pattern":
                sub = next((c for c in child.named_children if c.type == "identifier"), None)
                collected.append(Param(pf.node_text(sub) if sub else "", "var_positional"))
                state = "keyword_only"
            elif child.type == "dictionary_splat_pattern":
                sub = next((c for c in child.named_children if c.type == "identifier"), None)
                collected.append(Param(pf.node_text(sub) if sub else "", "var_keyword"))
            elif child.type == "keyword_separator":
                state = "keyword_only"
            elif child.type == "positional_separator":
                collected = [Param(p.name, "positional_only", p.has_default, p.type) for p in collected]
        out = collected
        parent = node.parent
        if parent is not None and parent.type == "decorated_definition":
            parent = parent.parent
        in_class = parent is not None and parent.type == "block" and _enclosing_class(node) is not None
        decorators = _decorators(node, pf)
        if (
            in_class
            and out
            and "staticmethod" not in decorators
            and out[0].kind in ("positional", "positional_only")
        ):
            out[0] = Param(out[0].name, "self")
        return tuple(out)
    for child in plist.named_children:
        t = child.type
        if is_js(lang):
            if t == "identifier":
                out.append(Param(pf.node_text(child)))
            elif t == "assignment_pattern":
                left = child.child_by_field_name("left")
                out.append(Param(pf.node_text(left) if left else "", has_default=True))
            elif t == "rest_pattern":
                out.append(Param(pf.node_text(child).lstrip("."), "var_positional"))
            elif t in ("required_parameter", "optional_parameter"):
                pattern = child.child_by_field_name("pattern")
                typ = child.child_by_field_name("type")
                default = child.child_by_field_name("value") is not None or t == "optional_parameter"
                pname = pf.node_text(pattern) if pattern is not None and pattern.type == "identifier" else ""
                if pattern is not None and pattern.type == "rest_pattern":
                    out.append(Param(pf.node_text(pattern).lstrip("."), "var_positional"))
                else:
                    out.append(
                        Param(pname, "positional", default, pf.node_text(typ).lstrip(": ") if typ else "")
                    )
            elif t in ("object_pattern", "array_pattern"):
                out.append(Param(""))
        elif lang == "go":
            if t in ("parameter_declaration", "variadic_parameter_declaration"):
                typ = child.child_by_field_name("type")
                names = child.children_by_field_name("name")
                gkind: ParamKind = "var_positional" if t.startswith("variadic") else "positional"
                tt = pf.node_text(typ) if typ else ""
                if not names:
                    out.append(Param("", gkind, False, tt))
                for ident in names:
                    out.append(Param(pf.node_text(ident), gkind, False, tt))
        elif lang == "java":
            if t in ("formal_parameter", "spread_parameter"):
                name = child.child_by_field_name("name")
                if name is None:
                    name = next((c for c in child.named_children if c.type == "variable_declarator"), None)
                typ = child.child_by_field_name("type")
                out.append(
                    Param(
                        pf.node_text(name) if name else "",
                        "var_positional" if t == "spread_parameter" else "positional",
                        False,
                        pf.node_text(typ) if typ else "",
                    )
                )
        elif lang == "rust":
            if t == "self_parameter":
                out.append(Param("self", "self"))
            elif t == "parameter":
                pattern = child.child_by_field_name("pattern")
                typ = child.child_by_field_name("type")
                out.append(
                    Param(
                        pf.node_text(pattern) if pattern else "",
                        "positional",
                        False,
                        pf.node_text(typ) if typ else "",
                    )
                )
    return tuple(out)


def _receiver(node: ts.Node, pf: ParsedFile) -> tuple[Param, ...]:
    """A Go method's receiver, as a ``self`` parameter."""
    if node.type != "method_declaration" or pf.language != "go":
        return ()
    receiver = node.child_by_field_name("receiver")
    decl = next((c for c in receiver.named_children), None) if receiver is not None else None
    name = decl.child_by_field_name("name") if decl is not None else None
    typ = decl.child_by_field_name("type") if decl is not None else None
    if name is None:
        return ()
    return (Param(pf.node_text(name), "self", False, pf.node_text(typ) if typ is not None else ""),)


def _decorators(node: ts.Node, pf: ParsedFile) -> tuple[str, ...]:
    parent = node.parent
    if parent is None or parent.type != "decorated_definition":
        return ()
    return tuple(pf.node_text(d).lstrip("@").strip() for d in parent.named_children if d.type == "decorator")


def _enclosing_class(node: ts.Node) -> ts.Node | None:
    """The class whose body directly contains ``node`` (a method), if any."""
    parent = node.parent
    while parent is not None and parent.type in (
        "decorated_definition",
        "block",
        "class_body",
        "declaration_list",
    ):
        if parent.type in ("block", "class_body", "declaration_list"):
            owner = parent.parent
            if owner is not None and owner.type in (
                "class_definition",
                "class_declaration",
                "class",
                "abstract_class_declaration",
                "impl_item",
                "trait_item",
                "interface_declaration",
                "enum_declaration",
                "record_declaration",
            ):
                return owner
            return None
        parent = parent.parent
    return None


def _container(node: ts.Node, pf: ParsedFile) -> str:
    if node.type == "method_declaration" and pf.language == "go":
        receiver = node.child_by_field_name("receiver")
        if receiver is not None:
            return go_receiver_type(pf.node_text(receiver))
    owner = _enclosing_class(node)
    if owner is None:
        return ""
    if owner.type == "impl_item":
        typ = owner.child_by_field_name("type")
        return re.sub(r"<.*", "", pf.node_text(typ)) if typ else ""
    return definition_name(owner, pf)


def go_receiver_type(receiver: str) -> str:
    """``(s *Store)`` / ``(Store[T])`` -> ``Store``."""
    text = receiver.strip("() ")
    text = text.split()[-1] if text else ""
    return re.sub(r"\[.*", "", text.lstrip("*"))


_LOCAL_BINDERS: dict[str, frozenset[str]] = {
    "python": frozenset(
        {"assignment", "augmented_assignment", "for_statement", "named_expression", "as_pattern_target"}
    ),
    "javascript": frozenset({"variable_declarator", "for_in_statement"}),
    "go": frozenset({"short_var_declaration", "var_spec", "range_clause", "const_spec"}),
    "java": frozenset({"variable_declarator", "enhanced_for_statement"}),
    "rust": frozenset({"let_declaration", "for_expression"}),
}
_LOCAL_BINDERS["typescript"] = _LOCAL_BINDERS["javascript"]
_LOCAL_BINDERS["tsx"] = _LOCAL_BINDERS["javascript"]


def binder_targets(node: ts.Node, pf: ParsedFile) -> list[str]:
    """Names bound by a local-binding node (assignment, declarator, for target...)."""
    t = node.type
    if t in ("assignment", "augmented_assignment"):
        left = node.child_by_field_name("left")
        return _pattern_identifiers(left, pf) if left is not None else []
    if t in ("for_statement", "for_in_statement", "for_expression"):
        left = node.child_by_field_name("left") or node.child_by_field_name("pattern")
        return _pattern_identifiers(left, pf) if left is not None else []
    if t == "named_expression":
        name = node.child_by_field_name("name")
        return [pf.node_text(name)] if name is not None else []
    if t == "as_pattern_target":
        return _pattern_identifiers(node, pf)
    if t == "variable_declarator":
        name = node.child_by_field_name("name")
        return _pattern_identifiers(name, pf) if name is not None else []
    if t in ("short_var_declaration", "range_clause"):
        left = node.child_by_field_name("left")
        return _pattern_identifiers(left, pf) if left is not None else []
    if t in ("var_spec", "const_spec"):
        return [pf.node_text(n) for n in node.children_by_field_name("name")]
    if t == "enhanced_for_statement":
        name = node.child_by_field_name("name")
        return [pf.node_text(name)] if name is not None else []
    if t == "let_declaration":
        pattern = node.child_by_field_name("pattern")
        return _pattern_identifiers(pattern, pf) if pattern is not None else []
    return []


class _FunctionBuilder:
    """A function being collected during the single pass of :func:`extract`."""

    __slots__ = ("body_start", "calls", "end", "locals", "node")

    def __init__(self, node: ts.Node) -> None:
        self.node = node
        body = node.child_by_field_name("body")
        self.body_start = body.start_byte if body is not None else node.start_byte
        self.end = node.end_byte
        self.calls: list[Call] = []
        self.locals: dict[str, int] = {}

    def owns(self, node: ts.Node) -> bool:
        return node.start_byte >= self.body_start

    def build(self, pf: ParsedFile) -> FunctionInfo:
        node = self.node
        name = definition_name(node, pf)
        container = _container(node, pf)
        return FunctionInfo(
            path=pf.path,
            name=name,
            qualname=".".join(p for p in (container, name) if p),
            container=container,
            start_line=node.start_point.row + 1,
            end_line=node.end_point.row + 1,
            params=_receiver(node, pf) + _params(node, pf),
            calls=tuple(self.calls),
            locals=tuple(self.locals.items()),
            language=pf.language,
        )


def _class_info(node: ts.Node, pf: ParsedFile) -> ClassInfo | None:
    lang = pf.language
    name = definition_name(node, pf)
    methods: list[str] = []
    fields: list[str] = []
    bases: list[str] = []
    if lang == "go":
        typ = node.child_by_field_name("type")
        if typ is None or typ.type not in ("struct_type", "interface_type"):
            return None
        for sub in walk(typ):
            if sub.type == "field_declaration":
                names = sub.children_by_field_name("name")
                if names:
                    fields.extend(pf.node_text(n) for n in names)
                else:
                    embedded = sub.child_by_field_name("type")
                    if embedded is not None:
                        base = pf.node_text(embedded).lstrip("*").rsplit(".", 1)[-1]
                        bases.append(base)
                        fields.append(base)
            elif sub.type in ("method_elem", "method_spec"):
                mname = sub.child_by_field_name("name")
                if mname is not None:
                    methods.append(pf.node_text(mname))
    else:
        body = node.child_by_field_name("body")
        if lang == "python":
            supers = node.child_by_field_name("superclasses")
            if supers is not None:
                bases = [
                    pf.node_text(b).rsplit(".", 1)[-1]
                    for b in supers.named_children
                    if b.type != "keyword_argument"
                ]
        elif is_js(lang) or lang == "java":
            for sub in node.children:
                if sub.type in (
                    "class_heritage",
                    "superclass",
                    "extends_clause",
                    "super_interfaces",
                    "extends_interfaces",
                ):
                    bases.extend(
                        pf.node_text(i) for i in walk(sub) if i.type in ("identifier", "type_identifier")
                    )
        if body is None:
            return ClassInfo(pf.path, name, node.start_point.row + 1, node.end_point.row + 1)
        fn_types = function_types(lang)
        for member in body.named_children:
            target = (
                member.child_by_field_name("definition") if member.type == "decorated_definition" else member
            )
            if target is None:
                continue
            if target.type in fn_types or target.type in ("method_signature", "abstract_method_signature"):
                method_name = definition_name(target, pf)
                if method_name:
                    methods.append(method_name)
            elif target.type in ("public_field_definition", "field_definition", "property_signature"):
                fname = target.child_by_field_name("name") or target.child_by_field_name("property")
                if fname is not None:
                    fields.append(pf.node_text(fname))
            elif target.type == "field_declaration":  # java / rust
                for decl in walk(target):
                    if decl.type == "variable_declarator":
                        vname = decl.child_by_field_name("name")
                        if vname is not None:
                            fields.append(pf.node_text(vname))
                    elif decl.type == "field_identifier":
                        fields.append(pf.node_text(decl))
            elif target.type == "expression_statement" and lang == "python":
                for assign in target.named_children:
                    if assign.type == "assignment":
                        fields.extend(binder_targets(assign, pf))
            elif target.type in ("enum_variant", "enum_constant"):
                vname = target.child_by_field_name("name")
                if vname is not None:
                    fields.append(pf.node_text(vname))
        # Attributes assigned through the receiver anywhere in the class (self.x = / this.x =).
        receiver = {"python": "self", "java": "this"}.get(lang, "this")
        for sub in walk(body):
            if sub.type in ("assignment", "assignment_expression"):
                left = sub.child_by_field_name("left")
                if left is None or left.type not in ("attribute", "member_expression", "field_access"):
                    continue
                obj = left.child_by_field_name("object")
                attr = (
                    left.child_by_field_name("attribute")
                    or left.child_by_field_name("property")
                    or left.child_by_field_name("field")
                )
                if obj is not None and attr is not None and pf.node_text(obj) == receiver:
                    fields.append(pf.node_text(attr))
    return ClassInfo(
        path=pf.path,
        name=name,
        start_line=node.start_point.row + 1,
        end_line=node.end_point.row + 1,
        methods=tuple(dict.fromkeys(methods)),
        fields=tuple(dict.fromkeys(fields)),
        bases=tuple(dict.fromkeys(bases)),
    )


def _string_value(node: ts.Node, pf: ParsedFile) -> str:
    text = pf.node_text(node)
    return text.strip("'\"`")


def _import(
    pf: ParsedFile,
    node: ts.Node,
    kind: ImportKind,
    module: str,
    names: Iterable[tuple[str, str]] = (),
    alias: str = "",
) -> ImportInfo:
    return ImportInfo(
        path=pf.path,
        line=node.start_point.row + 1,
        end_line=node.end_point.row + 1,
        kind=kind,
        module=module,
        names=tuple(names),
        alias=alias,
        start_byte=node.start_byte,
        end_byte=node.end_byte,
    )


def _text_or(pf: ParsedFile, node: ts.Node | None) -> str:
    return pf.node_text(node) if node is not None else ""


_IMPORT_TYPES = frozenset({"import_statement", "import_from_statement", "variable_declarator", "import_spec"})


def _import_infos(node: ts.Node, pf: ParsedFile) -> list[ImportInfo]:
    """The imports one node makes (several for ``import a, b``)."""
    out: list[ImportInfo] = []
    lang = pf.language
    t = node.type
    if lang == "python" and t == "import_statement":
        for name in node.children_by_field_name("name"):
            if name.type == "aliased_import":
                module = _text_or(pf, name.child_by_field_name("name"))
                alias = _text_or(pf, name.child_by_field_name("alias"))
                out.append(_import(pf, node, "import", module, alias=alias))
            else:
                out.append(_import(pf, node, "import", pf.node_text(name)))
    elif lang == "python" and t == "import_from_statement":
        names: list[tuple[str, str]] = []
        for name in node.children_by_field_name("name"):
            if name.type == "aliased_import":
                names.append(
                    (
                        _text_or(pf, name.child_by_field_name("name")),
                        _text_or(pf, name.child_by_field_name("alias")),
                    )
                )
            else:
                names.append((pf.node_text(name), ""))
        if any(c.type == "wildcard_import" for c in node.named_children):
            names.append(("*", ""))
        out.append(_import(pf, node, "from", _text_or(pf, node.child_by_field_name("module_name")), names))
    elif t == "import_statement" and is_js(lang):
        source = node.child_by_field_name("source")
        names = []
        for clause in node.named_children:
            if clause.type != "import_clause":
                continue
            for part in clause.named_children:
                if part.type == "identifier":
                    names.append(("default", pf.node_text(part)))
                elif part.type == "namespace_import":
                    ident = next((c for c in part.named_children if c.type == "identifier"), None)
                    names.append(("*", _text_or(pf, ident)))
                elif part.type == "named_imports":
                    for spec in part.named_children:
                        if spec.type == "import_specifier":
                            names.append(
                                (
                                    _text_or(pf, spec.child_by_field_name("name")),
                                    _text_or(pf, spec.child_by_field_name("alias")),
                                )
                            )
        module = _string_value(source, pf) if source is not None else ""
        out.append(_import(pf, node, "esm", module, names))
    elif t == "variable_declarator" and is_js(lang):
        value = node.child_by_field_name("value")
        target = node.child_by_field_name("name")
        if value is None or target is None or value.type != "call_expression":
            return out
        fn = value.child_by_field_name("function")
        args = value.child_by_field_name("arguments")
        if fn is None or pf.node_text(fn) != "require" or args is None or not args.named_children:
            return out
        spec = args.named_children[0]
        if spec.type != "string":
            return out
        names = []
        if target.type == "identifier":
            names.append(("*", pf.node_text(target)))
        elif target.type == "object_pattern":
            for prop in target.named_children:
                if prop.type == "shorthand_property_identifier_pattern":
                    names.append((pf.node_text(prop), ""))
                elif prop.type == "pair_pattern":
                    names.append(
                        (
                            _text_or(pf, prop.child_by_field_name("key")),
                            _text_or(pf, prop.child_by_field_name("value")),
                        )
                    )
        out.append(_import(pf, node.parent or node, "require", _string_value(spec, pf), names))
    elif lang == "go" and t == "import_spec":
        path_node = node.child_by_field_name("path")
        module = _string_value(path_node, pf) if path_node is not None else ""
        out.append(_import(pf, node, "go", module, alias=_text_or(pf, node.child_by_field_name("name"))))
    return out


def _is_require(declarator: ts.Node, pf: ParsedFile) -> bool:
    value = declarator.child_by_field_name("value")
    if value is None or value.type != "call_expression":
        return False
    fn = value.child_by_field_name("function")
    return fn is not None and pf.node_text(fn) == "require"


def _top_level(pf: ParsedFile) -> tuple[list[str], list[str], str]:
    """(defines, exports, go package name) of a file."""
    defines: list[str] = []
    exports: list[str] = []
    package = ""
    lang = pf.language
    fn_types = function_types(lang)
    class_types = _CLASS_TYPES.get(lang, frozenset())

    def visit(nodes: list[ts.Node], exported: bool) -> None:
        nonlocal package
        for node in nodes:
            t = node.type
            names: list[str] = []
            if t == "method_declaration" and lang == "go":
                continue
            if t == "decorated_definition":
                inner = node.child_by_field_name("definition")
                if inner is not None:
                    names.append(definition_name(inner, pf))
            elif (
                t in fn_types
                or t in class_types
                or t
                in (
                    "type_alias_declaration",
                    "enum_declaration",
                    "interface_declaration",
                    "struct_item",
                    "trait_item",
                    "mod_item",
                    "type_item",
                    "const_item",
                    "static_item",
                    "macro_definition",
                )
            ):
                names.append(definition_name(node, pf))
            elif t in ("expression_statement",) and lang == "python":
                for assign in node.named_children:
                    if assign.type == "assignment":
                        names.extend(binder_targets(assign, pf))
            elif (
                t
                in (
                    "if_statement",
                    "try_statement",
                    "block",
                    "else_clause",
                    "except_clause",
                    "finally_clause",
                )
                and lang == "python"
            ):
                visit(node.named_children, exported)
                continue
            elif t in ("lexical_declaration", "variable_declaration"):
                for decl in node.named_children:
                    if decl.type == "variable_declarator" and not _is_require(decl, pf):
                        names.extend(binder_targets(decl, pf))
            elif t == "export_statement":
                declared = node.child_by_field_name("declaration")
                if declared is not None:
                    visit([declared], True)
                for clause in node.named_children:
                    if clause.type == "export_clause":
                        for spec in clause.named_children:
                            sname = spec.child_by_field_name("alias") or spec.child_by_field_name("name")
                            if sname is not None:
                                exports.append(pf.node_text(sname))
                if any(c.type == "default" for c in node.children):
                    exports.append("default")
                continue
            elif t == "expression_statement" and is_js(lang):
                # CommonJS: module.exports = {a, b} / exports.a = ...
                for assign in node.named_children:
                    if assign.type != "assignment_expression":
                        continue
                    left = assign.child_by_field_name("left")
                    right = assign.child_by_field_name("right")
                    ltext = pf.node_text(left) if left else ""
                    if ltext == "module.exports" and right is not None and right.type == "object":
                        for prop in right.named_children:
                            key = prop.child_by_field_name("key") if prop.type == "pair" else prop
                            if key is not None and prop.type in ("pair", "shorthand_property_identifier"):
                                exports.append(pf.node_text(key))
                                names.append(pf.node_text(key))
                    elif ltext.startswith(("exports.", "module.exports.")):
                        exports.append(ltext.rsplit(".", 1)[-1])
                        names.append(ltext.rsplit(".", 1)[-1])
            elif t == "package_clause":
                ident = next((c for c in node.named_children if c.type == "package_identifier"), None)
                package = pf.node_text(ident) if ident else ""
            elif t in ("type_declaration",):
                for spec in node.named_children:
                    if spec.type in ("type_spec", "type_alias"):
                        names.append(definition_name(spec, pf))
            elif t in ("const_declaration", "var_declaration"):
                for spec in walk(node):
                    if spec.type in ("const_spec", "var_spec"):
                        names.extend(binder_targets(spec, pf))
            names = [n for n in names if n]
            defines.extend(names)
            if exported:
                exports.extend(names)

    visit(pf.root.named_children, False)
    if lang == "python":
        exports = list(defines)
    elif lang == "go":
        exports = [n for n in defines if n[:1].isupper()]
    return list(dict.fromkeys(defines)), list(dict.fromkeys(exports)), package


def python_module(path: str) -> str:
    """``src/app/util.py`` -> ``app.util``; ``app/__init__.py`` -> ``app``."""
    stem = path[:-3] if path.endswith(".py") else path
    if stem.endswith("/__init__") or stem == "__init__":
        stem = stem[: -len("__init__")].rstrip("/")
    if stem.startswith("src/"):
        stem = stem[4:]
    return stem.replace("/", ".")


def js_module(path: str) -> str:
    """``src/lib/dates.ts`` -> ``src/lib/dates``."""
    stem, _ = posixpath.splitext(path)
    return stem


def extract(path: str, text: str) -> tuple[FileSymbols, ParsedFile] | None:
    """Symbols of one file (and its parse), or None when the language is unsupported."""
    pf = parse_file(path, text)
    if pf is None:
        return None
    lang = pf.language
    fn_types = function_types(lang)
    class_types = _CLASS_TYPES.get(lang, frozenset())
    functions: list[FunctionInfo] = []
    classes: list[ClassInfo] = []
    go_methods: dict[str, list[str]] = {}
    imports: list[ImportInfo] = []
    binders = _LOCAL_BINDERS.get(lang, frozenset())
    builders: list[_FunctionBuilder] = []
    # One pass: the scope stack attributes calls and local bindings to the innermost function
    # (a class nested in a function is a barrier, as its statements are not the function's).
    scopes: list[tuple[int, _FunctionBuilder | None]] = []
    for node in walk(pf.root):
        while scopes and node.start_byte >= scopes[-1][0]:
            scopes.pop()
        top = scopes[-1][1] if scopes else None
        if node.type in _IMPORT_TYPES:
            imports.extend(_import_infos(node, pf))
        if top is not None and top.owns(node) and node.type not in fn_types:
            if node.type in CALL_TYPES:
                callee, method = callee_name(node, pf)
                if callee:
                    top.calls.append(Call(callee, node.start_point.row + 1, method))
            elif node.type in binders:
                for target in binder_targets(node, pf):
                    top.locals.setdefault(target, node.start_point.row + 1)
        if node.type in fn_types:
            if top is not None and top.owns(node):
                nested = definition_name(node, pf)
                if nested:
                    top.locals.setdefault(nested, node.start_point.row + 1)
            builder = _FunctionBuilder(node)
            builders.append(builder)
            scopes.append((node.end_byte, builder))
        elif node.type in class_types:
            scopes.append((node.end_byte, None))
        if node.type in fn_types:
            continue
        if node.type in class_types or (node.type == "type_alias_declaration" and is_js(lang)):
            if node.type == "type_alias_declaration":
                value = node.child_by_field_name("value")
                if value is None or value.type != "object_type":
                    continue
                members = [
                    pf.node_text(n)
                    for sig in value.named_children
                    if sig.type in ("property_signature", "method_signature")
                    for n in [sig.child_by_field_name("name")]
                    if n is not None
                ]
                classes.append(
                    ClassInfo(
                        path,
                        definition_name(node, pf),
                        node.start_point.row + 1,
                        node.end_point.row + 1,
                        (),
                        tuple(members),
                    )
                )
                continue
            cls = _class_info(node, pf)
            if cls is not None and cls.name:
                classes.append(cls)
        elif lang == "rust" and node.type == "impl_item":
            typ = node.child_by_field_name("type")
            tname = re.sub(r"<.*", "", pf.node_text(typ)) if typ else ""
            body = node.child_by_field_name("body")
            if tname and body is not None:
                names = [definition_name(f, pf) for f in body.named_children if f.type == "function_item"]
                go_methods.setdefault(tname, []).extend(n for n in names if n)
    functions = [b.build(pf) for b in builders]
    for info in functions:
        if lang == "go" and info.container and info.name:
            go_methods.setdefault(info.container, []).append(info.name)
    if go_methods:
        merged: list[ClassInfo] = []
        seen: set[str] = set()
        for cls in classes:
            extra = go_methods.get(cls.name, [])
            seen.add(cls.name)
            merged.append(
                ClassInfo(
                    cls.path,
                    cls.name,
                    cls.start_line,
                    cls.end_line,
                    tuple(dict.fromkeys((*cls.methods, *extra))),
                    cls.fields,
                    cls.bases,
                )
            )
        for tname in sorted(set(go_methods) - seen):
            merged.append(ClassInfo(path, tname, 0, 0, tuple(dict.fromkeys(go_methods[tname]))))
        classes = merged
    defines, exports, package = _top_level(pf)
    if lang == "python":
        module = python_module(path)
    elif lang == "go":
        module = posixpath.dirname(path)
    else:
        module = js_module(path)
    symbols = FileSymbols(
        path=path,
        language=lang,
        module=module,
        package=package,
        defines=tuple(defines),
        exports=tuple(exports),
        functions=tuple(functions),
        classes=tuple(classes),
        imports=tuple(imports),
    )
    return symbols, pf


# ---------------------------------------------------------------------------------------------
# The table


class SymbolTable:
    """Definitions of a whole source tree, with lookups by name, module and location."""

    def __init__(self, files: Mapping[str, FileSymbols], *, go_module: str = "") -> None:
        self.files: dict[str, FileSymbols] = dict(sorted(files.items()))
        self.go_module = go_module
        self._by_module: dict[str, str] = {}
        self._functions: dict[str, list[FunctionInfo]] = {}
        self._classes: dict[str, list[ClassInfo]] = {}
        self._definers: dict[str, list[str]] = {}
        for path, fs in self.files.items():
            if fs.language == "python":
                self._by_module.setdefault(fs.module, path)
                if path.startswith("src/"):
                    self._by_module.setdefault(path[:-3].replace("/", ".").removesuffix(".__init__"), path)
            elif is_js(fs.language):
                self._by_module.setdefault(fs.module, path)
            for fn in fs.functions:
                if fn.name:
                    self._functions.setdefault(fn.name, []).append(fn)
            for cls in fs.classes:
                self._classes.setdefault(cls.name, []).append(cls)
            for name in fs.defines:
                self._definers.setdefault(name, []).append(path)

    @classmethod
    def build(
        cls,
        source: SourceView,
        *,
        max_files: int = MAX_FILES,
        cache: dict[tuple[str, int], FileSymbols] | None = None,
        priority: Iterable[str] = (),
    ) -> SymbolTable:
        """Parse the supported files of ``source``, at most ``max_files`` (``priority`` paths, e.g. the
        failure's, first); ``cache`` reuses the symbols of unchanged files across calls."""
        files: dict[str, FileSymbols] = {}
        go_module = ""
        count = 0
        listed = list(source.files())
        present = set(listed)
        first = [p for p in dict.fromkeys(priority) if p in present]
        chosen = set(first)
        for path in [*first, *(p for p in listed if p not in chosen)]:
            if path == "go.mod" or path.endswith("/go.mod"):
                gomod = source.read(path) or ""
                match = re.search(r"^module\s+(\S+)", gomod, re.MULTILINE)
                if match and (path == "go.mod" or not go_module):
                    go_module = match.group(1)
                continue
            if language_for(path) is None or count >= max_files:
                continue
            text = source.read(path)
            if text is None or len(text) > MAX_FILE_BYTES:
                continue
            count += 1
            key = (path, hash(text))
            cached = cache.get(key) if cache is not None else None
            if cached is None:
                result = extract(path, text)
                if result is None:
                    continue
                cached = result[0]
                if cache is not None:
                    cache[key] = cached
            files[path] = cached
        return cls(files, go_module=go_module)

    # --- lookups -------------------------------------------------------------------------------

    def file(self, path: str) -> FileSymbols | None:
        """Symbols of one file."""
        return self.files.get(path)

    def function_at(self, path: str, line: int) -> FunctionInfo | None:
        """The innermost named-or-anonymous function containing ``line``."""
        fs = self.files.get(path)
        if fs is None:
            return None
        best: FunctionInfo | None = None
        for fn in fs.functions:
            if fn.contains(line) and (best is None or fn.start_line >= best.start_line):
                best = fn
        return best

    def named_function_at(self, path: str, line: int) -> FunctionInfo | None:
        """The innermost *named* function containing ``line``."""
        fs = self.files.get(path)
        if fs is None:
            return None
        best: FunctionInfo | None = None
        for fn in fs.functions:
            if fn.name and fn.contains(line) and (best is None or fn.start_line >= best.start_line):
                best = fn
        return best

    def functions_named(self, name: str) -> list[FunctionInfo]:
        """All functions/methods with this simple name."""
        return list(self._functions.get(name, ()))

    def classes_named(self, name: str) -> list[ClassInfo]:
        """All classes/structs/interfaces with this name."""
        return list(self._classes.get(name, ()))

    def class_members(self, name: str, *, depth: int = 3) -> list[str]:
        """Members of every class named ``name``, including those of repository base classes."""
        out: list[str] = []
        seen: set[str] = set()
        todo = [name]
        while todo and depth >= 0:
            nxt: list[str] = []
            for cname in todo:
                if cname in seen:
                    continue
                seen.add(cname)
                for cls in self._classes.get(cname, ()):
                    out.extend(cls.members)
                    nxt.extend(cls.bases)
            todo = nxt
            depth -= 1
        return list(dict.fromkeys(out))

    def definers(self, name: str, *, language: str | None = None) -> list[FileSymbols]:
        """Files that define ``name`` at top level (not via an import)."""
        out = [self.files[p] for p in self._definers.get(name, ())]
        if language is not None:
            family = family_members(language)
            out = [fs for fs in out if fs.language in family]
        return out

    def all_members(self, language: str) -> list[str]:
        """Every class member name of one language family (fallback when a type is unknown)."""
        family = family_members(language)
        out: list[str] = []
        for fs in self.files.values():
            if fs.language in family:
                for cls in fs.classes:
                    out.extend(cls.members)
        return list(dict.fromkeys(out))

    def modules(self, language: str) -> list[FileSymbols]:
        """Files of one language family."""
        family = family_members(language)
        return [fs for fs in self.files.values() if fs.language in family]

    def python_file(self, module: str, *, importer: str = "") -> FileSymbols | None:
        """The file of a Python module, resolving relative imports against ``importer``."""
        if module.startswith("."):
            level = len(module) - len(module.lstrip("."))
            base = python_module(importer).split(".") if importer else []
            if not importer.endswith("__init__.py"):
                base = base[:-1]
            base = base[: len(base) - (level - 1)] if level > 1 else base
            rest = module.lstrip(".")
            module = ".".join([*base, rest] if rest else base)
        path = self._by_module.get(module)
        if path is None:
            suffix = "." + module
            hits = sorted(m for m in self._by_module if m.endswith(suffix))
            if len(hits) == 1:
                path = self._by_module[hits[0]]
        return self.files.get(path) if path else None

    def js_file(self, specifier: str, *, importer: str) -> FileSymbols | None:
        """The file a relative ES/CommonJS specifier resolves to from ``importer``."""
        if not specifier.startswith("."):
            return None
        base = posixpath.normpath(posixpath.join(posixpath.dirname(importer), specifier))
        stem, ext = posixpath.splitext(base)
        candidates = [base]
        if ext in _JS_RESOLVE_SUFFIXES:
            candidates += [stem + s for s in _JS_RESOLVE_SUFFIXES]
        candidates += [base + s for s in _JS_RESOLVE_SUFFIXES]
        candidates += [base + "/index" + s for s in _JS_RESOLVE_SUFFIXES]
        for cand in candidates:
            if cand in self.files:
                return self.files[cand]
        return None

    def go_package_dir(self, import_path: str) -> str | None:
        """The repository directory of a Go import path (via go.mod's module path)."""
        if self.go_module and (import_path == self.go_module or import_path.startswith(self.go_module + "/")):
            return import_path[len(self.go_module) :].lstrip("/")
        tail = import_path.rsplit("/", 1)[-1]
        dirs = sorted({fs.module for fs in self.files.values() if fs.language == "go"})
        hits = [d for d in dirs if import_path.endswith("/" + d) or d == tail or d.endswith("/" + tail)]
        return hits[0] if len(hits) == 1 else None

    def go_package_files(self, directory: str) -> list[FileSymbols]:
        """Go files of one package directory."""
        return [fs for fs in self.files.values() if fs.language == "go" and fs.module == directory]

    def scope_names(self, path: str, line: int) -> list[str]:
        """Names visible at ``path:line``: locals/params of enclosing functions, file and package
        top-level definitions, imported names and (Python) builtins."""
        fs = self.files.get(path)
        if fs is None:
            return []
        out: list[str] = []
        for fn in fs.functions:
            if fn.contains(line):
                out.extend(p.name for p in fn.params if p.name)
                out.extend(name for name, _ in fn.locals)
        out.extend(fs.defines)
        out.extend(fs.imported_names())
        if fs.language == "go":
            for other in self.go_package_files(fs.module):
                out.extend(other.defines)
        if fs.language == "python":
            out.extend(sorted(PYTHON_BUILTINS))
        return list(dict.fromkeys(n for n in out if n))

    def relative_specifier(self, importer: str, target: str, *, like: str = "") -> str:
        """An ES module specifier for ``target`` from ``importer``, keeping the style of ``like``
        (with or without a file extension)."""
        stem, ext = posixpath.splitext(target)
        keep_ext = posixpath.splitext(like)[1] in _JS_RESOLVE_SUFFIXES
        dest = target if keep_ext else stem
        if keep_ext and ext in (".ts", ".tsx") and posixpath.splitext(like)[1] == ".js":
            dest = stem + ".js"
        if not keep_ext and dest.endswith("/index"):
            dest = dest[: -len("/index")]
        rel = posixpath.relpath(dest, posixpath.dirname(importer) or ".")
        return rel if rel.startswith(".") else "./" + rel
