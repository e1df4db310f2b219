"""Spectrum-based fault localization (issue #15): ranking the lines the failing tests ran, and the
evidence shown for the best functions. Pure: hand-built spectra over in-memory files.

Before this change :mod:`jobs.repair.spectrum` held only the value types and the port: there was
no ranking, no evidence and no trace entry, so every test here fails on the old code.
"""

from __future__ import annotations

import math

from jobs.repair.fakes import InMemorySource
from jobs.repair.spectrum import MODULE, Localization, Spectrum, Suspect, ochiai, suspects
from jobs.repair.spectrum_context import RADIUS, WHOLE_LINES, spectrum_evidence

LIB = """\
import os

LIMIT = 3


class Checker:
    def __init__(self):
        self.seen = []

    def visit(self, node):
        if node > LIMIT:
            return 1
        return 0


def helper(x):
    return x + 1


def other(x):
    return x - 1
"""
TEST = "from lib import Checker\n\n\ndef test_visit():\n    assert Checker().visit(4) == 0\n"


def line_of(text: str, needle: str) -> int:
    return next(i for i, t in enumerate(text.splitlines(), 1) if needle in t)


def test_ochiai_is_the_textbook_formula() -> None:
    assert ochiai(4, 0, 4) == 1.0
    assert math.isclose(ochiai(1, 1, 1), 1 / math.sqrt(2))
    assert math.isclose(ochiai(2, 6, 4), 2 / math.sqrt(4 * 8))
    assert ochiai(0, 5, 4) == 0.0 and ochiai(1, 0, 0) == 0.0


def test_functions_rank_by_their_best_line_and_test_files_are_left_out() -> None:
    source = InMemorySource({"lib.py": LIB, "tests/test_lib.py": TEST})
    visit_if, visit_ret = line_of(LIB, "if node > LIMIT"), line_of(LIB, "return 1")
    spectrum = Spectrum(
        failed=2,
        passed=10,
        lines={
            "lib.py": {
                line_of(LIB, "self.seen = []"): (2, 10),
                visit_if: (2, 3),
                visit_ret: (2, 0),
                line_of(LIB, "return x + 1"): (1, 0),
            },
            # a test line run only by the failing tests scores 1.0 but is no suspect
            "tests/test_lib.py": {5: (2, 0)},
        },
    )
    ranked = suspects(spectrum, source)
    assert [s.name for s in ranked] == ["Checker.visit", "helper", "Checker.__init__"]
    visit = ranked[0]
    assert (visit.path, visit.start, visit.end) == (
        "lib.py",
        line_of(LIB, "def visit"),
        line_of(LIB, "return 0"),
    )
    assert (visit.score, visit.ef, visit.ep, visit.lines) == (1.0, 2, 0, (visit_ret,))
    assert ranked[1].score == round(1 / math.sqrt(2), 4)
    assert all(not s.path.startswith("tests/") for s in ranked)


def test_ties_go_to_more_failing_tests_then_the_deeper_function_then_path() -> None:
    # Every function scores 1.0 (run only by failing tests)...
    a = "def outer(x):\n    y = x\n    z = y\n    return inner(z)\n\n\ndef inner(z):\n    return z\n"
    b = "def f():\n    return 1\n"
    source = InMemorySource({"a.py": a, "b.py": b, "c.py": b})
    spectrum = Spectrum(
        failed=2,
        passed=3,
        lines={
            # ...but `outer` has lines the passing tests ran too (ep > 0 at a lower score)
            "a.py": {2: (2, 0), 3: (2, 1), 4: (2, 1), 8: (2, 0)},
            "b.py": {2: (1, 0)},  # only one failing test ran it: sqrt(1/2), below
            "c.py": {2: (2, 0)},
        },
    )
    ranked = suspects(spectrum, source)
    # inner and c.py's f: 1.0, no line a passing test ran (by path); then outer (1.0, two lines
    # passing tests ran); b.py's f last (one failing test of two: 0.71).
    assert [(s.path, s.name) for s in ranked] == [
        ("a.py", "inner"),
        ("c.py", "f"),
        ("a.py", "outer"),
        ("b.py", "f"),
    ]
    again = suspects(Spectrum(failed=2, passed=3, lines=dict(reversed(list(spectrum.lines.items())))), source)
    assert again == ranked  # deterministic whatever the input order


def test_more_failing_tests_break_a_score_tie() -> None:
    # Both best lines score 1/sqrt(2)... one run by 1 of 2 failing tests and no passing test,
    # the other by 2 of 2 failing tests and 2 passing tests.
    text = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
    source = InMemorySource({"m.py": text})
    ranked = suspects(Spectrum(failed=2, passed=5, lines={"m.py": {2: (1, 0), 6: (2, 2)}}), source)
    assert ranked[0].score == ranked[1].score
    assert [s.name for s in ranked] == ["b", "a"]


def test_module_level_lines_are_one_window_per_file() -> None:
    source = InMemorySource({"lib.py": LIB})
    spectrum = Spectrum(failed=1, passed=1, lines={"lib.py": {1: (1, 1), 3: (1, 0), 17: (1, 0)}})
    ranked = suspects(spectrum, source)
    module = next(s for s in ranked if s.name == MODULE)
    assert (module.start, module.end, module.lines) == (1, 3, (3,))
    # same score and failing tests: the function no passing test ran goes first
    assert [s.name for s in ranked] == ["helper", MODULE]


def test_unreadable_files_and_lines_past_the_end_are_skipped() -> None:
    source = InMemorySource({"lib.py": LIB})
    spectrum = Spectrum(failed=1, passed=0, lines={"gone.py": {1: (1, 0)}, "lib.py": {999: (1, 0)}})
    assert suspects(spectrum, source) == ()


def test_localization_round_trips_through_json() -> None:
    loc = Localization(
        scope="suite",
        failed=4,
        passed=704,
        duration_s=4.9,
        complete=True,
        executions=1,
        suspects=(Suspect("a.py", 3, 9, "C.f", 0.7071, 1, 1, (4, 5)),),
    )
    assert Localization.from_json(loc.to_json()) == loc


# --- evidence --------------------------------------------------------------------------------------


def _big_function(n: int) -> str:
    body = "".join(f"    x{i} = {i}\n" for i in range(n))
    return f"def big(x):\n{body}    return x\n"


def test_a_short_function_is_shown_whole_with_why() -> None:
    source = InMemorySource({"lib.py": LIB})
    s = suspects(Spectrum(failed=4, passed=704, lines={"lib.py": {12: (4, 0)}}), source)[0]
    items = spectrum_evidence(source, [s], budget_chars=10_000, failed=4, passed=704)
    assert len(items) == 1
    item = items[0]
    assert (item.start_line, item.end_line, item.symbol) == (s.start, s.end, "Checker.visit")
    assert item.text.splitlines()[0].strip() == "def visit(self, node):"
    assert "line 12 run by 4/4 failing, 0/704 passing tests (Ochiai 1.00)" in item.why
    assert item.score == 1.4


def test_a_long_function_is_shown_as_windows_that_hold_the_top_line() -> None:
    text = "import os\n\n\n" + _big_function(300)
    source = InMemorySource({"big.py": text})
    top = 4 + 200  # inside the body, far from the def line
    s = suspects(Spectrum(failed=1, passed=2, lines={"big.py": {top: (1, 0), 5: (1, 2)}}), source)[0]
    assert s.end - s.start + 1 > WHOLE_LINES
    items = spectrum_evidence(source, [s], budget_chars=10_000)
    ranges = [(e.start_line, e.end_line) for e in items]
    assert ranges == [(4, 4), (top - RADIUS, top + RADIUS)]  # the def line, then the window
    assert items[0].text == "def big(x):"
    assert "    x199 = 199" in items[1].text.splitlines()  # line `top`
    assert all(e.symbol == "big" for e in items)


def test_later_rounds_skip_what_was_shown_and_reach_the_next_suspects() -> None:
    source = InMemorySource({"lib.py": LIB})
    ranked = suspects(
        Spectrum(failed=1, passed=1, lines={"lib.py": {12: (1, 0), 17: (1, 1), 21: (1, 1)}}), source
    )
    first = spectrum_evidence(source, ranked, budget_chars=10_000, max_suspects=1)
    assert [e.symbol for e in first] == ["Checker.visit"]
    second = spectrum_evidence(
        source, ranked, budget_chars=10_000, max_suspects=1, skip={e.id for e in first}
    )
    assert [e.symbol for e in second] == ["helper"]
    assert second[0].score == round(1.0 + 0.4 * ranked[1].score, 4) < first[0].score


def test_the_budget_and_covered_items_bound_what_is_shown() -> None:
    source = InMemorySource({"lib.py": LIB})
    ranked = suspects(Spectrum(failed=1, passed=1, lines={"lib.py": {12: (1, 0), 17: (1, 1)}}), source)
    one = spectrum_evidence(source, ranked, budget_chars=10_000)
    assert [e.symbol for e in one] == ["Checker.visit", "helper"]
    assert sum(len(e.text) for e in one) > len(one[0].text)
    assert [e.symbol for e in spectrum_evidence(source, ranked, budget_chars=len(one[0].text))] == [
        "Checker.visit"
    ]
    covered = spectrum_evidence(source, ranked, budget_chars=10_000, covered=[one[0]])
    assert [e.symbol for e in covered] == ["helper"]
    assert spectrum_evidence(source, ranked, budget_chars=10) == []
