"""Mutation operators of tier 0, over Python, JavaScript/TypeScript, Go, Java and Rust grammars."""

from __future__ import annotations

import pytest

from jobs.repair.tier0.mutations import (
    CODE,
    MESSAGE,
    OPERATORS,
    TEXT,
    Mutation,
    apply_all,
    language_config,
    mutate,
    swap_table,
)
from jobs.repair.tier0.symbols import ParsedFile, extract, parse_file

PY = """LIMIT = 10
RATE = 0.5


class Box:
    def __init__(self, width, height):
        self.width = width
        self.height = height

    def area(self):
        return self.width * self.width


def window(items, start, n, flag=True):
    total = 0
    for i in range(len(items) - 1):
        if items[i] > LIMIT and flag:
            total += items[i]
    while not items:
        break
    label = "a" + "b"
    chunk = items[start:start + n]
    last = items[n]
    ok = total if flag else None
    return pair(start, n), chunk, last, ok, RATE
"""


def _parse(path: str, text: str) -> tuple[ParsedFile, object]:
    result = extract(path, text)
    assert result is not None
    return result[1], result[0]


def _muts(path: str, text: str, lines: list[int]) -> list[Mutation]:
    pf, fs = _parse(path, text)
    return mutate(pf, lines, symbols=fs, class_fields=lambda c: ["width", "height"])  # type: ignore[arg-type]


def _has(muts: list[Mutation], operator: str, original: str, replacement: str) -> bool:
    return any(
        m.operator == operator and m.original == original and m.replacement == replacement for m in muts
    )


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_python_operators() -> None:
    lines = list(range(1, PY.count("\n") + 1))
    muts = _muts("pkg/mod.py", PY, lines)
    assert _has(muts, "swap_comparison", ">", ">=")
    assert _has(muts, "swap_comparison", ">", "<")
    assert _has(muts, "swap_boolean", "and", "or")
    assert _has(muts, "swap_arithmetic", "*", "/")
    assert _has(muts, "swap_arithmetic", "+=", "-=")
    assert _has(muts, "off_by_one", "len(items) - 1", "len(items)")  # drop the adjustment
    assert _has(muts, "off_by_one", "start + n", "start + n + 1")  # slice bound
    assert _has(muts, "off_by_one", "n", "n + 1")  # index
    assert _has(muts, "off_by_one", "start", "start - 1")  # slice start
    assert _has(muts, "negate_condition", "not items", "items")  # drop negation
    assert _has(muts, "negate_condition", "flag", "not flag")  # conditional expression
    assert _has(muts, "swap_arguments", "start, n", "n, start")
    assert _has(muts, "wrong_variable", "width", "height")  # self.width * self.width
    assert _has(muts, "wrong_constant", "True", "False")
    assert _has(muts, "wrong_constant", "10", "0")  # nearest other int literal of the file
    concat = _line(PY, '"a" + "b"')
    assert not any(m.line == concat and m.original == "+" for m in muts)  # string concatenation is left alone
    # Numbers are only replaced by numbers of the same kind.
    assert not _has(muts, "wrong_constant", "0", "0.5") and not _has(muts, "wrong_constant", "10", "0.5")


def test_single_comparison_condition_is_not_negated() -> None:
    muts = _muts(
        "m.py", "def f(a, b):\n    if a < b:\n        return 1\n    while a and b:\n        pass\n", [2, 4]
    )
    assert not any(m.operator == "negate_condition" and m.line == 2 for m in muts)
    assert _has(muts, "negate_condition", "a and b", "not (a and b)")


def test_python_wrong_variable_respects_scope_order() -> None:
    text = "def f(a, b):\n    x = a\n    y = x + b\n    return y\n"
    muts = _muts("m.py", text, [2, 3, 4])
    line2 = {m.replacement for m in muts if m.operator == "wrong_variable" and m.line == 2}
    assert line2 == {"b"}  # x, y are not bound yet on line 2
    line4 = {m.replacement for m in muts if m.operator == "wrong_variable" and m.line == 4}
    assert line4 == {"a", "b", "x"}


def test_only_requested_lines() -> None:
    muts = _muts("pkg/mod.py", PY, [_line(PY, "if items[i] > LIMIT")])
    assert muts and {m.line for m in muts} == {_line(PY, "if items[i] > LIMIT")}
    assert mutate(_parse("pkg/mod.py", PY)[0], []) == []


def test_output_is_deduplicated_sorted_and_parses() -> None:
    lines = list(range(1, PY.count("\n") + 1))
    pf, _ = _parse("pkg/mod.py", PY)
    muts = _muts("pkg/mod.py", PY, lines)
    assert len({(m.start, m.end, m.replacement) for m in muts}) == len(muts)
    keys = [(m.line, OPERATORS.index(m.operator)) for m in muts]
    assert keys == sorted(keys)
    assert muts == _muts("pkg/mod.py", PY, lines)  # deterministic
    for m in muts:
        new = m.apply(pf.data).decode()
        reparsed = parse_file("pkg/mod.py", new)
        assert reparsed is not None and not reparsed.root.has_error, (m, new)
        assert m.describe().startswith("`")


JS = """export function reserve(levels, sku, qty) {
  const available = levels[sku] ?? 0;
  if (qty < available && !levels.locked) {
    levels[sku] = available - qty;
    return true;
  }
  for (let i = 0; i < levels.items.length - 1; i++) {
    total(levels.items[i], qty);
  }
  return levels.items.slice(1, qty) === null ? false : true;
}
"""


@pytest.mark.parametrize("path", ["src/stock.js", "src/stock.ts", "src/stock.tsx"])
def test_javascript_family_operators(path: str) -> None:
    muts = _muts(path, JS, list(range(1, 12)))
    assert _has(muts, "swap_comparison", "<", "<=")
    assert _has(muts, "swap_comparison", "===", "!==")
    assert _has(muts, "swap_boolean", "&&", "||")
    assert _has(muts, "swap_boolean", "??", "||")
    assert _has(muts, "negate_condition", "!levels.locked", "levels.locked")
    assert _has(muts, "off_by_one", "levels.items.length - 1", "levels.items.length")
    assert _has(muts, "off_by_one", "qty", "qty - 1")  # .slice() bound
    assert _has(muts, "off_by_one", "0", "1")
    assert _has(muts, "swap_arithmetic", "-", "+")
    assert _has(muts, "wrong_constant", "true", "false")
    assert _has(muts, "swap_arguments", "levels.items[i], qty", "qty, levels.items[i]")
    assert not any(m.replacement == "//" for m in muts)  # Python-only operators never leak
    assert not any(m.replacement in ("is", "is not", "and", "or") for m in muts)


GO = """package stock

func Reserve(levels map[string]int, sku string, qty int) bool {
	available := levels[sku]
	if !(qty < available) || len(levels) == 0 {
		return false
	}
	for i := 0; i < len(levels)-1; i++ {
		qty += i
	}
	part := names[1:qty]
	return part != nil
}
"""


def test_go_operators() -> None:
    muts = _muts("stock/stock.go", GO, list(range(1, 14)))
    assert _has(muts, "swap_comparison", "<", "<=")
    assert _has(muts, "swap_comparison", "==", "!=")
    assert _has(muts, "swap_boolean", "||", "&&")
    assert _has(muts, "negate_condition", "!(qty < available)", "(qty < available)")
    assert _has(muts, "off_by_one", "len(levels)-1", "len(levels)")
    assert _has(muts, "off_by_one", "len(levels)", "len(levels) - 1")
    assert _has(muts, "off_by_one", "qty", "qty + 1")  # slice end
    assert _has(muts, "swap_arithmetic", "+=", "-=")
    assert _has(muts, "wrong_variable", "sku", "qty")
    assert not any(m.replacement == "??" for m in muts)


def test_java_and_rust_operators() -> None:
    java = "class A {\n  int f(int[] a, int n) {\n    if (n < a.length && ok) { return a[n - 1]; }\n    return 0;\n  }\n}\n"
    muts = _muts("src/A.java", java, [3])
    assert _has(muts, "swap_comparison", "<", "<=")
    assert _has(muts, "swap_boolean", "&&", "||")
    assert _has(muts, "off_by_one", "n - 1", "n")
    rust = "fn f(a: &[i32], n: usize) -> i32 {\n    if n < a.len() { return a[n - 1]; }\n    0\n}\n"
    muts = _muts("src/lib.rs", rust, [2])
    assert _has(muts, "swap_comparison", "<", "<=")
    assert _has(muts, "off_by_one", "n - 1", "n")
    assert _has(muts, "off_by_one", "a.len()", "a.len() - 1")


def test_unsupported_language_and_config() -> None:
    assert language_config("cobol") is None
    assert language_config("tsx") is language_config("javascript")


def test_apply_all_applies_right_to_left() -> None:
    pf, _ = _parse("m.py", "x = a < b and c < d\n")
    muts = [m for m in mutate(pf, [1]) if m.operator == "swap_comparison" and m.replacement == "<="]
    assert len(muts) == 2
    assert apply_all(pf.data, muts) == b"x = a <= b and c <= d\n"


# --- where a mutation sits: code, data text, or a message -----------------------------------------

PY_MESSAGES = """import logging

log = logging.getLogger(__name__)


def reserve(stock, sku, qty):
    if stock.available(sku) > qty:
        log.info("reserved %d of %s", qty + 1, sku)
        return f"{qty - 1} x {sku}"
    assert qty > 0, f"bad {qty + 1}"
    print(qty * 2)
    rate = math.log(qty + 1)
    raise OutOfStock(f"{sku}: {stock.available(sku)} available, {qty - 1} requested")
"""


def _contexts(muts: list[Mutation], line: int) -> set[str]:
    return {m.context for m in muts if m.line == line}


def test_python_mutation_contexts() -> None:
    lines = list(range(1, PY_MESSAGES.count("\n") + 1))
    muts = _muts("inventory/stock.py", PY_MESSAGES, lines)

    def at(needle: str) -> set[str]:
        return _contexts(muts, _line(PY_MESSAGES, needle))

    assert at("if stock.available") == {CODE}
    assert at("log.info") == {MESSAGE}  # a logger's arguments
    assert at("return f") == {TEXT}  # an f-string that is returned is data, not a message
    assert at("assert qty") == {CODE, MESSAGE}  # the asserted condition is code, its message is not
    asserted = [m for m in muts if m.line == _line(PY_MESSAGES, "assert qty") and m.original == ">"]
    assert asserted and {m.context for m in asserted} == {CODE}
    assert at("print(") == {MESSAGE}
    assert at("math.log") == {CODE}  # a logarithm, not a logger
    assert at("raise OutOfStock") == {MESSAGE}
    raise_muts = [m for m in muts if m.line == _line(PY_MESSAGES, "raise OutOfStock")]
    assert any(m.operator == "wrong_variable" for m in raise_muts)  # still produced: the proposer decides


def test_javascript_and_go_message_contexts() -> None:
    js = """export function withdraw(account, amount) {
  if (amount >= account.limit) {
    throw new Error(`${account.owner}: cannot withdraw ${amount + 1}`);
  }
  console.warn("low", amount - 1);
  return `${amount * 2} left`;
}
"""
    muts = _muts("src/account.js", js, list(range(1, 8)))
    assert _contexts(muts, 2) == {CODE}
    assert _contexts(muts, 3) == {MESSAGE}
    assert _contexts(muts, 5) == {MESSAGE}
    assert _contexts(muts, 6) == {TEXT}
    go = """package stock

import (
	"errors"
	"fmt"
)

func Reserve(levels map[string]int, sku string, qty int) (int, error) {
	if qty > levels[sku] {
		panic(fmt.Sprintf("%s: %d", sku, qty+1))
	}
	if qty == 0 {
		return 0, errors.New("empty")
	}
	return qty - 1, fmt.Errorf("left %d", qty-2)
}
"""
    gm = _muts("stock/stock.go", go, list(range(1, 17)))
    assert _contexts(gm, 9) == {CODE}
    assert _contexts(gm, 10) == {MESSAGE}  # panic arguments
    ret = {m.original: m.context for m in gm if m.line == 15 and m.operator == "off_by_one"}
    assert ret["qty - 1"] == CODE  # the returned value
    assert ret["2"] == MESSAGE  # ``qty-2`` in the fmt.Errorf text
    # Import paths are module names, not constants to swap.
    assert not any(m.operator == "wrong_constant" and m.line in (4, 5) for m in gm)


def test_swap_replacements_keep_the_table_order() -> None:
    text = "def f(a, b):\n    return a > b\n"
    muts = [m for m in _muts("m.py", text, [2]) if m.operator == "swap_comparison"]
    table = swap_table("swap_comparison")[">"]
    assert [m.replacement for m in sorted(muts, key=lambda m: m.order)] == list(table)
    assert table[0] == ">="  # the boundary first: ``>`` -> ``>=`` is the classic off-by-one fix


# --- the literature's patterns added for issue #29 ----------------------------------------------

PATTERNS = """def date(tzm, tzh, parts, x):
    offset = int(tzh) + int(tzm) * 60
    pairs = sorted(parts, key=lambda a, b: a)
    if isinstance(x, int) and isinstance(x, str):
        return x.endswith('/')
    return min(tzm, tzh)


def same(a, b):
    return a.startswith(b)
"""


def test_patterns_table_is_the_one_source() -> None:
    # Every operator the table names has a reason and appears in every failure kind's order.
    from jobs.repair.tier0.mutations import operator_order, pattern_reason

    for op in OPERATORS:
        assert pattern_reason(op)
        for kind in ("default", "index", "arithmetic", "type"):
            assert op in operator_order(kind)
    assert swap_table("call_target")["min"] == ("max",)


def test_swap_variables_in_the_smallest_expression() -> None:
    muts = _muts("p.py", PATTERNS, [2])
    assert _has(muts, "swap_variables", "int(tzh) + int(tzm) * 60", "int(tzm) + int(tzh) * 60")
    # Not once more for each enclosing expression.
    assert sum(m.operator == "swap_variables" for m in muts) == 1


def test_swapped_lambda_parameters() -> None:
    muts = _muts("p.py", PATTERNS, [3])
    assert _has(muts, "swap_arguments", "a, b", "b, a")


def test_clause_removed_or_negated() -> None:
    muts = _muts("p.py", PATTERNS, [4])
    whole = "isinstance(x, int) and isinstance(x, str)"
    assert _has(muts, "mutate_clause", whole, "isinstance(x, int)")
    assert _has(muts, "mutate_clause", whole, "isinstance(x, str)")
    assert _has(muts, "mutate_clause", "isinstance(x, str)", "not isinstance(x, str)")


def test_call_target_and_return_predicate() -> None:
    muts = _muts("p.py", PATTERNS, [5, 6, 10])
    assert _has(muts, "call_target", "endswith", "startswith")
    assert _has(muts, "call_target", "min", "max")
    assert _has(muts, "mutate_return", "x.endswith('/')", "not x.endswith('/')")
    assert _has(muts, "mutate_return", "a.startswith(b)", "not a.startswith(b)")
    # min(...) is no predicate: its return is not negated.
    assert not any(m.operator == "mutate_return" and m.line == 6 for m in muts)


def test_call_target_javascript() -> None:
    js = "function f(s, t) {\n  return Math.max(s.startsWith(t), 0);\n}\n"
    muts = _muts("a.js", js, [2])
    assert _has(muts, "call_target", "max", "min")
    assert _has(muts, "call_target", "startsWith", "endsWith")
