"""Tree-sitter chunking: per-language fixtures, skeletons, module chunks, documents, broken input."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from indexing import chunker
from indexing.chunker import chunk_file, module_qualified_name
from indexing.languages import code_languages
from indexing.model import Chunk, FileChunks

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "chunking"


def load(fixture: str) -> str:
    return (FIXTURES / fixture).read_text(encoding="utf-8")


def chunk_fixture(fixture: str, path: str) -> tuple[FileChunks, str]:
    source = load(fixture)
    return chunk_file(path, source), source


def source_lines(source: str, chunk: Chunk) -> str:
    return "\n".join(source.split("\n")[chunk.start_line - 1 : chunk.end_line])


def by_qname(fc: FileChunks, qname: str, kind: str | None = None) -> Chunk:
    found = [c for c in fc.chunks if c.qualified_name == qname and (kind is None or c.kind == kind)]
    assert len(found) == 1, (qname, kind, [(c.kind, c.qualified_name) for c in fc.chunks])
    return found[0]


def check_invariants(fc: FileChunks, source: str) -> None:
    """Spans are exact source lines, order is deterministic, every line with content is covered."""
    lines = source.split("\n")
    for c in fc.chunks:
        assert 1 <= c.start_line <= c.end_line <= fc.line_count
        assert c.path == fc.path
        if c.kind != "class_skeleton":
            assert c.text == source_lines(source, c), c.qualified_name
        assert list(c.uses) == sorted(set(c.uses))
        assert not set(c.uses) & set(c.defines)
        assert len(c.uses) <= chunker.MAX_USES
    keys = [(c.start_line, -c.end_line) for c in fc.chunks]
    assert keys == sorted(keys)
    covered: set[int] = set()
    for c in fc.chunks:
        covered.update(range(c.start_line, c.end_line + 1))
    for number, line in enumerate(lines[: fc.line_count], start=1):
        if any(ch.isalnum() for ch in line):
            assert number in covered, f"line {number} not in any chunk: {line!r}"
    assert chunk_file(fc.path, source, language=fc.language) == fc  # deterministic


# ------------------------------------------------------------------------------------------- python


def test_python_functions_classes_methods_and_module_chunks() -> None:
    fc, source = chunk_fixture("py/shapes/geometry.py", "shapes/geometry.py")
    check_invariants(fc, source)
    assert fc.language == "python" and fc.parsed and not fc.warnings
    assert fc.module_docstring.startswith("Geometry helpers: shapes with areas and perimeters.")
    assert fc.imports == ("math", "dataclasses", "typing", ".units")  # __future__ is not a dependency
    assert fc.defines == ("HasArea", "register", "Circle", "total_area", "DEFAULT_UNIT", "_REGISTRY")
    assert fc.line_count == len(source.splitlines())

    kinds = [(c.kind, c.qualified_name) for c in fc.chunks]
    assert kinds == [
        ("module", "shapes.geometry"),
        ("class", "shapes.geometry.HasArea"),
        ("method", "shapes.geometry.HasArea.area"),
        ("function", "shapes.geometry.register"),
        ("class", "shapes.geometry.Circle"),
        ("method", "shapes.geometry.Circle.area"),
        ("method", "shapes.geometry.Circle.perimeter"),
        ("method", "shapes.geometry.Circle.scaled"),
        ("function", "shapes.geometry.total_area"),
        ("module", "shapes.geometry"),
    ]

    circle = by_qname(fc, "shapes.geometry.Circle")
    assert circle.symbol == "Circle"
    assert circle.text.startswith("@register\n@dataclass(frozen=True)\nclass Circle:")  # decorators belong
    assert circle.signature == "class Circle"
    assert circle.docstring == "A circle given by its radius."
    assert {"Circle", "area", "perimeter", "scaled", "radius", "unit", "last_factor"} <= set(circle.defines)
    assert {"register", "dataclass", "math", "to_unit", "DEFAULT_UNIT"} <= set(circle.uses)

    area = by_qname(fc, "shapes.geometry.Circle.area")
    assert (area.start_line, area.end_line) == (36, 38)
    assert area.signature == "def area(self) -> float"
    assert area.docstring == "Area of the circle."
    assert area.uses == ("math", "pi", "radius")

    perimeter = by_qname(fc, "shapes.geometry.Circle.perimeter")
    assert perimeter.text.lstrip().startswith("@property")
    assert perimeter.start_line == 40

    scaled = by_qname(fc, "shapes.geometry.Circle.scaled")
    assert scaled.defines == ("scaled", "clamp", "last_factor")  # nested def + assigned attribute
    assert "factor" not in scaled.uses and "value" not in scaled.uses  # parameters are not uses
    assert {"Circle", "to_unit", "DEFAULT_UNIT", "radius"} <= set(scaled.uses)

    total = by_qname(fc, "shapes.geometry.total_area")
    assert total.signature == "async def total_area(shapes: list[HasArea], *, precision: int = 2) -> float"
    assert total.docstring == "Sum the areas of ``shapes``, rounded."
    assert "round" not in total.uses and "sum" not in total.uses  # builtins are noise
    assert "HasArea" in total.uses

    first_module, last_module = fc.chunks[0], fc.chunks[-1]
    assert first_module.start_line == 1 and first_module.end_line == 15
    assert first_module.defines == ("DEFAULT_UNIT", "_REGISTRY")
    assert first_module.symbol == "" and "import math" in first_module.text
    assert last_module.text.startswith('if __name__ == "__main__":')


def test_python_package_init_is_named_after_the_package() -> None:
    fc, source = chunk_fixture("py/shapes/__init__.py", "shapes/__init__.py")
    check_invariants(fc, source)
    assert fc.module_docstring == "The shapes package."
    assert by_qname(fc, "shapes.version").kind == "function"
    assert module_qualified_name("__init__.py", "python") == ""
    assert chunk_file("__init__.py", "def f():\n    return 1\n").chunks[0].qualified_name == "f"


def test_large_class_becomes_skeleton_plus_methods() -> None:
    fc, source = chunk_fixture("py/big.py", "calc/big.py")
    check_invariants(fc, source)
    skeletons = [c for c in fc.chunks if c.kind == "class_skeleton"]
    assert len(skeletons) == 1
    assert not [c for c in fc.chunks if c.kind == "class"]  # no whole-class chunk for a large class
    skel = skeletons[0]
    assert (skel.qualified_name, skel.start_line, skel.end_line) == ("calc.big.Calculator", 8, 94)
    assert skel.end_line - skel.start_line + 1 > chunker.SKELETON_MIN_LINES
    assert skel.docstring == "Accumulates operations."
    assert skel.signature == "class Calculator(BaseCalculator)"
    text = skel.text
    assert text.startswith('class Calculator(BaseCalculator):\n    """Accumulates operations."""')
    assert "    precision: int = 2" in text and "MAX_HISTORY = 100" in text  # fields stay
    assert "    @staticmethod\n    def normalize(value: int) -> int:\n        ...\n" in text
    assert '    def op_3(self, value: int) -> int:\n        """Operation 3."""\n        ...\n' in text
    assert "result = value" not in text and "self.history.append" not in text  # bodies elided
    assert "def one_liner(self): return 1" in text
    assert len(text.splitlines()) < 70
    assert {"op_0", "op_11", "normalize", "precision", "MAX_HISTORY", "value", "history"} <= set(skel.defines)
    assert "BaseCalculator" in skel.uses

    methods = [c.symbol for c in fc.chunks if c.kind == "method"]
    assert methods == ["__init__", "normalize", *[f"op_{i}" for i in range(12)], "one_liner"]
    op7 = by_qname(fc, "calc.big.Calculator.op_7")
    assert op7.docstring == "Operation 7."
    assert {"history", "append", "normalize"} <= set(op7.uses)
    init = by_qname(fc, "calc.big.Calculator.__init__")
    assert init.defines == ("__init__", "value", "history")


@pytest.mark.parametrize(
    ("path", "header", "method", "local"),
    [
        (
            "Big.java",
            "/** Big. */\npublic class Big {\n    private int f;\n",
            "    public int m{i}(int x) {{",
            "int",
        ),
        (
            "big.rs",
            "/// Big.\nimpl Big {\n    const F: u32 = 1;\n",
            "    fn m{i}(&self, x: u32) -> u32 {{",
            "let",
        ),
        (
            "big.ts",
            "/** Big. */\nclass Big {\n    private f = 1;\n",
            "    m{i}(x: number): number {{",
            "const",
        ),
    ],
)
def test_brace_language_skeleton_keeps_signatures_and_braces(
    path: str, header: str, method: str, local: str
) -> None:
    methods = "".join(
        "\n" + method.format(i=i) + f"\n        {local} y = x + {i};\n        return y * 2;\n    }}\n"
        for i in range(20)
    )
    source = header + methods + "}\n"
    fc = chunk_file(path, source)
    check_invariants(fc, source)
    skel = fc.chunks[0]
    assert skel.kind == "class_skeleton" and skel.symbol == "Big"
    assert (skel.start_line, skel.end_line) == (1, 104)
    assert skel.docstring == "Big."
    first = method.format(i=0).replace("{{", "{")
    assert skel.text.startswith(header + "\n" + first + "\n        ...\n    }\n")
    assert "return y * 2" not in skel.text and skel.text.endswith("\n}")
    assert [c.symbol for c in fc.chunks if c.kind == "method"] == [f"m{i}" for i in range(20)]
    assert "Big" not in fc.defines or path != "big.rs"  # an impl block defines no new name


def test_small_class_keeps_whole_chunk_and_methods() -> None:
    source = "class A:\n    x = 1\n\n    def f(self):\n        return self.x\n"
    fc = chunk_file("a.py", source)
    assert [(c.kind, c.qualified_name, c.start_line, c.end_line) for c in fc.chunks] == [
        ("class", "a.A", 1, 5),
        ("method", "a.A.f", 4, 5),
    ]


def test_long_function_stays_one_chunk_and_long_module_code_is_split() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(200))
    consts = "".join(f"C{i} = {i}\n" for i in range(150))
    source = f"def long():\n{body}    return 0\n\n\n{consts}"
    fc = chunk_file("m.py", source)
    check_invariants(fc, source)
    func = by_qname(fc, "m.long")
    assert (func.start_line, func.end_line) == (1, 202)
    modules = [c for c in fc.chunks if c.kind == "module"]
    assert len(modules) == 3
    assert all(c.end_line - c.start_line + 1 <= chunker.MODULE_MAX_LINES for c in modules)
    assert modules[0].start_line == 205 and modules[-1].end_line == 354
    assert modules[0].defines[:2] == ("C0", "C1")


def test_uses_are_capped() -> None:
    calls = "".join(f"    name_{i}()\n" for i in range(chunker.MAX_USES + 50))
    fc = chunk_file("m.py", f"def f():\n{calls}")
    assert len(fc.chunks[0].uses) == chunker.MAX_USES


def test_crlf_source_keeps_exact_lines() -> None:
    source = 'def f(a,\r\n      b):\r\n    """Doc."""\r\n    return a\r\n'
    fc = chunk_file("crlf.py", source)
    (func,) = fc.chunks
    assert func.text == source_lines(source, func)
    assert func.signature == "def f(a, b)"
    assert func.docstring == "Doc."


# ---------------------------------------------------------------------------------- javascript / ts


def test_typescript() -> None:
    fc, source = chunk_fixture("ts/stack.ts", "src/stack.ts")
    check_invariants(fc, source)
    assert fc.language == "typescript" and fc.parsed
    assert fc.module_docstring == "A typed stack and helpers."
    assert fc.imports == ("./logger", "path", "./errors")
    assert set(fc.defines) == {
        "StackOptions", "Color", "Stack", "fromArray", "isEmpty", "Util", "DEFAULT_CAPACITY", "Id",
    }  # fmt: skip
    kinds = {(c.kind, c.qualified_name) for c in fc.chunks}
    assert {
        ("class", "src.stack.StackOptions"),
        ("class", "src.stack.Color"),
        ("class", "src.stack.Stack"),
        ("method", "src.stack.Stack.constructor"),
        ("method", "src.stack.Stack.push"),
        ("method", "src.stack.Stack.onChange"),  # arrow function in a class field
        ("method", "src.stack.Stack.capacity"),
        ("function", "src.stack.fromArray"),  # exported const arrow function
        ("function", "src.stack.isEmpty"),
        ("function", "src.stack.Util.clamp"),  # namespaces qualify
    } <= kinds
    assert not any(c.symbol == "Id" for c in fc.chunks)  # a one-line type alias is not substantial

    options = by_qname(fc, "src.stack.StackOptions")
    assert options.start_line == 10  # JSDoc above the export belongs to the chunk
    assert options.docstring == "Options accepted by {@link Stack}."
    assert options.defines == ("StackOptions", "capacity", "name")

    stack = by_qname(fc, "src.stack.Stack")
    assert stack.text.startswith("/** A bounded LIFO stack. */\n@sealed\nexport class Stack<T>")
    assert stack.signature == "class Stack<T> extends Base implements Iterable<T>"
    assert stack.docstring == "A bounded LIFO stack."
    assert {"items", "logger", "push", "onChange"} <= set(stack.defines)

    push = by_qname(fc, "src.stack.Stack.push")
    assert (push.start_line, push.end_line) == (35, 42)
    assert push.text.lstrip().startswith("/** Push an item; throws when full. */\n  @logged()")
    assert push.docstring == "Push an item; throws when full."
    assert push.signature == "push(item: T): void"
    assert {"StackFullError", "capacity", "items", "options", "logged"} <= set(push.uses)
    assert "item" not in push.uses

    from_array = by_qname(fc, "src.stack.fromArray")
    assert from_array.docstring == "Build a stack from an array."
    assert from_array.signature == "const fromArray = <T>(values: T[]): Stack<T> =>"
    assert {"Stack", "basename", "path"} <= set(from_array.uses)
    assert "values" not in from_array.uses and "stack" not in from_array.uses

    type_alias = next(c for c in fc.chunks if c.kind == "module" and "type Id" in c.text)
    assert type_alias.defines == ("Id",)


def test_tsx() -> None:
    fc, source = chunk_fixture("ts/widget.tsx", "ui/widget.tsx")
    check_invariants(fc, source)
    assert fc.language == "tsx" and fc.parsed
    assert fc.imports == ("react",)
    qnames = [(c.kind, c.qualified_name) for c in fc.chunks]
    assert ("function", "ui.widget.Button") in qnames
    assert ("class", "ui.widget.Panel") in qnames and ("method", "ui.widget.Panel.render") in qnames
    assert "track" in by_qname(fc, "ui.widget.Button").uses


def test_javascript() -> None:
    fc, source = chunk_fixture("js/util.js", "lib/util.js")
    check_invariants(fc, source)
    assert fc.language == "javascript" and fc.parsed
    assert fc.module_docstring == "Small utilities shared by the CLI."
    assert fc.imports == ("fs", "./paths.mjs")
    read_json = by_qname(fc, "lib.util.readJson")
    assert read_json.kind == "function" and read_json.start_line == 7
    assert read_json.docstring == "Read a JSON file.\n@param {string} file"
    assert read_json.signature == "async function readJson(file)"
    assert {"readFile", "promises", "parse", "JSON", "fs"} <= set(read_json.uses)
    assert by_qname(fc, "lib.util.Cache").kind == "class"
    assert by_qname(fc, "lib.util.Cache.get").kind == "method"
    assert by_qname(fc, "lib.util.Cache.set").defines == ("set", "size")
    assert by_qname(fc, "lib.util.slugify").kind == "function"
    assert by_qname(fc, "lib.util.Cache.clear").kind == "method"  # Cache.prototype.clear = function
    assert fc.chunks[-1].kind == "module" and "module.exports" in fc.chunks[-1].text


def test_javascript_commonjs_one_chunk_per_function() -> None:
    # The shapes of sprintf-js (an IIFE, `sprintf.format = function`) and json-stable-stringify
    # (`module.exports = function stableStringify`): before, these files were line windows only.
    source = (
        "!function () {\n"
        "    'use strict'\n"
        "    function sprintf(key) {\n"
        "        return sprintf.format(key)\n"
        "    }\n"
        "    sprintf.format = function (tree) {\n"
        "        return tree.join('')\n"
        "    }\n"
        "    if (typeof exports !== 'undefined') { exports.sprintf = sprintf }\n"
        "}()\n"
    )
    fc = chunk_file("src/sprintf.js", source)
    check_invariants(fc, source)
    assert by_qname(fc, "src.sprintf.sprintf").start_line == 3
    fmt = by_qname(fc, "src.sprintf.sprintf.format")
    assert fmt.kind == "function" and (fmt.start_line, fmt.end_line) == (6, 8)
    source2 = (
        "var json = require('jsonify');\n"
        "module.exports = function stableStringify(obj, opts) {\n"
        "    return json.stringify(obj);\n"
        "};\n"
    )
    fc2 = chunk_file("index.js", source2)
    check_invariants(fc2, source2)
    assert by_qname(fc2, "index.stableStringify").start_line == 2
    source3 = "module.exports = {\n  add: function (a, b) { return a + b },\n  sub(a, b) {\n    return a - b\n  },\n}\n"
    fc3 = chunk_file("calc.js", source3)
    check_invariants(fc3, source3)
    assert by_qname(fc3, "calc.add").start_line == 2 and by_qname(fc3, "calc.sub").end_line == 5


# ----------------------------------------------------------------------------------------------- go


def test_go() -> None:
    fc, source = chunk_fixture("go/stack/stack.go", "stack/stack.go")
    check_invariants(fc, source)
    assert fc.module_docstring == "Package stack implements a generic stack."
    assert fc.imports == ("errors", "fmt")
    assert fc.defines == ("Stack", "Sizer", "New", "config", "ErrEmpty", "maxSize", "ID", "Option")
    qnames = [(c.kind, c.qualified_name) for c in fc.chunks if c.kind != "module"]
    assert qnames == [
        ("class", "stack.stack.Stack"),
        ("class", "stack.stack.Sizer"),
        ("function", "stack.stack.New"),
        ("method", "stack.stack.Stack.Push"),
        ("method", "stack.stack.Stack.Pop"),
        ("method", "stack.stack.Stack.Size"),
        ("class", "stack.stack.config"),  # struct inside a grouped type declaration
    ]
    stack = by_qname(fc, "stack.stack.Stack")
    assert (stack.start_line, stack.end_line) == (14, 19)
    assert stack.docstring == "Stack is a LIFO container.\nIt is not safe for concurrent use."
    assert stack.signature == "type Stack[T any] struct"
    assert stack.defines == ("Stack", "items", "name")
    pop = by_qname(fc, "stack.stack.Stack.Pop")
    assert pop.symbol == "Pop" and pop.docstring == "Pop removes the top item."
    assert pop.signature == "func (s *Stack[T]) Pop() (T, error)"
    assert {"ErrEmpty", "Errorf", "fmt", "items", "Stack"} <= set(pop.uses)
    assert "top" not in pop.uses and "len" not in pop.uses
    assert by_qname(fc, "stack.stack.Sizer").defines == ("Sizer", "Size")
    # `type ID int` is too small for its own chunk: it lives in a module chunk
    assert any(c.kind == "module" and "type ID int" in c.text for c in fc.chunks)


# --------------------------------------------------------------------------------------------- rust


def test_rust() -> None:
    fc, source = chunk_fixture("rust/src/lib.rs", "src/lib.rs")
    check_invariants(fc, source)
    assert fc.module_docstring == "A tiny shapes crate.\nSecond line of crate docs."
    assert fc.imports == ("std::collections::HashMap", "std::fmt::{self, Display}", "super::Shape")
    assert set(fc.defines) == {"Point", "Area", "Shape", "square", "registry", "MAX_SIDES"}
    point = by_qname(fc, "src.lib.Point")
    assert point.kind == "class" and point.start_line == 9  # doc comment + #[derive] belong
    assert point.text.startswith("/// A point in the plane.\n#[derive(Debug, Clone, Copy)]\npub struct Point")
    assert point.docstring == "A point in the plane."
    assert point.defines == ("Point", "x", "y")
    area = by_qname(fc, "src.lib.Area")
    assert area.defines == ("Area", "double_area", "area")
    double = by_qname(fc, "src.lib.Area.double_area")
    assert double.kind == "method" and double.docstring == "Twice the area."
    impls = [c for c in fc.chunks if c.qualified_name == "src.lib.Shape" and c.kind == "class"]
    assert [c.signature for c in impls] == ["pub enum Shape", "impl Shape", "impl Display for Shape"]
    circle = by_qname(fc, "src.lib.Shape.circle")
    assert circle.kind == "method" and circle.docstring == "Builds a circle."
    assert circle.signature == "pub fn circle(center: Point, radius: f64) -> Self"
    assert by_qname(fc, "src.lib.Shape.fmt").kind == "method"
    assert {"MAX_SIDES", "Polygon", "len"} <= set(by_qname(fc, "src.lib.Shape.sides").uses)
    hist = by_qname(fc, "src.lib.registry.histogram")  # mod blocks qualify
    assert hist.kind == "function" and {"HashMap", "entry", "sides"} <= set(hist.uses)
    assert by_qname(fc, "src.lib.square").kind == "function"  # macro_rules!


# --------------------------------------------------------------------------------------------- java


def test_java() -> None:
    fc, source = chunk_fixture("java/com/acme/Inventory.java", "src/com/acme/Inventory.java")
    check_invariants(fc, source)
    assert fc.imports == ("java.util.ArrayList", "java.util.List", "java.util.Objects.requireNonNull")
    assert fc.defines == ("Inventory",)
    prefix = "src.com.acme.Inventory.Inventory"
    cls = by_qname(fc, prefix, "class")
    assert (cls.start_line, cls.end_line) == (7, 45)  # Javadoc and @Entity included
    assert cls.docstring == "An inventory of items."
    assert {"items", "version", "add", "count", "Status", "Listener"} <= set(cls.defines)
    ctor = by_qname(fc, f"{prefix}.Inventory", "method")
    assert ctor.docstring == "Creates an empty inventory." and ctor.signature == "public Inventory()"
    add = by_qname(fc, f"{prefix}.add")
    assert (add.start_line, add.end_line) == (20, 28)
    assert add.docstring == "Adds an item.\n@param item the item"
    assert add.signature == "@Override public void add(Item item)"
    assert {"Item", "items", "requireNonNull", "version"} <= set(add.uses)
    assert by_qname(fc, f"{prefix}.Status").kind == "class"
    assert by_qname(fc, f"{prefix}.Status.isOpen").kind == "method"  # method in an enum body
    assert by_qname(fc, f"{prefix}.Listener").kind == "class"
    assert not any(c.symbol == "changed" for c in fc.chunks)  # abstract interface methods are no chunks


# ---------------------------------------------------------------------------------------- documents


def test_markdown_sections() -> None:
    fc, source = chunk_fixture("docs/guide.md", "docs/guide.md")
    check_invariants(fc, source)
    assert fc.language == "markdown"
    assert fc.module_docstring == "Getting Started\n\nIntro paragraph before any heading."
    got = [(c.kind, c.symbol, c.qualified_name, c.start_line, c.end_line, c.signature) for c in fc.chunks]
    assert got == [
        ("section", "", "docs/guide.md", 1, 5, ""),  # front matter + intro
        ("section", "Getting Started", "docs/guide.md#getting-started", 7, 14, "Getting Started"),
        (
            "section",
            "Configuration",
            "docs/guide.md#configuration",
            16,
            18,
            "Getting Started > Configuration",
        ),
        ("section", "Usage", "docs/guide.md#usage", 20, 23, "Getting Started > Usage"),  # setext heading
        (
            "section",
            "Configuration",
            "docs/guide.md#configuration-1",
            25,
            27,
            "Getting Started > Configuration",
        ),
    ]
    assert "# not a heading" in fc.chunks[1].text  # inside a code fence


def test_markdown_huge_section_is_split() -> None:
    source = "# Big\n\n" + "".join(f"line {i}\n" for i in range(150))
    fc = chunk_file("big.md", source)
    check_invariants(fc, source)
    assert len(fc.chunks) == 3
    assert all(c.symbol == "Big" and c.kind == "section" for c in fc.chunks)
    assert all(c.end_line - c.start_line + 1 <= chunker.SECTION_MAX_LINES for c in fc.chunks)


def test_rst_sections() -> None:
    fc, source = chunk_fixture("docs/manual.rst", "docs/manual.rst")
    check_invariants(fc, source)
    assert [(c.symbol, c.start_line, c.signature) for c in fc.chunks] == [
        ("Manual", 1, "Manual"),
        ("Installing", 7, "Manual > Installing"),
        ("Details", 12, "Manual > Installing > Details"),
        ("Running", 17, "Manual > Running"),
    ]
    assert fc.module_docstring == "Manual\n\nWelcome."


def test_text_windows() -> None:
    source = "".join(f"key_{i} = {i}\n" for i in range(120))
    fc = chunk_file("config/settings.toml", source)
    check_invariants(fc, source)
    assert fc.language == "text"
    assert [(c.kind, c.start_line, c.end_line, c.qualified_name) for c in fc.chunks] == [
        ("window", 1, 50, "config/settings.toml#L1"),
        ("window", 41, 90, "config/settings.toml#L41"),
        ("window", 81, 120, "config/settings.toml#L81"),
    ]


@pytest.mark.parametrize("source", ["", "\n\n", "   \n\t\n"])
@pytest.mark.parametrize("path", ["a.py", "a.ts", "a.md", "a.txt", "a.go"])
def test_empty_files_have_no_chunks(path: str, source: str) -> None:
    fc = chunk_file(path, source)
    assert fc.chunks == () and fc.parsed and fc.line_count == source.count("\n")


def test_language_override_and_unknown_language() -> None:
    assert chunk_file("script", "def f():\n    pass\n", language="python").chunks[0].kind == "function"
    fc = chunk_file("weird.unknownext", "hello\n")
    assert fc.language == "text" and fc.chunks[0].kind == "window"


# ----------------------------------------------------------------------------------- broken input


def test_syntax_error_keeps_good_definitions_and_windows_the_rest() -> None:
    fc, source = chunk_fixture("bad/broken.py", "bad/broken.py")
    check_invariants(fc, source)
    assert not fc.parsed
    assert len(fc.warnings) == 1 and "syntax error" in fc.warnings[0] and "line 9" in fc.warnings[0]
    good = by_qname(fc, "bad.broken.good")
    assert good.kind == "function" and good.docstring == "Fine."
    windows = [c for c in fc.chunks if c.kind == "window"]
    assert windows and all(c.qualified_name == f"bad/broken.py#L{c.start_line}" for c in windows)
    assert any("def broken(x:" in c.text for c in windows)


def test_error_inside_a_class_keeps_its_clean_methods() -> None:
    source = "class A:\n    def ok(self):\n        return 1\n\n    def bad(self):\n        return (\n"
    fc = chunk_file("a.py", source)
    check_invariants(fc, source)
    assert not fc.parsed
    assert by_qname(fc, "a.A.ok").kind == "method"
    assert not any(c.kind == "class" for c in fc.chunks)


@pytest.mark.parametrize("language", sorted(code_languages()))
def test_garbage_never_raises(language: str) -> None:
    rng = random.Random(language)
    alphabet = "{}()[];:,.=<>/\\\"'`#@!?*&|\n\t abcdefXYZ0123456789\u00e9\u4e2d\ud800"
    for _ in range(20):
        source = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 400)))
        fc = chunk_file(f"x.{language}", source, language=language)
        assert fc.language == language
        for c in fc.chunks:
            assert c.start_line <= c.end_line


def test_internal_failure_falls_back_to_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(self: object) -> FileChunks:
        raise RuntimeError("kaput")

    monkeypatch.setattr(chunker._CodeChunker, "run", boom)
    fc = chunk_file("a.py", "x = 1\n")
    assert not fc.parsed and "kaput" in fc.warnings[0]
    assert [c.kind for c in fc.chunks] == ["window"]


def test_bom_is_ignored() -> None:
    fc = chunk_file("a.py", "\ufeffdef f():\n    return 1\n")
    assert fc.parsed and fc.chunks[0].qualified_name == "a.f"
