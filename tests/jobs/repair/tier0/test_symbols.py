"""Symbol table of tier 0: extraction per language, lookups, closest-name resolution."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from jobs.repair.tier0.symbols import (
    FileSymbols,
    SymbolTable,
    closest,
    extract,
    go_receiver_type,
    language_for,
    python_module,
    similarity,
)


class DictSource:
    """A SourceView over an in-memory tree."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self._files = dict(files)

    def read(self, path: str) -> str | None:
        return self._files.get(path)

    def files(self) -> Sequence[str]:
        return sorted(self._files)


PY = '''"""Doc."""
from app.util import a, b as c
import app.dates as d, os
from . import sibling

LIMIT = 3


class Base:
    kind = "base"


class Cart(Base):
    size: int = 0

    def __init__(self, owner, *items, discount=0.0, **extra):
        self.owner = owner
        self.items = list(items)

    @staticmethod
    def empty(x, y=2):
        return helper(x)

    def total(self):
        subtotal, n = 0, 0
        for price in self.items:
            subtotal += price
        return subtotal


def helper(a, /, b, *, c):
    return a


if True:
    def conditional():
        pass
'''

JS = """import { a, b as c } from './x';
import def, * as ns from "./y.js";
const { q } = require('../q');
export function f(x, y = 2, ...rest) { return g(x); }
export const h = (a) => a + 1;
export class K extends Base { constructor() { super(); this.z = 1; } m(q) { return this.z; } }
function internal() {}
module.exports = { internal };
"""

TS = """export interface Shape { area(): number; name: string }
export type Point = { x: number; y: number };
export class Circle implements Shape {
  private r = 1;
  name: string = "c";
  area(): number { return 3 * this.r; }
}
export default function make(r: number, label?: string): Circle { return new Circle(); }
"""

GO = """package stock

import (
	"fmt"
	u "example.com/shop/util"
)

type Store struct {
	Items map[string]int
	count int
	Base
}

func (s *Store) Reserve(sku string, qty int) bool {
	left := s.Items[sku] - qty
	return left >= 0 && u.Ok(fmt.Sprint(qty))
}

func New(a, b int, rest ...string) *Store { return nil }

const Max = 10
var defaultStore, other = New(1, 2), New(3, 4)
"""


def test_language_for() -> None:
    assert language_for("a/b.py") == "python"
    assert language_for("x.tsx") == "tsx"
    assert language_for("x.d.ts") is None
    assert language_for("README.md") is None
    assert language_for("main.go") == "go"


def test_python_extraction() -> None:
    result = extract("src/app/cart.py", PY)
    assert result is not None
    fs, _ = result
    assert fs.module == "app.cart"
    assert fs.defines == ("LIMIT", "Base", "Cart", "helper", "conditional")
    assert set(fs.imported_names()) >= {"a", "c", "d", "os", "sibling"}
    cart = next(c for c in fs.classes if c.name == "Cart")
    assert cart.bases == ("Base",)
    assert set(cart.methods) == {"__init__", "empty", "total"}
    assert {"size", "owner", "items"} <= set(cart.fields)
    init = next(f for f in fs.functions if f.name == "__init__")
    assert init.qualname == "Cart.__init__"
    assert [(p.name, p.kind, p.has_default) for p in init.params] == [
        ("self", "self", False),
        ("owner", "positional", False),
        ("items", "var_positional", False),
        ("discount", "keyword_only", True),
        ("extra", "var_keyword", False),
    ]
    empty = next(f for f in fs.functions if f.name == "empty")
    assert [p.kind for p in empty.params] == ["positional", "positional"]  # staticmethod: no receiver
    assert [c.name for c in empty.calls] == ["helper"]
    total = next(f for f in fs.functions if f.name == "total")
    assert [name for name, _ in total.locals] == ["subtotal", "n", "price"]
    helper = next(f for f in fs.functions if f.name == "helper")
    assert [p.kind for p in helper.params] == ["positional_only", "positional", "keyword_only"]
    imports = {(i.kind, i.module) for i in fs.imports}
    assert imports == {("from", "app.util"), ("import", "app.dates"), ("import", "os"), ("from", ".")}


def test_javascript_extraction() -> None:
    result = extract("lib/k.js", JS)
    assert result is not None
    fs, _ = result
    assert fs.defines == ("f", "h", "K", "internal")  # the require() binding is an import, not a definition
    assert set(fs.exports) == {"f", "h", "K", "internal"}
    assert ("*", "ns") in next(i for i in fs.imports if i.module == "./y.js").names
    assert next(i for i in fs.imports if i.module == "../q").kind == "require"
    k = next(c for c in fs.classes if c.name == "K")
    assert set(k.methods) == {"constructor", "m"} and k.fields == ("z",) and k.bases == ("Base",)
    f = next(fn for fn in fs.functions if fn.name == "f")
    assert [(p.name, p.kind, p.has_default) for p in f.params] == [
        ("x", "positional", False),
        ("y", "positional", True),
        ("rest", "var_positional", False),
    ]
    assert (
        next(fn for fn in fs.functions if fn.name == "h").params[0].name == "a"
    )  # arrow function named by its variable


def test_typescript_extraction() -> None:
    result = extract("src/shapes.ts", TS)
    assert result is not None
    fs, _ = result
    members = {c.name: set(c.members) for c in fs.classes}
    assert members["Shape"] == {"area", "name"}
    assert members["Point"] == {"x", "y"}
    assert members["Circle"] == {"r", "name", "area"}
    make = next(fn for fn in fs.functions if fn.name == "make")
    assert [(p.name, p.has_default, p.type) for p in make.params] == [
        ("r", False, "number"),
        ("label", True, "string"),
    ]
    assert "default" in fs.exports


def test_go_extraction() -> None:
    result = extract("stock/store.go", GO)
    assert result is not None
    fs, _ = result
    assert fs.package == "stock" and fs.module == "stock"
    assert fs.defines == ("Store", "New", "Max", "defaultStore", "other")
    assert fs.exports == ("Store", "New", "Max")
    store = fs.classes[0]
    assert store.methods == ("Reserve",)
    assert store.fields == ("Items", "count", "Base") and store.bases == ("Base",)
    reserve = next(fn for fn in fs.functions if fn.name == "Reserve")
    assert reserve.container == "Store" and reserve.qualname == "Store.Reserve"
    assert [(p.name, p.kind, p.type) for p in reserve.params] == [
        ("s", "self", "*Store"),
        ("sku", "positional", "string"),
        ("qty", "positional", "int"),
    ]
    assert reserve.locals == (("left", 15),)
    new = next(fn for fn in fs.functions if fn.name == "New")
    assert [(p.name, p.kind) for p in new.params] == [
        ("a", "positional"),
        ("b", "positional"),
        ("rest", "var_positional"),
    ]
    assert {(i.module, i.alias) for i in fs.imports} == {("fmt", ""), ("example.com/shop/util", "u")}


def test_java_and_rust_functions_and_members() -> None:
    java = extract("src/A.java", "class A extends B { int n; int f(int[] a, int k) { return g(a, k); } }")
    rust = extract(
        "src/lib.rs",
        "struct P { x: i32 }\nimpl P { fn len(&self) -> i32 { self.x } }\nfn f(a: i32) -> i32 { a }",
    )
    assert java is not None and rust is not None
    a = java[0].classes[0]
    assert a.name == "A" and a.fields == ("n",) and a.methods == ("f",) and a.bases == ("B",)
    assert [p.name for p in java[0].functions[0].params] == ["a", "k"]
    p = next(c for c in rust[0].classes if c.name == "P")
    assert p.fields == ("x",) and p.methods == ("len",)
    assert rust[0].defines == ("P", "f")


def test_go_receiver_type() -> None:
    assert go_receiver_type("(s *Store)") == "Store"
    assert go_receiver_type("(l List[T])") == "List"


def test_python_module_names() -> None:
    assert python_module("src/app/util.py") == "app.util"
    assert python_module("app/__init__.py") == "app"
    assert python_module("tool.py") == "tool"


def test_similarity_and_closest() -> None:
    assert similarity("parse_date", "parse_date") == 1.0
    assert similarity("parse_date", "parse_iso_date") > similarity("parse_date", "slugify")
    assert similarity("getUser", "get_user") > 0.8  # same words, other spelling
    assert closest("fmt_money", ["format_money", "format_date", "summary"]) == ["format_money"]
    assert closest("x", ["x"]) == []  # never itself
    assert closest("total", ["totl", "tota", "zzz"], n=1) == ["tota"]
    # Deterministic ties: alphabetical.
    assert closest("ab", ["ac", "ad"], n=2, cutoff=0.1) == ["ac", "ad"]


@pytest.fixture
def table() -> SymbolTable:
    files = {
        "src/app/__init__.py": "",
        "src/app/util.py": "def slugify(t):\n    return t\n",
        "src/app/dates.py": "from app.util import slugify\n\ndef parse_date(s):\n    return s\n",
        "src/app/sub/mod.py": "from ..dates import parse_date\nfrom . import other\n",
        "src/app/sub/__init__.py": "",
        "web/lib/dates.ts": "export function parseISODate(s: string) { return s; }\n",
        "web/lib/index.ts": "export * from './dates';\n",
        "web/app/report.ts": "import { parseDate } from '../lib/dates';\nexport const r = 1;\n",
        "go.mod": "module example.com/shop\n\ngo 1.22\n",
        "util/util.go": "package util\n\nfunc Ok(s string) bool { return true }\n",
        "stock/stock.go": GO,
        "README.md": "# not code\n",
    }
    return SymbolTable.build(DictSource(files))


def test_table_module_resolution(table: SymbolTable) -> None:
    util = table.python_file("app.util")
    assert util is not None and util.path == "src/app/util.py"
    rel = table.python_file("..dates", importer="src/app/sub/mod.py")
    assert rel is not None and rel.path == "src/app/dates.py"
    pkg = table.python_file(".", importer="src/app/sub/mod.py")
    assert pkg is not None and pkg.path == "src/app/sub/__init__.py"
    assert table.python_file("app.missing") is None
    js = table.js_file("../lib/dates", importer="web/app/report.ts")
    assert js is not None and js.path == "web/lib/dates.ts"
    index = table.js_file("../lib", importer="web/app/report.ts")
    assert index is not None and index.path == "web/lib/index.ts"
    assert table.go_package_dir("example.com/shop/util") == "util"
    assert table.go_module == "example.com/shop"
    assert "README.md" not in table.files


def test_table_lookups(table: SymbolTable) -> None:
    assert [fs.path for fs in table.definers("parse_date")] == ["src/app/dates.py"]
    assert table.definers("slugify", language="python")[0].path == "src/app/util.py"  # imports do not define
    assert table.definers("parseISODate", language="tsx")[0].path == "web/lib/dates.ts"  # same family
    fn = table.function_at("stock/stock.go", 15)
    assert fn is not None and fn.name == "Reserve"
    assert table.function_at("stock/stock.go", 1) is None
    assert set(table.class_members("Store")) >= {"Items", "count", "Reserve"}
    scope = table.scope_names("stock/stock.go", 15)
    assert {"sku", "qty", "left", "s", "Store", "New", "u", "fmt"} <= set(scope)
    py_scope = table.scope_names("src/app/dates.py", 4)
    assert {"s", "parse_date", "slugify", "len"} <= set(py_scope)


def test_relative_specifier(table: SymbolTable) -> None:
    assert (
        table.relative_specifier("web/app/report.ts", "web/lib/dates.ts", like="../lib/dates")
        == "../lib/dates"
    )
    assert table.relative_specifier("src/report.js", "src/dates.js", like="./fmt.js") == "./dates.js"
    assert table.relative_specifier("src/a.ts", "src/util/index.ts") == "./util"
    assert table.relative_specifier("src/a.ts", "src/b.ts", like="./c.js") == "./b.js"  # TS ESM style


def test_build_is_bounded_and_cached() -> None:
    files = {f"m{i}.py": f"def f{i}():\n    pass\n" for i in range(10)}
    cache: dict[tuple[str, int], FileSymbols] = {}
    table = SymbolTable.build(DictSource(files), max_files=3, cache=cache)
    assert len(table.files) == 3 and len(cache) == 3
    again = SymbolTable.build(DictSource(files), max_files=3, cache=cache)
    assert again.files == table.files
    # The failure's files are parsed first, whatever the bound.
    chosen = SymbolTable.build(DictSource(files), max_files=2, priority=["m9.py", "gone.py"])
    assert sorted(chosen.files) == ["m0.py", "m9.py"]
