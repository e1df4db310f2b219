"""Suspiciousness ranking of tier 0: frames, enclosing functions, callees, several failures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from indexing.languages import is_test_path
from jobs.repair.model import Failure, Frame
from jobs.repair.tier0.localize import (
    AFTER_FRAME,
    GUARD,
    GUARD_DECAY,
    UNOBSERVED,
    Suspect,
    code_frame,
    control_path,
    failure_frames,
    localize,
    observed_lines,
    raise_at,
    raise_sites,
)
from jobs.repair.tier0.symbols import ParsedFile, SymbolTable, parse_file


class DictSource:
    def __init__(self, files: Mapping[str, str]) -> None:
        self._files = dict(files)

    def read(self, path: str) -> str | None:
        return self._files.get(path)

    def files(self) -> Sequence[str]:
        return sorted(self._files)


APP = """def helper(x):
    return x * 2


def compute(values):
    total = 0
    for v in values:
        total += helper(v)
    check(total)
    return total


def check(total):
    if total < 0:
        raise ValueError(total)


def unrelated():
    return 42
"""

TESTS = """from app import compute, unrelated


def test_compute():
    unrelated()
    assert compute([1, 2]) == 7


def test_other():
    assert compute([]) == 1
"""

GO_TEST = """package app

import "testing"

func TestTotal(t *testing.T) {
	if Total() != 1 {
		t.Errorf("bad")
	}
}
"""


@pytest.fixture
def table() -> SymbolTable:
    return SymbolTable.build(
        DictSource(
            {
                "app.py": APP,
                "tests/test_app.py": TESTS,
                "app/total.go": "package app\n\nfunc Total() int {\n\treturn 0\n}\n",
                "app/total_test.go": GO_TEST,
            }
        )
    )


def _rank(suspects: list[Suspect], path: str, line: int) -> int:
    return next(i for i, s in enumerate(suspects) if (s.path, s.line) == (path, line))


def _weight(suspects: list[Suspect], path: str, line: int) -> float:
    return next((s.weight for s in suspects if (s.path, s.line) == (path, line)), 0.0)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("tests/test_app.py", True),
        ("test_app.py", True),
        ("pkg/app_test.py", True),
        ("conftest.py", True),
        ("stock/stock_test.go", True),
        ("src/a.test.ts", True),
        ("src/a.spec.jsx", True),
        ("src/__tests__/a.js", True),
        ("src/test/java/FooTest.java", True),
        ("app.py", False),
        ("src/contest.py", False),
        ("src/testing_utils.go", False),
        ("latest.py", False),
    ],
)
def test_is_test_path(path: str, expected: bool) -> None:
    assert is_test_path(path) is expected


def test_innermost_repo_frame_first(table: SymbolTable) -> None:
    failure = Failure(
        "tests/test_app.py::test_compute",
        "ValueError",
        "-3",
        frames=(
            Frame("tests/test_app.py", 6, "test_compute"),
            Frame("app.py", 9, "compute"),
            Frame("app.py", 15, "check"),
        ),
    )
    suspects = localize([failure], table)
    assert (suspects[0].path, suspects[0].line) == ("app.py", 15)
    assert suspects[0].reason == "frame" and suspects[0].function == "check"
    assert _weight(suspects, "app.py", 9) == pytest.approx(0.8)  # one frame further out
    assert all(not s.path.startswith("tests/") for s in suspects)  # test files are not suspects
    # Inside compute: executed lines before the frame line beat lines after it.
    assert _weight(suspects, "app.py", 8) > _weight(suspects, "app.py", 10)
    assert (
        0 < _weight(suspects, "app.py", 19) < _weight(suspects, "app.py", 8)
    )  # called before, not on the path
    with_tests = localize([failure], table, include_tests=True)
    assert _weight(with_tests, "tests/test_app.py", 6) == pytest.approx(0.64)


def test_callees_of_a_failing_test(table: SymbolTable) -> None:
    failure = Failure(
        "tests/test_app.py::test_compute",
        "AssertionError",
        "assert 6 == 7",
        frames=(Frame("tests/test_app.py", 6, "test_compute"),),
    )
    suspects = localize([failure], table)
    # compute is called on the failing line: its body outranks unrelated(), called before it.
    assert _weight(suspects, "app.py", 8) == pytest.approx(0.9)
    assert _weight(suspects, "app.py", 8) > _weight(suspects, "app.py", 19) > 0
    # Second level: helper and check, called by compute, count half.
    assert _weight(suspects, "app.py", 2) == pytest.approx(0.45)
    assert _weight(suspects, "app.py", 5) == pytest.approx(0.9 * 0.3)  # the signature line
    assert {s.reason for s in suspects} == {"callee"}


def test_lines_on_every_failing_path_rank_first(table: SymbolTable) -> None:
    one = Failure("tests/test_app.py::test_compute", "AssertionError", frames=(Frame("app.py", 2, "helper"),))
    two = Failure("tests/test_app.py::test_other", "AssertionError", frames=(Frame("app.py", 15, "check"),))
    both = Failure("x", "AssertionError", frames=(Frame("app.py", 10, "compute"),))
    suspects = localize([one, two, both], table)
    assert _weight(suspects, "app.py", 10) == pytest.approx(1 / 3)
    shared = localize([one, Failure("y", "AssertionError", frames=(Frame("app.py", 2, "helper"),))], table)
    assert shared[0].weight == pytest.approx(1.0) and (shared[0].path, shared[0].line) == ("app.py", 2)


def test_error_location_hints_and_feedback(table: SymbolTable) -> None:
    build = Failure("app", "build", "undefined: x", path="app.py", line=19)
    suspects = localize([build], table)
    assert (suspects[0].path, suspects[0].line, suspects[0].reason) == ("app.py", 19, "error")
    hinted = localize([], table, hints=[("app.py", 2), ("tests/test_app.py", 6), ("missing.py", 3)])
    assert (hinted[0].path, hinted[0].line, hinted[0].reason) == ("app.py", 2, "hint")
    assert {s.path for s in hinted} == {"app.py"}
    fed = localize(
        [build], table, feedback=[Failure("t", "AssertionError", frames=(Frame("app.py", 2, "helper"),))]
    )
    assert _weight(fed, "app.py", 2) == pytest.approx(0.5)
    assert _rank(fed, "app.py", 19) < _rank(fed, "app.py", 2)


def test_frames_from_test_ids(table: SymbolTable) -> None:
    frames = failure_frames(Failure("tests/test_app.py::test_other"), table)
    assert frames == [Frame("tests/test_app.py", 10, "test_other")]
    param = failure_frames(Failure("tests/test_app.py::test_compute[case-1]"), table)
    assert param == [Frame("tests/test_app.py", 6, "test_compute")]
    go = failure_frames(Failure("example.com/app.TestTotal"), table)
    assert go == [Frame("app/total_test.go", 9, "TestTotal")]
    assert failure_frames(Failure("nothing::here"), table) == []
    # A test id alone still reaches the code under test.
    suspects = localize([Failure("tests/test_app.py::test_other", "AssertionError")], table)
    assert _weight(suspects, "app.py", 8) > 0
    go_suspects = localize([Failure("example.com/app.TestTotal", "")], table)
    assert go_suspects[0].path == "app/total.go"


def test_deterministic_and_bounded(table: SymbolTable) -> None:
    failure = Failure(
        "tests/test_app.py::test_compute", "AssertionError", frames=(Frame("tests/test_app.py", 6, "t"),)
    )
    first = localize([failure], table)
    assert first == localize([failure], table)
    assert len(localize([failure], table, limit=3)) == 3
    weights = [s.weight for s in first]
    assert weights == sorted(weights, reverse=True)


# --- control flow: deliberate raises, skipped branches, what a caller observes -------------------

BOOKING = """def book(venue, customer, seats):
    if seats <= 0:
        raise ValueError(seats)
    if customer in venue.bookings:
        log(customer)
        return None
    for b in venue.waiting:
        if b == customer:
            return b
    if venue.remaining() > seats:
        venue.bookings[customer] = seats
        return seats
    raise SoldOut(f"{customer}: {seats}")


def grade(score):
    if score > 90:
        return "A"
    elif score > 80:
        return "B"
    else:
        raise ValueError(score)


def count(items):
    total = 0
    label = "items"
    logger.info("counting %s", label)
    for item in items:
        total += item.qty
    return total


def checkout(venue, order):
    return book(venue, order.seats, order.customer)
"""

TEST_BOOKING = """from app import book, count


def test_book():
    book(None, "ada", 2)


def test_count():
    assert count([]) == 1
"""


def _pf(path: str, text: str) -> ParsedFile:
    pf = parse_file(path, text)
    assert pf is not None
    return pf


def test_control_path_of_a_raise_after_early_exits() -> None:
    pf = _pf("app.py", BOOKING)
    path = control_path(pf, 13)
    assert path.raises and pf.data[path.raise_span[0] : path.raise_span[1]].startswith(b"raise SoldOut")
    # Nearest first: the early-return guard right above, the loop's exit condition and header, ...
    assert path.guards == ((10, 10), (8, 8), (7, 7), (4, 4), (2, 2))
    # ... and the exit branches before the raise did not run.
    assert path.skipped == {3, 5, 6, 9, 11, 12}
    chain = control_path(pf, 22)  # ``else: raise``: every condition of the chain was false
    assert chain.guards == ((19, 19), (17, 17)) and chain.skipped == {18, 20}


def test_control_path_of_other_lines_and_languages() -> None:
    pf = _pf("app.py", BOOKING)
    plain = control_path(pf, 11)  # not a raise: no guards, but the skipped branches are known
    assert not plain.raises and plain.guards == () and plain.skipped == {3, 5, 6, 9}
    js = _pf(
        "src/account.js",
        """export function withdraw(account, amount) {
  if (amount <= 0) throw new RangeError('positive');
  const limit = account.balance + account.overdraft;
  if (amount >= limit) {
    throw new Error(`cannot withdraw ${amount}`);
  }
  return account.balance - amount;
}
""",
    )
    assert control_path(js, 5).guards == ((4, 4), (2, 2))
    one_liner = raise_at(js, 2)  # ``if (bad) throw ...`` on one line
    assert one_liner is not None and one_liner.type == "throw_statement"
    assert raise_at(js, 3) is None and raise_at(js, 99) is None
    go = _pf(
        "take/take.go",
        "package take\n\nfunc Take(xs []int, n int) []int {\n\tif n > len(xs) {\n"
        '\t\tpanic(fmt.Sprintf("take %d", n))\n\t}\n\treturn xs[:n]\n}\n',
    )
    assert control_path(go, 5).raises and control_path(go, 5).guards == ((4, 4),)
    asserted = _pf("m.py", 'def f(total):\n    x = total\n    assert total >= 0, "negative"\n')
    assert control_path(asserted, 3).guards == ((3, 3),)  # an assert guards itself
    handler = _pf(
        "cfg.py",
        "def port(text):\n    try:\n        value = int(text[1:])\n    except ValueError:\n"
        '        raise ConfigError(f"bad port {text}")\n    return value\n',
    )
    assert control_path(handler, 5).guards == ((3, 3),)  # the try body raised into the handler
    switch = _pf(
        "src/kind.js",
        "export function kind(n) {\n  switch (n) {\n    case 1:\n      if (n > 0) return 'one';\n"
        "      throw new Error(`bad ${n}`);\n  }\n}\n",
    )
    assert control_path(switch, 5).guards == ((4, 4), (3, 3), (2, 2))


def test_deliberate_raise_ranks_its_guards_right_after_it() -> None:
    files = {"app.py": BOOKING, "tests/test_app.py": TEST_BOOKING}
    table = SymbolTable.build(DictSource(files))
    failure = Failure(
        "tests/test_app.py::test_book",
        "SoldOut",
        "app.SoldOut: ada: 2",
        path="app.py",
        line=13,
        frames=(Frame("tests/test_app.py", 5, "test_book"), Frame("app.py", 13, "book")),
    )
    parsed = {p: _pf(p, t) for p, t in files.items()}
    suspects = localize([failure], table, parse=parsed.get)
    assert [(s.line, s.reason) for s in suspects[:3]] == [(13, "error"), (10, "guard"), (8, "guard")]
    assert _weight(suspects, "app.py", 10) == pytest.approx(GUARD)
    assert _weight(suspects, "app.py", 8) == pytest.approx(GUARD * GUARD_DECAY)
    # The branch that would have returned did not run: it ranks as unexecuted code.
    assert _weight(suspects, "app.py", 11) == pytest.approx(AFTER_FRAME)
    assert _weight(suspects, "app.py", 12) < _weight(suspects, "app.py", 2)
    # Without the trees the ranking is the plain frame-distance one.
    plain = localize([failure], table)
    assert _rank(plain, "app.py", 12) < _rank(plain, "app.py", 10)
    statement = 'raise SoldOut(f"{customer}: {seats}")'
    at = BOOKING.index(statement)
    assert raise_sites([failure], table, parsed.get) == {("app.py", at, at + len(statement))}


def test_a_raise_called_from_code_blames_the_call_first() -> None:
    """Design by contract: a precondition raised under repository code points at the caller's
    arguments first (here swapped), then at the guards."""
    files = {"app.py": BOOKING, "tests/test_app.py": TEST_BOOKING}
    table = SymbolTable.build(DictSource(files))
    failure = Failure(
        "tests/test_app.py::test_checkout",
        "SoldOut",
        "app.SoldOut: 2: ada",
        path="app.py",
        line=13,
        frames=(
            Frame("tests/test_app.py", 5, "test_checkout"),
            Frame("app.py", 35, "checkout"),
            Frame("app.py", 13, "book"),
        ),
    )
    parsed = {p: _pf(p, t) for p, t in files.items()}
    suspects = localize([failure], table, parse=parsed.get)
    assert [(s.line, s.reason) for s in suspects[:3]] == [(13, "error"), (35, "frame"), (10, "guard")]
    assert _weight(suspects, "app.py", 10) == pytest.approx(0.8 * GUARD)


def test_innermost_code_frame_whatever_the_frame_order() -> None:
    table = SymbolTable.build(DictSource({"app.py": BOOKING, "tests/test_app.py": TEST_BOOKING}))
    frames = (Frame("tests/test_app.py", 5, "test_book"), Frame("app.py", 13, "book"))
    innermost_last = Failure("t", "E", path="app.py", line=13, frames=frames)
    # V8 stacks as parsed today: innermost first, path/line at the test.
    innermost_first = Failure("t", "E", path="tests/test_app.py", line=5, frames=frames[::-1])
    assert code_frame(innermost_last, table) == code_frame(innermost_first, table) == ("app.py", 13)
    assert code_frame(Failure("t", "E", frames=frames[:1]), table) is None


def test_called_functions_rank_what_the_caller_observes() -> None:
    files = {"app.py": BOOKING, "tests/test_app.py": TEST_BOOKING}
    pf = _pf("app.py", BOOKING)
    table = SymbolTable.build(DictSource(files))
    fn = next(f for f in table.functions_named("count"))
    # The loop, the accumulation and the returned value; not the dead label or the logging.
    assert observed_lines(pf, fn) == frozenset({26, 29, 30, 31})
    failure = Failure(
        "tests/test_app.py::test_count",
        "AssertionError",
        "assert 0 == 1",
        frames=(Frame("tests/test_app.py", 9, "test_count"),),
    )
    parsed = {p: _pf(p, t) for p, t in files.items()}
    suspects = localize([failure], table, parse=parsed.get)
    assert _weight(suspects, "app.py", 30) == pytest.approx(0.9)
    assert _weight(suspects, "app.py", 28) == pytest.approx(0.9 * UNOBSERVED)
    assert _weight(suspects, "app.py", 27) == pytest.approx(0.9 * UNOBSERVED)


def test_the_call_path_ranks_by_ochiai_with_frames_as_priors() -> None:
    """Issue #29: with the failing tests' traced lines, Ochiai ranks; the frames only break ties;
    lines the trace shows no failing test ran are gone; lines it cannot speak for sink."""
    from jobs.repair.call_path import CallPath

    files = {"app.py": BOOKING, "tests/test_app.py": TEST_BOOKING}
    table = SymbolTable.build(DictSource(files))
    failure = Failure(
        "tests/test_app.py::test_book",
        "SoldOut",
        "app.SoldOut: ada: 2",
        path="app.py",
        line=13,
        frames=(Frame("tests/test_app.py", 5, "test_book"), Frame("app.py", 13, "book")),
    )
    static = localize([failure], table)
    fn = table.function_at("app.py", 13)
    assert fn is not None and _rank(static, "app.py", 13) == 0
    # The trace: lines 8 and 13 ran only on the failing path (1.0), line 10 on passing paths too.
    path = CallPath({"app.py": {8: 1.0, 10: 0.5, 13: 1.0}}, (("app.py", fn.start_line, fn.end_line),), False)
    ranked = localize([failure], table, call_path=path)
    assert [s.line for s in ranked[:3]] == [13, 8, 10]  # 13 and 8 tie on Ochiai; 13's frame decides
    ran = {s.line for s in ranked if s.path == "app.py" and 8 <= s.line <= fn.end_line}
    assert ran == {8, 10, 13}  # the function's other body lines did not run on the failing path
    # ...its header (before the first line that ran) stays, below the lines that ran.
    assert all(s.weight < 1.0 for s in ranked if s.line not in ran)


def test_a_traced_functions_signature_stays_a_suspect() -> None:
    """A default is evaluated when the function is defined, not when the failing test calls it: the
    trace never marks the ``def`` line, yet a wrong default is fixed there (``skip_header=False``)."""
    from jobs.repair.call_path import CallPath

    src = "def parse(text, skip_header=False):\n    rows = text.split()\n    return rows[1:] if skip_header else rows\n"
    files = {
        "csvfile.py": src,
        "tests/test_csv.py": "from csvfile import parse\n\n\ndef test_p():\n    assert parse('h a') == ['a']\n",
    }
    table = SymbolTable.build(DictSource(files))
    failure = Failure(
        "tests/test_csv.py::test_p",
        "AssertionError",
        "assert ['h', 'a'] == ['a']",
        path="tests/test_csv.py",
        line=5,
        frames=(Frame("tests/test_csv.py", 5, "test_p"),),
    )
    path = CallPath({"csvfile.py": {2: 1.0, 3: 1.0}}, (("csvfile.py", 1, 3),), True)
    ranked = localize([failure], table, call_path=path)
    assert {s.line for s in ranked if s.path == "csvfile.py"} == {1, 2, 3}
    assert _weight(ranked, "csvfile.py", 1) <= _weight(ranked, "csvfile.py", 2)
