"""Independent symbol extraction for the corpus checker: function/method name -> line range.

Deliberately separate from ``indexing.chunker`` so the corpus can be validated without (and against)
the code under test. Python uses :mod:`ast`; TypeScript/JavaScript, Go and Rust use tree-sitter
grammars directly. Names follow the convention of ``expected.symbol`` in the cases: ``func`` for free
functions, ``Type.method`` for methods (Go receivers and Rust ``impl`` types without ``*``/``&``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import PurePosixPath
from typing import Any


@dataclass(frozen=True, slots=True)
class Symbol:
    """A named function or method and its 1-based inclusive line range."""

    name: str
    start: int
    end: int

    @property
    def last(self) -> str:
        """The simple name (``handle`` for ``Server.handle``)."""
        return self.name.rsplit(".", 1)[-1]

    def contains(self, line: int) -> bool:
        """True when ``line`` falls inside the symbol."""
        return self.start <= line <= self.end


def language_of(path: str) -> str | None:
    """Language by file extension, or None for files we do not parse."""
    suffix = PurePosixPath(path).suffix
    return {
        ".py": "python",
        ".ts": "typescript",
        ".tsx": "tsx",
        ".js": "javascript",
        ".mjs": "javascript",
        ".go": "go",
        ".rs": "rust",
    }.get(suffix)


def extract_symbols(path: str, text: str) -> list[Symbol]:
    """Functions and methods defined in ``text`` (the file at ``path``)."""
    lang = language_of(path)
    if lang == "python":
        return _python_symbols(text)
    if lang in ("typescript", "tsx", "javascript"):
        return _ts_symbols(lang, text)
    if lang == "go":
        return _go_symbols(text)
    if lang == "rust":
        return _rust_symbols(text)
    return []


# -- python ---------------------------------------------------------------------------------------


def _python_symbols(text: str) -> list[Symbol]:
    out: list[Symbol] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                out.append(Symbol(name, start, child.end_lineno or child.lineno))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(text), "")
    return out


# -- tree-sitter ----------------------------------------------------------------------------------


@cache
def _parser(lang: str) -> Any:
    import tree_sitter

    if lang == "typescript":
        import tree_sitter_typescript

        capsule = tree_sitter_typescript.language_typescript()
    elif lang == "tsx":
        import tree_sitter_typescript

        capsule = tree_sitter_typescript.language_tsx()
    elif lang == "javascript":
        import tree_sitter_javascript

        capsule = tree_sitter_javascript.language()
    elif lang == "go":
        import tree_sitter_go

        capsule = tree_sitter_go.language()
    elif lang == "rust":
        import tree_sitter_rust

        capsule = tree_sitter_rust.language()
    else:  # pragma: no cover - guarded by language_of
        raise ValueError(lang)
    return tree_sitter.Parser(tree_sitter.Language(capsule))


def _parse(lang: str, text: str) -> Any:
    return _parser(lang).parse(text.encode("utf-8")).root_node


def _name(node: Any, field: str = "name") -> str:
    child = node.child_by_field_name(field)
    return child.text.decode("utf-8") if child is not None else ""


def _span(node: Any) -> tuple[int, int]:
    return node.start_point[0] + 1, node.end_point[0] + 1


def _ts_symbols(lang: str, text: str) -> list[Symbol]:
    out: list[Symbol] = []

    def visit(node: Any, cls: str) -> None:
        for child in node.named_children:
            kind = child.type
            if kind in ("function_declaration", "generator_function_declaration"):
                out.append(Symbol(_name(child), *_span(child)))
                visit(child, cls)
            elif kind in ("class_declaration", "abstract_class_declaration", "class"):
                visit(child, _name(child))
            elif kind == "method_definition" and cls:
                out.append(Symbol(f"{cls}.{_name(child)}", *_span(child)))
                visit(child, cls)
            elif kind == "variable_declarator":
                value = child.child_by_field_name("value")
                if value is not None and value.type in ("arrow_function", "function_expression", "function"):
                    out.append(Symbol(_name(child), *_span(child)))
                visit(child, cls)
            else:
                visit(child, cls)

    visit(_parse(lang, text), "")
    return out


def _go_receiver_type(node: Any) -> str:
    receiver = node.child_by_field_name("receiver")
    if receiver is None:
        return ""
    for param in receiver.named_children:
        typ = param.child_by_field_name("type")
        while typ is not None and typ.type in ("pointer_type", "generic_type"):
            inner = typ.named_children[0] if typ.named_children else None
            typ = inner
        if typ is not None:
            return str(typ.text.decode("utf-8"))
    return ""


def _go_symbols(text: str) -> list[Symbol]:
    out: list[Symbol] = []
    for child in _parse("go", text).named_children:
        if child.type == "function_declaration":
            out.append(Symbol(_name(child), *_span(child)))
        elif child.type == "method_declaration":
            out.append(Symbol(f"{_go_receiver_type(child)}.{_name(child)}", *_span(child)))
    return out


def _rust_impl_type(node: Any) -> str:
    typ = node.child_by_field_name("type")
    while typ is not None and typ.type in ("reference_type", "generic_type", "pointer_type"):
        inner = typ.child_by_field_name("type")
        typ = inner if inner is not None else (typ.named_children[0] if typ.named_children else None)
    if typ is None:
        return ""
    return str(typ.text.decode("utf-8")).rsplit("::", 1)[-1]


def _rust_symbols(text: str) -> list[Symbol]:
    out: list[Symbol] = []

    def visit(node: Any, owner: str) -> None:
        for child in node.named_children:
            if child.type == "function_item":
                name = _name(child)
                out.append(Symbol(f"{owner}.{name}" if owner else name, *_span(child)))
            elif child.type in ("impl_item", "trait_item"):
                visit(child, _rust_impl_type(child) if child.type == "impl_item" else _name(child))
            elif child.type in ("declaration_list", "mod_item", "source_file"):
                visit(child, owner)

    visit(_parse("rust", text), "")
    return out
