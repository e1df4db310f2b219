"""Split a source file into syntactically complete chunks (functions, methods, classes…).

Code in a language with a grammar (:func:`indexing.languages.code_languages`) is parsed once with
tree-sitter. Definitions are found by walking only the top level and class-like bodies (cheap), and the
per-chunk symbol metadata (``defines``/``uses``) comes from one query per file (``queries/<lang>.scm``)
whose captures are bucketed by line, so the cost is linear in the file size.

Rules (see :class:`indexing.model.Chunk`):

* functions, methods and class-like declarations become chunks; their leading doc comments, decorators
  and attributes are part of the chunk;
* a class spanning more than :data:`SKELETON_MIN_LINES` lines becomes a ``class_skeleton`` (bodies of its
  methods elided) instead of a whole ``class`` chunk; its methods are always chunks of their own;
* the remaining top-level lines are grouped into ``module`` chunks of at most :data:`MODULE_MAX_LINES`;
* markdown/rst are split into ``section`` chunks by heading, anything else into overlapping ``window``\\ s;
* a file with syntax errors keeps the definitions that parsed cleanly; the rest becomes windows,
  ``parsed`` is False and a warning says so. :func:`chunk_file` never raises.

Output order is deterministic: by ``start_line``, then ``end_line`` descending (enclosing chunks before the
chunks they contain), then kind, then qualified name.
"""

from __future__ import annotations

import bisect
import inspect
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path, PurePosixPath

import tree_sitter
from tree_sitter import Node

from indexing.languages import code_languages, grammar, language_for_path, parser_for
from indexing.model import Chunk, ChunkKind, FileChunks

__all__ = [
    "MODULE_MAX_LINES",
    "SECTION_MAX_LINES",
    "SKELETON_MIN_LINES",
    "WINDOW_LINES",
    "WINDOW_OVERLAP",
    "chunk_file",
    "module_qualified_name",
]

SKELETON_MIN_LINES = 80
"""Classes longer than this are emitted as a ``class_skeleton`` (plus their methods)."""
MODULE_MAX_LINES = 60
"""Top-level code outside definitions is grouped into module chunks of at most this many lines."""
SECTION_MAX_LINES = 60
"""Markdown/rst sections longer than this are split into windows of this size."""
WINDOW_LINES = 50
WINDOW_OVERLAP = 10
MAX_USES = 200
SMALL_TYPE_MIN_LINES = 3
"""TS interfaces/enums/type aliases and Go non-struct types shorter than this stay in module chunks."""
_MAX_SIGNATURE = 400
_MAX_DOCSTRING = 4000

_QUERY_DIR = Path(__file__).resolve().parent / "queries"
_QUERY_FILE = {
    "python": "python.scm",
    "javascript": "javascript.scm",
    "typescript": "typescript.scm",
    "tsx": "typescript.scm",
    "go": "go.scm",
    "rust": "rust.scm",
    "java": "java.scm",
}

_KIND_ORDER: dict[str, int] = {
    "module": 0,
    "class": 1,
    "class_skeleton": 2,
    "function": 3,
    "method": 4,
    "section": 5,
    "window": 6,
}

# Identifiers that say nothing about what a chunk is about (builtins, ubiquitous helpers).
_NOISE_COMMON = frozenset({"self", "cls", "this", "super", "_", "__"})
_NOISE: dict[str, frozenset[str]] = {
    "python": frozenset(
        {
            "print", "len", "str", "int", "float", "bool", "list", "dict", "set", "tuple", "bytes",
            "object", "type", "isinstance", "issubclass", "range", "enumerate", "zip", "map", "filter",
            "sorted", "reversed", "min", "max", "sum", "any", "all", "abs", "getattr", "setattr",
            "hasattr", "iter", "next", "repr", "hash", "id", "frozenset", "callable", "format",
            "vars", "dir", "round", "ord", "chr", "Any", "Optional", "Union", "None", "True", "False",
            "__name__", "__main__",
        }
    ),
    "javascript": frozenset({"console", "log", "undefined", "arguments", "require", "exports", "module", "length"}),
    "go": frozenset(
        {
            "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64",
            "uintptr", "float32", "float64", "complex64", "complex128", "string", "bool", "byte",
            "rune", "error", "any", "len", "cap", "make", "new", "append", "copy", "delete", "panic",
            "recover", "print", "println", "err", "ok", "nil", "true", "false", "iota",
        }
    ),
    "rust": frozenset(
        {
            "Self", "Some", "None", "Ok", "Err", "Option", "Result", "String", "Vec", "Box",
            "println", "eprintln", "print", "format", "vec", "assert", "assert_eq", "assert_ne",
            "debug_assert", "panic", "unwrap", "expect", "clone", "into", "to_string", "new",
        }
    ),
    "java": frozenset(
        {
            "String", "Object", "Integer", "Long", "Boolean", "Double", "Override", "System", "out",
            "println", "var", "List", "Map", "equals", "hashCode", "toString",
        }
    ),
}  # fmt: skip
_NOISE["typescript"] = _NOISE["javascript"] | {"Promise", "Record", "Partial", "Array"}
_NOISE["tsx"] = _NOISE["typescript"] | {"React", "JSX"}


# --------------------------------------------------------------------------------------------- helpers


def module_qualified_name(path: str, language: str) -> str:
    """Dotted module name of a file: ``pkg/sub/mod.py`` -> ``pkg.sub.mod`` (``__init__.py`` -> package).

    Other languages use the path without its last extension: ``src/util.ts`` -> ``src.util``.
    """
    pure = PurePosixPath(path)
    parts = list(pure.parent.parts) if str(pure.parent) != "." else []
    stem = pure.stem if pure.suffix else pure.name
    if not (language == "python" and stem == "__init__"):
        parts.append(stem)
    return ".".join(p for p in parts if p)


def _qualify(module: str, names: Iterable[str]) -> str:
    return ".".join([module, *names] if module else list(names))


def _last_row(node: Node) -> int:
    """Last row that holds part of ``node`` (a node ending at column 0 ends on the row before)."""
    row, col = node.end_point
    return row - 1 if col == 0 and row > node.start_point[0] else row


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def _norm_signature(raw: str) -> str:
    s = " ".join(raw.split())
    s = re.sub(r"([(\[{]) ", r"\1", s)
    s = re.sub(r" ([)\]}])", r"\1", s)
    s = re.sub(r",\s*([)\]}])", r"\1", s)
    s = s.rstrip(" {").rstrip()
    if s.endswith(":") and not s.endswith("::"):
        s = s[:-1].rstrip()
    return s[:_MAX_SIGNATURE]


_COMMENT_PREFIXES = ("///", "//!", "//", "#!", "#")


def _clean_comment(raw: str) -> str:
    out: list[str] = []
    for line in raw.replace("\r", "").split("\n"):
        s = line.strip()
        if s.startswith(("/**", "/*!")):
            s = s[3:]
        elif s.startswith("/*"):
            s = s[2:]
        else:
            for prefix in _COMMENT_PREFIXES:
                if s.startswith(prefix):
                    s = s[len(prefix) :]
                    break
            else:
                if s.startswith("*") and not s.startswith("*/"):
                    s = s[1:]
        if s.endswith("*/"):
            s = s[:-2]
        out.append(s[1:] if s.startswith(" ") else s)
    return "\n".join(out).strip().rstrip("*").strip()[:_MAX_DOCSTRING]


_WORD = re.compile(r"\w")
_CLASS_KEYWORDS = frozenset({"class", "interface", "trait", "impl", "enum", "struct"})
_STRING_PREFIX = re.compile(r"^[rRuUbBfF]{0,2}")


def _python_string(node: Node) -> str:
    raw = _STRING_PREFIX.sub("", _text(node))
    for quote in ('"""', "'''", '"', "'"):
        if raw.startswith(quote) and raw.endswith(quote) and len(raw) >= 2 * len(quote):
            raw = raw[len(quote) : -len(quote)]
            break
    return inspect.cleandoc(raw.replace("\r", ""))[:_MAX_DOCSTRING]


# ------------------------------------------------------------------------------------ language specs


@dataclass(frozen=True, slots=True)
class _Found:
    """A definition node recognised by a language spec."""

    kind: str  # "function" | "method" | "class" | "namespace"
    name: str
    outer: Node  # the whole declaration incl. wrappers (export, decorators)
    core: Node  # the declaration proper (signature starts here)
    body: Node | None = None  # the signature ends where this starts; elided in skeletons
    members: Node | None = None  # container of member declarations (class bodies)
    scope: tuple[str, ...] = ()  # extra qualification (a Go method's receiver type)


class _Spec:
    """Language behaviour: which nodes are definitions, comments, imports, top-level names."""

    comment_types: frozenset[str] = frozenset({"comment"})
    attach_types: frozenset[str] = frozenset({"comment"})

    def classify(self, node: Node, in_class: bool) -> list[_Found]:
        raise NotImplementedError

    def member_nodes(self, container: Node) -> Iterator[Node]:
        yield from container.children

    def docstring(self, found: _Found) -> str:
        return ""

    def module_docstring(self, root: Node) -> str:
        texts: list[str] = []
        for child in root.children:
            if child.type not in self.comment_types:
                break
            texts.append(_text(child).rstrip())
        return _clean_comment("\n".join(texts)) if texts else ""

    def import_name(self, node: Node) -> str:
        return " ".join(_text(node).split())

    def top_level_names(self, root: Node) -> Iterator[tuple[str, int]]:
        """Top-level names defined outside definition chunks (constants, variables), with their row."""
        return iter(())


def _field(node: Node, name: str) -> Node | None:
    return node.child_by_field_name(name)


class _PythonSpec(_Spec):
    def classify(self, node: Node, in_class: bool) -> list[_Found]:
        core = node
        if node.type == "decorated_definition":
            inner = _field(node, "definition")
            if inner is None:
                return []
            core = inner
        name = _text(_field(core, "name"))
        body = _field(core, "body")
        if core.type == "function_definition":
            return [_Found("method" if in_class else "function", name, node, core, body)]
        if core.type == "class_definition":
            return [_Found("class", name, node, core, body, members=body)]
        return []

    def docstring(self, found: _Found) -> str:
        body = found.body
        if body is None or body.named_child_count == 0:
            return ""
        first = body.named_children[0]
        if first.type == "expression_statement" and first.named_child_count:
            string = first.named_children[0]
            if string.type == "string":
                return _python_string(string)
        return ""

    def module_docstring(self, root: Node) -> str:
        for child in root.named_children:
            if child.type == "comment":
                continue
            if child.type == "expression_statement" and child.named_child_count:
                string = child.named_children[0]
                if string.type == "string":
                    return _python_string(string)
            break
        return ""

    def import_name(self, node: Node) -> str:
        name = "".join(_text(node).split())
        return "" if name == "__future__" else name

    def top_level_names(self, root: Node) -> Iterator[tuple[str, int]]:
        for child in root.named_children:
            if child.type != "expression_statement" or not child.named_child_count:
                continue
            stmt = child.named_children[0]
            while stmt.type == "assignment":
                left = _field(stmt, "left")
                if left is not None:
                    for ident in _identifiers(left):
                        yield ident, child.start_point[0]
                right = _field(stmt, "right")
                if right is None:
                    break
                stmt = right  # chained assignment: a = b = 1


def _identifiers(node: Node) -> Iterator[str]:
    if node.type == "identifier":
        yield _text(node)
    elif node.type in ("pattern_list", "tuple_pattern", "list_pattern", "expression_list"):
        for child in node.named_children:
            yield from _identifiers(child)


_JS_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})


class _JsSpec(_Spec):
    """JavaScript, TypeScript and TSX (the grammars share node names)."""

    attach_types = frozenset({"comment", "decorator"})

    def classify(self, node: Node, in_class: bool) -> list[_Found]:
        if in_class:
            return self._member(node)
        t = node.type
        if t == "export_statement":
            return self._export(node)
        if t in ("function_declaration", "generator_function_declaration"):
            return [_Found("function", _text(_field(node, "name")), node, node, _field(node, "body"))]
        if t in ("class_declaration", "abstract_class_declaration", "class"):
            body = _field(node, "body")
            return [_Found("class", _text(_field(node, "name")), node, node, body, members=body)]
        if t in ("interface_declaration", "enum_declaration", "type_alias_declaration"):
            return self._type(node)
        if t in ("lexical_declaration", "variable_declaration"):
            return self._declaration(node)
        if t == "expression_statement" and node.named_child_count == 1:
            inner = node.named_children[0]
            if inner.type in ("internal_module", "module"):
                return [_with_outer(f, node) for f in self.classify(inner, False)]
            if inner.type == "assignment_expression":
                return self._commonjs(node, inner)
            if (fn := _iife_function(inner)) is not None:
                # (function () {...})(); !function () {...}(): its body's definitions are the file's.
                return [_Found("namespace", "", node, node, _field(fn, "body"))]
            return []
        if t in ("internal_module", "module"):
            name = _text(_field(node, "name")).strip("'\"`")
            return [_Found("namespace", name, node, node, _field(node, "body"))]
        if t == "ambient_declaration":
            for child in node.named_children:
                found = self.classify(child, False)
                if found:
                    return [_with_outer(f, node) for f in found[:1]]
        return []

    def _member(self, node: Node) -> list[_Found]:
        if node.type == "method_definition":
            body = _field(node, "body")
            if body is None:
                return []
            return [_Found("method", _text(_field(node, "name")), node, node, body)]
        if node.type in ("public_field_definition", "field_definition"):
            value = _field(node, "value")
            name = _field(node, "name") or _field(node, "property")
            if value is not None and value.type in _JS_FUNCTION_VALUES:
                return [_Found("method", _text(name), node, node, _field(value, "body"))]
        return []

    def _export(self, node: Node) -> list[_Found]:
        decl = _field(node, "declaration")
        if decl is not None:
            return [_with_outer(f, node) for f in self.classify(decl, False)]
        value = _field(node, "value")
        if value is None or value.type not in ("class", "function_expression", "function"):
            return []
        name = _text(_field(value, "name")) or "default"
        body = _field(value, "body")
        if value.type == "class":
            return [_Found("class", name, node, value, body, members=body)]
        return [_Found("function", name, node, value, body)]

    def _type(self, node: Node) -> list[_Found]:
        if _last_row(node) - node.start_point[0] + 1 < SMALL_TYPE_MIN_LINES:
            return []  # a one-line alias/interface stays in its module chunk
        body = _field(node, "body")
        if body is None and node.type == "type_alias_declaration":
            value = _field(node, "value")
            body = value if value is not None and value.type == "object_type" else None
        return [_Found("class", _text(_field(node, "name")), node, node, body)]

    def _declaration(self, node: Node) -> list[_Found]:
        # const f = (x) => ...;  const Foo = class {...}  (one declarator only)
        declarators = [c for c in node.named_children if c.type == "variable_declarator"]
        if len(declarators) != 1:
            return []
        value = _field(declarators[0], "value")
        name_node = _field(declarators[0], "name")
        if value is None or name_node is None or name_node.type != "identifier":
            return []
        if value.type in _JS_FUNCTION_VALUES:
            return [_Found("function", _text(name_node), node, node, _field(value, "body"))]
        if value.type == "class":
            body = _field(value, "body")
            return [_Found("class", _text(name_node), node, node, body, members=body)]
        return []

    def _commonjs(self, stmt: Node, assign: Node) -> list[_Found]:
        # exports.foo = function () {...};  Foo.prototype.bar = (x) => {...}
        left, right = _field(assign, "left"), _field(assign, "right")
        if left is None or right is None or left.type != "member_expression":
            return []
        name = _text(_field(left, "property"))
        obj = _field(left, "object")
        if not name or obj is None:
            return []
        if name == "exports" and _text(obj) == "module":
            # module.exports = function stableStringify(...) {...}  /  module.exports = {a() {}, b: () => 1}
            if right.type in _JS_FUNCTION_VALUES:
                own = _text(_field(right, "name")) if right.type != "arrow_function" else ""
                return [_Found("function", own or "module.exports", stmt, stmt, _field(right, "body"))]
            return _object_functions(right) if right.type == "object" else []
        if right.type not in _JS_FUNCTION_VALUES or name == "exports":
            return []
        if obj.type == "member_expression" and _text(_field(obj, "property")) == "prototype":
            owner = _text(_field(obj, "object"))
            return [_Found("method", name, stmt, stmt, _field(right, "body"), scope=(owner,))]
        owner = _text(obj) if obj.type == "identifier" and _text(obj) not in _JS_GLOBALS else ""
        # sprintf.format = function () {...}: qualified by its object, as a method of it would be.
        return [_Found("function", name, stmt, stmt, _field(right, "body"), scope=(owner,) if owner else ())]

    def top_level_names(self, root: Node) -> Iterator[tuple[str, int]]:
        for child in root.named_children:
            node = child
            if node.type == "export_statement":
                decl = _field(node, "declaration")
                if decl is None:
                    continue
                node = decl
            if node.type in ("lexical_declaration", "variable_declaration"):
                for decl in node.named_children:
                    name = _field(decl, "name") if decl.type == "variable_declarator" else None
                    if name is not None and name.type == "identifier":
                        yield _text(name), child.start_point[0]
            elif node.type in (
                "interface_declaration",
                "enum_declaration",
                "type_alias_declaration",
                "function_signature",
            ):
                yield _text(_field(node, "name")), child.start_point[0]


_JS_GLOBALS = frozenset({"exports", "module", "window", "this", "self", "global", "globalThis", "root"})


def _iife_function(expr: Node) -> Node | None:
    """The function an immediately-invoked function expression calls, else None."""
    node = expr
    for _ in range(3):  # ( ... ), !... , void ...
        if node.type == "parenthesized_expression" and node.named_child_count == 1:
            node = node.named_children[0]
        elif node.type == "unary_expression" and (arg := _field(node, "argument")) is not None:
            node = arg
        else:
            break
    if node.type != "call_expression":
        return None
    fn = _field(node, "function")
    while fn is not None and fn.type == "parenthesized_expression" and fn.named_child_count == 1:
        fn = fn.named_children[0]
    if fn is None or fn.type not in ("function_expression", "function", "arrow_function"):
        return None
    body = _field(fn, "body")
    return fn if body is not None and body.type == "statement_block" else None


def _object_functions(obj: Node) -> list[_Found]:
    """The functions of an object literal: ``{a: function () {}, b: () => {}, c() {}}``."""
    found: list[_Found] = []
    for child in obj.named_children:
        if child.type == "method_definition":
            found.append(
                _Found("function", _text(_field(child, "name")), child, child, _field(child, "body"))
            )
        elif child.type == "pair":
            value = _field(child, "value")
            if value is not None and value.type in _JS_FUNCTION_VALUES:
                key = _text(_field(child, "key")).strip("'\"")
                found.append(_Found("function", key, child, child, _field(value, "body")))
    return found


def _with_outer(found: _Found, outer: Node) -> _Found:
    return _Found(found.kind, found.name, outer, found.core, found.body, found.members, found.scope)


def _go_type_name(node: Node | None) -> str:
    while node is not None:
        if node.type == "type_identifier":
            return _text(node)
        if node.type in ("pointer_type", "parenthesized_type"):
            node = node.named_children[0] if node.named_child_count else None
        elif node.type == "generic_type":
            node = _field(node, "type")
        elif node.type == "qualified_type":
            node = _field(node, "name")
        else:
            return _text(node)
    return ""


class _GoSpec(_Spec):
    def classify(self, node: Node, in_class: bool) -> list[_Found]:
        t = node.type
        if t == "function_declaration":
            return [_Found("function", _text(_field(node, "name")), node, node, _field(node, "body"))]
        if t == "method_declaration":
            receiver = _field(node, "receiver")
            recv = ""
            if receiver is not None:
                for param in receiver.named_children:
                    if param.type == "parameter_declaration":
                        recv = _go_type_name(_field(param, "type"))
                        break
            return [
                _Found(
                    "method",
                    _text(_field(node, "name")),
                    node,
                    node,
                    _field(node, "body"),
                    scope=(recv,) if recv else (),
                )
            ]
        if t == "type_declaration":
            specs = [c for c in node.named_children if c.type in ("type_spec", "type_alias")]
            found: list[_Found] = []
            for spec in specs:
                typ = _field(spec, "type")
                span = _last_row(spec) - spec.start_point[0] + 1
                structural = typ is not None and typ.type in ("struct_type", "interface_type")
                if not structural and span < SMALL_TYPE_MIN_LINES:
                    continue
                body: Node | None = typ
                if typ is not None and typ.type == "struct_type":
                    body = next((c for c in typ.named_children if c.type == "field_declaration_list"), typ)
                outer = node if len(specs) == 1 else spec
                found.append(_Found("class", _text(_field(spec, "name")), outer, outer, body))
            return found
        return []

    def top_level_names(self, root: Node) -> Iterator[tuple[str, int]]:
        for child in root.named_children:
            if child.type in ("var_declaration", "const_declaration"):
                for spec in _go_specs(child):
                    for name in spec.children_by_field_name("name"):
                        yield _text(name), spec.start_point[0]
            elif child.type == "type_declaration":
                for spec in child.named_children:
                    if spec.type in ("type_spec", "type_alias"):
                        typ = _field(spec, "type")
                        span = _last_row(spec) - spec.start_point[0] + 1
                        if (typ is None or typ.type not in ("struct_type", "interface_type")) and (
                            span < SMALL_TYPE_MIN_LINES
                        ):
                            yield _text(_field(spec, "name")), spec.start_point[0]


def _go_specs(decl: Node) -> Iterator[Node]:
    for child in decl.named_children:
        if child.type in ("var_spec", "const_spec"):
            yield child
        elif child.type == "var_spec_list":
            yield from (c for c in child.named_children if c.type == "var_spec")


def _rust_type_name(node: Node | None) -> str:
    while node is not None:
        if node.type == "type_identifier":
            return _text(node)
        if node.type == "generic_type":
            node = _field(node, "type")
        elif node.type == "scoped_type_identifier":
            node = _field(node, "name")
        elif node.type in ("reference_type", "pointer_type"):
            node = _field(node, "type")
        else:
            return " ".join(_text(node).split())
    return ""


class _RustSpec(_Spec):
    comment_types = frozenset({"line_comment", "block_comment"})
    attach_types = frozenset({"line_comment", "block_comment", "attribute_item"})

    def classify(self, node: Node, in_class: bool) -> list[_Found]:
        t = node.type
        if t == "function_item":
            kind = "method" if in_class else "function"
            return [_Found(kind, _text(_field(node, "name")), node, node, _field(node, "body"))]
        if in_class:
            return []
        if t in ("struct_item", "enum_item", "union_item"):
            return [_Found("class", _text(_field(node, "name")), node, node, _field(node, "body"))]
        if t == "trait_item":
            body = _field(node, "body")
            return [_Found("class", _text(_field(node, "name")), node, node, body, members=body)]
        if t == "impl_item":
            body = _field(node, "body")
            name = _rust_type_name(_field(node, "type"))
            return [_Found("class", name, node, node, body, members=body)]
        if t == "mod_item":
            body = _field(node, "body")
            if body is None:
                return []
            return [_Found("namespace", _text(_field(node, "name")), node, node, body)]
        if t == "macro_definition":
            return [_Found("function", _text(_field(node, "name")), node, node, None)]
        return []

    def module_docstring(self, root: Node) -> str:
        texts: list[str] = []
        for child in root.children:
            if child.type not in self.comment_types:
                break
            texts.append(_text(child).rstrip())
        inner = [t for t in texts if t.startswith(("//!", "/*!"))]
        return _clean_comment("\n".join(inner or texts)) if texts else ""

    def top_level_names(self, root: Node) -> Iterator[tuple[str, int]]:
        for child in root.named_children:
            if child.type in ("const_item", "static_item", "type_item"):
                yield _text(_field(child, "name")), child.start_point[0]


_JAVA_TYPES = frozenset(
    {
        "class_declaration",
        "interface_declaration",
        "enum_declaration",
        "record_declaration",
        "annotation_type_declaration",
    }
)


class _JavaSpec(_Spec):
    comment_types = frozenset({"line_comment", "block_comment"})
    attach_types = comment_types

    def classify(self, node: Node, in_class: bool) -> list[_Found]:
        t = node.type
        if t in _JAVA_TYPES:
            body = _field(node, "body")
            return [_Found("class", _text(_field(node, "name")), node, node, body, members=body)]
        if in_class and t in (
            "method_declaration",
            "constructor_declaration",
            "compact_constructor_declaration",
        ):
            body = _field(node, "body")
            if body is None:  # abstract / interface method: part of the class, not a chunk
                return []
            return [_Found("method", _text(_field(node, "name")), node, node, body)]
        return []

    def member_nodes(self, container: Node) -> Iterator[Node]:
        for child in container.children:
            if child.type == "enum_body_declarations":
                yield from child.children
            else:
                yield child

    def import_name(self, node: Node) -> str:
        text = " ".join(_text(node).split())
        text = re.sub(r"^import\s+(static\s+)?", "", text).rstrip(";").strip()
        return text.replace(" ", "")


_SPECS: dict[str, _Spec] = {
    "python": _PythonSpec(),
    "javascript": _JsSpec(),
    "typescript": _JsSpec(),
    "tsx": _JsSpec(),
    "go": _GoSpec(),
    "rust": _RustSpec(),
    "java": _JavaSpec(),
}


@cache
def _query(language: str) -> tree_sitter.Query:
    source = (_QUERY_DIR / _QUERY_FILE[language]).read_text(encoding="utf-8")
    return tree_sitter.Query(grammar(language), source)


# -------------------------------------------------------------------------------------- code chunking


@dataclass(slots=True)
class _Unit:
    found: _Found
    scope: tuple[str, ...]  # enclosing names (classes, namespaces, Go receiver)
    start_row: int
    end_row: int
    ok: bool  # False when the node has syntax errors: its own chunk is not emitted
    children: list[_Unit] = field(default_factory=list)


class _Captures:
    """Query captures of one capture name, sorted by row, for range look-ups."""

    __slots__ = ("rows", "texts")

    def __init__(self, nodes: Sequence[Node]) -> None:
        pairs = sorted((n.start_point[0], n.start_byte, _text(n)) for n in nodes)
        self.rows = [p[0] for p in pairs]
        self.texts = [p[2] for p in pairs]

    def between(self, first: int, last: int) -> list[str]:
        lo = bisect.bisect_left(self.rows, first)
        hi = bisect.bisect_right(self.rows, last)
        return self.texts[lo:hi]


class _CodeChunker:
    def __init__(self, path: str, language: str, source: str, lines: list[str]) -> None:
        self.path = path
        self.language = language
        self.spec = _SPECS[language]
        self.lines = lines
        self.data = source.encode("utf-8", "surrogatepass")
        self.module = module_qualified_name(path, language)
        self.noise = _NOISE_COMMON | _NOISE.get(language, frozenset())
        self.chunks: list[Chunk] = []
        self.spans: list[tuple[int, int]] = []
        self.namespaces: list[str] = []

    def run(self) -> FileChunks:
        tree = parser_for(self.language).parse(self.data)
        root = tree.root_node
        caps = tree_sitter.QueryCursor(_query(self.language)).captures(root)
        self.refs = _Captures(caps.get("ref", []))
        self.binds = _Captures(caps.get("bind", []))
        self.defs = _Captures(caps.get("def", []))
        self.fields = _Captures(caps.get("field", []))
        imports = _unique(
            name for n in _by_position(caps.get("import", [])) if (name := self.spec.import_name(n))
        )

        units = self._walk([root] if root.type == "ERROR" else root.children, (), in_class=False)
        for unit in units:
            self._emit(unit)

        parsed = not root.has_error
        warnings: list[str] = []
        top_names = [(n, r) for n, r in self.spec.top_level_names(root) if n]
        gaps = _gaps(self.spans, len(self.lines))
        if parsed:
            cuts = sorted({c.start_point[0] for c in root.named_children})
            for first, last in gaps:
                for a, b in _split_run(self.lines, first, last, MODULE_MAX_LINES, cuts):
                    self._module_chunk(a, b, top_names)
        else:
            error_row = _first_error_row(root)
            windowed = 0
            for first, last in gaps:
                for a, b in _windows(self.lines, first, last):
                    self.chunks.append(_window_chunk(self.path, self.language, self.lines, a, b))
                windowed += last - first + 1
            where = f"line {error_row + 1}" if error_row is not None else "unknown line"
            warnings.append(
                f"{self.path}: syntax errors (first near {where}); "
                f"{windowed} of {len(self.lines)} lines chunked as windows"
            )

        defines = _unique(
            [
                *(
                    u.found.name
                    for u in units
                    if not u.scope
                    and u.found.kind in ("function", "class")
                    and u.found.core.type != "impl_item"  # an impl defines no new name
                ),
                *self.namespaces,
                *(n for n, _ in top_names),
            ]
        )
        return FileChunks(
            path=self.path,
            language=self.language,
            chunks=tuple(_sorted_chunks(self.chunks)),
            module_docstring=self.spec.module_docstring(root),
            imports=tuple(imports),
            defines=tuple(defines),
            line_count=len(self.lines),
            parsed=parsed,
            warnings=tuple(warnings),
        )

    # -- finding definitions

    def _walk(self, nodes: Iterable[Node], scope: tuple[str, ...], *, in_class: bool) -> list[_Unit]:
        units: list[_Unit] = []
        for node in nodes:
            if node.type == "ERROR":
                # Error recovery sometimes wraps valid definitions; keep the ones that parsed cleanly.
                units.extend(self._walk_error(node, scope, in_class=in_class))
                continue
            for found in self.spec.classify(node, in_class):
                if found.kind == "namespace":
                    if not scope and found.name:
                        self.namespaces.append(found.name)
                    if found.body is not None:
                        # An unnamed namespace (a JS IIFE) adds no scope.
                        inner = (*scope, found.name) if found.name else scope
                        units.extend(self._walk(found.body.children, inner, in_class=False))
                    continue
                if not found.name:
                    continue
                unit = _Unit(
                    found=found,
                    scope=(*scope, *found.scope),
                    start_row=self._attached_start(found.outer),
                    end_row=_last_row(found.outer),
                    ok=not found.outer.has_error,
                )
                if found.members is not None:
                    unit.children = self._walk(
                        self.spec.member_nodes(found.members),
                        (*unit.scope, found.name),
                        in_class=True,
                    )
                units.append(unit)
        return units

    def _walk_error(self, error: Node, scope: tuple[str, ...], *, in_class: bool) -> list[_Unit]:
        """Definitions inside an ERROR node; ``class Name`` remnants still qualify indented members."""
        units: list[_Unit] = []
        owner: tuple[str, int] | None = None  # (class name, column of its keyword)
        children = error.children
        for i, child in enumerate(children):
            if not child.is_named and child.type in _CLASS_KEYWORDS and i + 1 < len(children):
                name_node = children[i + 1]
                if name_node.type in ("identifier", "type_identifier"):
                    owner = (_text(name_node), child.start_point[1])
                    continue
            if owner is not None and child.start_point[1] > owner[1]:
                units.extend(self._walk([child], (*scope, owner[0]), in_class=True))
            else:
                owner = None
                units.extend(self._walk([child], scope, in_class=in_class))
        return units

    def _attached_start(self, node: Node) -> int:
        """First row of ``node`` including directly preceding comments/decorators/attributes."""
        start = node.start_point[0]
        prev = node.prev_sibling
        attach = self.spec.attach_types
        comments = self.spec.comment_types
        while prev is not None and prev.type in attach and _last_row(prev) >= start - 1:
            if prev.type in comments:
                before = prev.prev_sibling
                if before is not None and _last_row(before) >= prev.start_point[0]:
                    break  # a trailing comment of the previous statement
            start = prev.start_point[0]
            prev = prev.prev_sibling
        return start

    # -- emitting chunks

    def _emit(self, unit: _Unit) -> None:
        found = unit.found
        if unit.ok:
            method_children = [c for c in unit.children if c.found.body is not None]
            large = unit.end_row - unit.start_row + 1 > SKELETON_MIN_LINES
            if found.kind == "class" and large and method_children:
                self.chunks.append(self._skeleton(unit, method_children))
            else:
                self.chunks.append(self._unit_chunk(unit))
            self.spans.append((unit.start_row, unit.end_row))
        for child in unit.children:
            self._emit(child)

    def _signature(self, found: _Found) -> str:
        core = found.core
        end = found.body.start_byte if found.body is not None else core.end_byte
        raw = self.data[core.start_byte : end].decode("utf-8", "replace")
        if found.body is None:
            raw = raw.split("\n", 1)[0]
        return _norm_signature(raw)

    def _docstring(self, unit: _Unit) -> str:
        doc = self.spec.docstring(unit.found)
        if doc:
            return doc
        if unit.start_row >= unit.found.outer.start_point[0]:
            return ""
        parts: list[str] = []
        prev = unit.found.outer.prev_sibling
        while prev is not None and prev.start_point[0] >= unit.start_row:
            if prev.type in self.spec.comment_types:
                parts.append(_text(prev).rstrip())
            prev = prev.prev_sibling
        return _clean_comment("\n".join(reversed(parts)))

    def _defines(self, unit: _Unit, first: int, last: int) -> list[str]:
        names = [unit.found.name, *self.defs.between(first, last)]
        if unit.found.kind in ("class", "method"):
            names.extend(self.fields.between(first, last))
        return _unique(n for n in names if n)

    def _uses(self, refs: Iterable[str], bound: Iterable[str], defines: Iterable[str]) -> tuple[str, ...]:
        excluded = set(bound) | set(defines) | self.noise
        counts = Counter(r for r in refs if len(r) > 1 and r not in excluded)
        if len(counts) > MAX_USES:
            return tuple(sorted(name for name, _ in counts.most_common(MAX_USES)))
        return tuple(sorted(counts))

    def _unit_chunk(self, unit: _Unit) -> Chunk:
        found = unit.found
        first, last = unit.start_row, unit.end_row
        defines = self._defines(unit, first, last)
        return Chunk(
            path=self.path,
            language=self.language,
            kind=_kind(found.kind),
            symbol=found.name,
            qualified_name=_qualify(self.module, (*unit.scope, found.name)),
            start_line=first + 1,
            end_line=last + 1,
            text="\n".join(self.lines[first : last + 1]),
            signature=self._signature(found),
            docstring=self._docstring(unit),
            defines=tuple(defines),
            uses=self._uses(self.refs.between(first, last), self.binds.between(first, last), defines),
        )

    def _skeleton(self, unit: _Unit, members: list[_Unit]) -> Chunk:
        first, last = unit.start_row, unit.end_row
        elided: list[tuple[int, int]] = []  # row ranges replaced by "..."
        for member in members:
            body = member.found.body
            assert body is not None
            b_first, b_last = body.start_point[0], _last_row(body)
            if self.language == "python":
                # def f(...):\n    body  -> keep the def line(s) and a short docstring, elide the rest
                if b_first > _sig_row(member):
                    doc_last = _short_docstring_last_row(body)
                    if doc_last is not None:
                        b_first = doc_last + 1
                    if b_first <= b_last:
                        elided.append((b_first, b_last))
            elif b_last - b_first >= 2:
                elided.append((b_first + 1, b_last - 1))  # keep "{" and "}" lines
        elided.sort()
        out: list[str] = []
        kept_rows: list[tuple[int, int]] = []
        row = first
        for e_first, e_last in elided:
            if e_first < row:
                continue
            if e_first > row:
                out.extend(self.lines[row:e_first])
                kept_rows.append((row, e_first - 1))
            body_line = self.lines[e_first] if e_first < len(self.lines) else ""
            indent = body_line[: len(body_line) - len(body_line.lstrip())]
            out.append(f"{indent}...")
            row = e_last + 1
        if row <= last:
            out.extend(self.lines[row : last + 1])
            kept_rows.append((row, last))
        defines = self._defines(unit, first, last)
        refs: list[str] = []
        binds: list[str] = []
        for a, b in kept_rows:
            refs.extend(self.refs.between(a, b))
            binds.extend(self.binds.between(a, b))
        found = unit.found
        return Chunk(
            path=self.path,
            language=self.language,
            kind="class_skeleton",
            symbol=found.name,
            qualified_name=_qualify(self.module, (*unit.scope, found.name)),
            start_line=first + 1,
            end_line=last + 1,
            text="\n".join(out),
            signature=self._signature(found),
            docstring=self._docstring(unit),
            defines=tuple(defines),
            uses=self._uses(refs, binds, defines),
        )

    def _module_chunk(self, first: int, last: int, top_names: list[tuple[str, int]]) -> None:
        if not any(_WORD.search(line) for line in self.lines[first : last + 1]):
            return  # only closing braces/punctuation left over from a namespace: nothing to find
        defines = _unique(n for n, r in top_names if first <= r <= last)
        self.chunks.append(
            Chunk(
                path=self.path,
                language=self.language,
                kind="module",
                symbol="",
                qualified_name=self.module or self.path,
                start_line=first + 1,
                end_line=last + 1,
                text="\n".join(self.lines[first : last + 1]),
                defines=tuple(defines),
                uses=self._uses(self.refs.between(first, last), self.binds.between(first, last), defines),
            )
        )


def _sig_row(unit: _Unit) -> int:
    """Row where a Python definition's header ends (the line holding the colon before the body)."""
    body = unit.found.body
    if body is None:
        return unit.found.core.start_point[0]
    prev = body.prev_sibling
    return prev.start_point[0] if prev is not None else unit.found.core.start_point[0]


def _short_docstring_last_row(body: Node) -> int | None:
    """Last row of a Python block's docstring when it is at most 3 lines (kept in skeletons)."""
    if body.named_child_count == 0:
        return None
    first = body.named_children[0]
    if first.type != "expression_statement" or not first.named_child_count:
        return None
    if first.named_children[0].type != "string":
        return None
    last = _last_row(first)
    return last if last - first.start_point[0] < 3 else None


def _kind(kind: str) -> ChunkKind:
    if kind == "function":
        return "function"
    if kind == "method":
        return "method"
    return "class"


def _by_position(nodes: Sequence[Node]) -> list[Node]:
    return sorted(nodes, key=lambda n: n.start_byte)


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _first_error_row(root: Node) -> int | None:
    node = root
    while True:
        if node.is_error or node.is_missing:
            return int(node.start_point[0])
        nxt = next((c for c in node.children if c.has_error or c.is_missing), None)
        if nxt is None:
            return int(node.start_point[0]) if node is not root else None
        node = nxt


def _gaps(spans: list[tuple[int, int]], n_lines: int) -> list[tuple[int, int]]:
    """Row ranges not covered by any span (0-based, inclusive)."""
    gaps: list[tuple[int, int]] = []
    row = 0
    for first, last in sorted(spans):
        if first > row:
            gaps.append((row, first - 1))
        row = max(row, last + 1)
    if row < n_lines:
        gaps.append((row, n_lines - 1))
    return gaps


def _trim(lines: list[str], first: int, last: int) -> tuple[int, int] | None:
    while first <= last and not lines[first].strip():
        first += 1
    while last >= first and not lines[last].strip():
        last -= 1
    return (first, last) if first <= last else None


def _split_run(
    lines: list[str], first: int, last: int, size: int, cuts: Sequence[int]
) -> Iterator[tuple[int, int]]:
    """Split rows first..last (blank edges trimmed) into pieces of at most ``size`` rows.

    Pieces end just before a statement start (``cuts``) when one falls inside the piece, so a
    statement is only split when it alone is longer than ``size``.
    """
    trimmed = _trim(lines, first, last)
    if trimmed is None:
        return
    first, last = trimmed
    while first <= last:
        if last - first + 1 <= size:
            yield first, last
            return
        limit = first + size  # first row that may not be in this piece
        i = bisect.bisect_right(cuts, limit) - 1
        cut = cuts[i] if i >= 0 and cuts[i] > first else limit
        piece = _trim(lines, first, cut - 1)
        if piece is not None:
            yield piece
        nxt = _trim(lines, cut, last)
        if nxt is None:
            return
        first = nxt[0]


def _windows(lines: list[str], first: int, last: int) -> Iterator[tuple[int, int]]:
    """Overlapping windows of :data:`WINDOW_LINES` rows over first..last, skipping blank ones."""
    trimmed = _trim(lines, first, last)
    if trimmed is None:
        return
    first, last = trimmed
    start = first
    while True:
        end = min(start + WINDOW_LINES - 1, last)
        piece = _trim(lines, start, end)
        if piece is not None:
            yield piece
        if end >= last:
            return
        start = end + 1 - WINDOW_OVERLAP


def _window_chunk(path: str, language: str, lines: list[str], first: int, last: int) -> Chunk:
    return Chunk(
        path=path,
        language=language,
        kind="window",
        symbol="",
        qualified_name=f"{path}#L{first + 1}",
        start_line=first + 1,
        end_line=last + 1,
        text="\n".join(lines[first : last + 1]),
    )


def _sorted_chunks(chunks: list[Chunk]) -> list[Chunk]:
    return sorted(
        chunks,
        key=lambda c: (c.start_line, -c.end_line, _KIND_ORDER.get(c.kind, 9), c.qualified_name, c.text),
    )


# ------------------------------------------------------------------------------ markdown / rst / text

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+>]|\d+[.)])(?:\s|$)")
_RST_ADORNMENT = re.compile(r"^([=\-`:'\"~^_*+#<>.!$%&,/;?@\\|])\1{2,}\s*$")


def _markdown_headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(row, level, title) for each ATX or setext heading outside code fences and front matter."""
    headings: list[tuple[int, int, str]] = []
    row = 0
    if lines and lines[0].strip() == "---":
        for end in range(1, min(len(lines), 200)):
            if lines[end].strip() in ("---", "..."):
                row = end + 1
                break
    fence: str | None = None
    prev_text: int | None = None  # row of the previous plain paragraph line
    while row < len(lines):
        line = lines[row]
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            row += 1
            continue
        if m:
            fence = m.group(1)
            prev_text = None
            row += 1
            continue
        atx = _ATX.match(line)
        if atx:
            headings.append((row, len(atx.group(1)), (atx.group(2) or "").strip()))
            prev_text = None
        elif _SETEXT.match(line) and prev_text == row - 1:
            level = 1 if line.strip().startswith("=") else 2
            headings.append((row - 1, level, lines[row - 1].strip()))
            prev_text = None
        elif line.strip() and not line.startswith(("    ", "\t")) and not _LIST_ITEM.match(line):
            prev_text = row
        else:
            prev_text = None
        row += 1
    return headings


def _rst_headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(row, level, title) for each underlined (optionally overlined) reStructuredText title.

    Levels follow the order in which adornment styles first appear, as docutils does.
    """
    headings: list[tuple[int, int, str]] = []
    styles: dict[tuple[str, bool], int] = {}
    row = 0
    n = len(lines)
    while row < n - 1:
        line = lines[row].rstrip()
        over = _RST_ADORNMENT.match(line)
        if over and row + 2 < n and lines[row + 2].rstrip() == line and lines[row + 1].strip():
            title = lines[row + 1].strip()
            if not _RST_ADORNMENT.match(title):
                level = styles.setdefault((over.group(1), True), len(styles) + 1)
                headings.append((row, level, title))
                row += 3
                continue
        under = _RST_ADORNMENT.match(lines[row + 1].rstrip())
        if (
            under
            and line.strip()
            and not line[0].isspace()
            and not over
            and len(lines[row + 1].rstrip()) >= len(line)
        ):
            level = styles.setdefault((under.group(1), False), len(styles) + 1)
            headings.append((row, level, line.strip()))
            row += 2
            continue
        row += 1
    return headings


def _slug(title: str) -> str:
    text = unicodedata.normalize("NFKC", title).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.strip().replace(" ", "-")


def _section_chunks(
    path: str, language: str, lines: list[str], headings: list[tuple[int, int, str]]
) -> list[Chunk]:
    chunks: list[Chunk] = []
    seen: Counter[str] = Counter()
    trail: list[tuple[int, str]] = []  # enclosing headings (level, title) for the breadcrumb
    bounds = [(0, 0, "")] if not headings or headings[0][0] > 0 else []
    bounds.extend(headings)
    for i, (row, level, title) in enumerate(bounds):
        end = bounds[i + 1][0] - 1 if i + 1 < len(bounds) else len(lines) - 1
        if title or level:
            while trail and trail[-1][0] >= level:
                trail.pop()
            trail.append((level, title))
            base = _slug(title) or "section"
            slug = base if not seen[base] else f"{base}-{seen[base]}"
            seen[base] += 1
            qualified = f"{path}#{slug}"
            breadcrumb = " > ".join(t for _, t in trail if t)
        else:
            qualified, breadcrumb = path, ""
        for first, last in _split_run(lines, row, end, SECTION_MAX_LINES, ()):
            chunks.append(
                Chunk(
                    path=path,
                    language=language,
                    kind="section",
                    symbol=title,
                    qualified_name=qualified,
                    start_line=first + 1,
                    end_line=last + 1,
                    text="\n".join(lines[first : last + 1]),
                    signature=breadcrumb,
                    defines=(title,) if title else (),
                )
            )
    return chunks


def _doc_summary(lines: list[str], headings: list[tuple[int, int, str]]) -> str:
    """A document's title (first heading) and first paragraph, used as its module docstring."""
    heading_rows: set[int] = set()
    for row, _, title in headings:
        heading_rows.add(row)
        for nxt in range(row + 1, min(row + 3, len(lines))):
            text = lines[nxt].strip()
            if not (text == title or _RST_ADORNMENT.match(text) or _SETEXT.match(lines[nxt])):
                break
            heading_rows.add(nxt)
    start = 0
    if lines and lines[0].strip() == "---":  # front matter
        start = next((i + 1 for i in range(1, min(len(lines), 200)) if lines[i].strip() in ("---", "...")), 0)
    para: list[str] = []
    for row in range(start, min(len(lines), start + 200)):
        line = lines[row].strip()
        if line and row not in heading_rows and not _FENCE.match(line):
            para.append(line)
        elif para:
            break
    title = headings[0][2] if headings else ""
    return "\n\n".join(p for p in (title, "\n".join(para)) if p)[:_MAX_DOCSTRING]


# ---------------------------------------------------------------------------------------- entry point


def _split_lines(source: str) -> list[str]:
    if not source:
        return []
    lines = source.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def _text_chunks(path: str, language: str, lines: list[str]) -> list[Chunk]:
    return [_window_chunk(path, language, lines, a, b) for a, b in _windows(lines, 0, len(lines) - 1)]


def chunk_file(path: str, source: str, *, language: str | None = None) -> FileChunks:
    """Chunk one file. ``language`` defaults to :func:`language_for_path` (``text`` when unknown).

    Never raises: a file with syntax errors is chunked as far as it parses (plus windows), with
    ``parsed=False`` and a warning; an internal failure falls back to windows the same way.
    """
    lang = language or language_for_path(path) or "text"
    if source.startswith("\ufeff"):
        source = source[1:]
    lines = _split_lines(source)
    if not any(line.strip() for line in lines):
        return FileChunks(path=path, language=lang, chunks=(), line_count=len(lines))
    try:
        if lang in code_languages():
            return _CodeChunker(path, lang, source, lines).run()
        if lang in ("markdown", "rst"):
            headings = _markdown_headings(lines) if lang == "markdown" else _rst_headings(lines)
            return FileChunks(
                path=path,
                language=lang,
                chunks=tuple(_sorted_chunks(_section_chunks(path, lang, lines, headings))),
                module_docstring=_doc_summary(lines, headings),
                line_count=len(lines),
            )
        return FileChunks(
            path=path,
            language=lang,
            chunks=tuple(_text_chunks(path, lang, lines)),
            line_count=len(lines),
        )
    except Exception as exc:  # never let one odd file stop an index run
        return FileChunks(
            path=path,
            language=lang,
            chunks=tuple(_text_chunks(path, lang, lines)),
            line_count=len(lines),
            parsed=False,
            warnings=(f"{path}: chunker failed ({type(exc).__name__}: {exc}); chunked as windows",),
        )
