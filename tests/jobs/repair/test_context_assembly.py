"""Context assembly for the proposer (issue #15, session 5): which code the model is shown.

Each test fails on the code before this change (stated per test).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from jobs.repair.callees import callee_context
from jobs.repair.feedback import (
    carried_evidence,
    failure_query,
    filter_redundancy,
    fit_evidence,
    formulate_queries,
    frame_context,
)
from jobs.repair.model import Evidence, Failure, Frame
from jobs.repair.prompts import condense, pack_context, render_evidence
from jobs.repair.task import RepairTask


class Source:
    def __init__(self, files: Mapping[str, str]) -> None:
        self._files = dict(files)

    def read(self, path: str) -> str | None:
        return self._files.get(path)

    def files(self) -> Sequence[str]:
        return sorted(self._files)


LIB = """\
def render(rows):
    return layout(rows)


def layout(rows):
    return [pad(r) for r in rows]


def pad(r):
    return r.ljust(3)


def widths(rows):
    return [len(r) for r in rows]
"""

TEST = """\
from lib import render
from common import assert_equal


def test_render():
    rows = ["a"]
    assert_equal(render(rows), ["a  "])
"""

COMMON = """\
def assert_equal(a, b):
    assert a == b
"""


def _helper_failure() -> Failure:
    # pytest's stack: the test function, then the assertion helper it called (innermost last).
    return Failure(
        "tests/test_lib.py::test_render",
        "AssertionError",
        "['a '] != ['a  ']",
        "tests/common.py",
        2,
        (Frame("tests/test_lib.py", 7, "test_render"), Frame("tests/common.py", 2, "assert_equal")),
    )


def _ids(items: Sequence[Evidence]) -> list[str]:
    return [f"{e.path}:{e.symbol}" for e in items]


def test_callees_start_from_the_test_function_not_the_assertion_helper() -> None:
    # Old code read the calls of the innermost test frame (the helper: `assert_equal`'s body has
    # none) and showed nothing.
    source = Source({"lib.py": LIB, "tests/test_lib.py": TEST, "tests/common.py": COMMON})
    shown = _ids(callee_context(source, [_helper_failure()]))
    assert shown[0] == "lib.py:render"
    assert "lib.py:layout" in shown


def test_a_helper_defined_in_a_test_file_is_looked_through() -> None:
    # The test asserts on `self.check(...)`, a helper of the test package that calls the code
    # under test (and returned: it is not on the stack); old code looked only in non-test files,
    # found no `check` and showed nothing.
    test = "class T:\n    def test_x(self):\n        assert self.check('a') == ['a  ']\n"
    harness = "def check(text):\n    return render([text])\n"
    source = Source({"lib.py": LIB, "tests/test_x.py": test, "tests/harness.py": harness})
    failure = Failure(
        "tests/test_x.py::T::test_x",
        "AssertionError",
        "",
        "tests/test_x.py",
        3,
        (Frame("tests/test_x.py", 3, "T.test_x"),),
    )
    shown = _ids(callee_context(source, [failure]))
    assert "lib.py:render" in shown
    assert not any(s.startswith("tests/") for s in shown)


VERSION = """\
def bump_major(version):
    return Version.parse(version).bump_major()


class Version:
    def __init__(self, major, pre=None):
        self.major = major
        self.pre = None if pre is None else str(pre)

    @classmethod
    def parse(cls, text):
        return cls(int(text.split(".")[0]))

    def bump_major(self):
        cls = type(self)
        return cls(self.major + 1)
"""


def test_a_same_named_method_is_followed_and_a_method_brings_its_constructor() -> None:
    # `bump_major()` calls the method `Version.bump_major`: old code skipped a second-hop name
    # equal to the caller's and never showed a class's `__init__` for a called method.
    test = "from version import bump_major\n\n\ndef test_bump():\n    assert bump_major('1.0') == '2.0'\n"
    source = Source({"version.py": VERSION, "tests/test_v.py": test})
    failure = Failure(
        "tests/test_v.py::test_bump",
        "AssertionError",
        "",
        "tests/test_v.py",
        5,
        (Frame("tests/test_v.py", 5, "test_bump"),),
    )
    items = callee_context(source, [failure])
    spans = {(e.symbol, e.start_line) for e in items}
    assert ("bump_major", 14) in spans  # the method, not only the module function at line 1
    assert ("Version", 6) in spans  # Version.__init__ (lines 6-8), via the method's class
    ctor = next(e for e in items if e.symbol == "Version")
    assert "self.pre = None if pre is None else str(pre)" in ctor.text


DEEP = """\
def top(x):
    return middle(x)


def middle(x):
    return bottom(x)


def bottom(x):
    return floor(x)


def floor(x):
    return x - 1
"""


def test_later_rounds_explore_one_hop_deeper_each() -> None:
    # Old code had no `explore` (a TypeError) and stopped after two hops in every round.
    test = "from deep import top\n\n\ndef test_top():\n    assert top(1) == 2\n"
    source = Source({"deep.py": DEEP, "tests/test_deep.py": test})
    failure = Failure(
        "tests/test_deep.py::test_top",
        "AssertionError",
        "",
        "tests/test_deep.py",
        5,
        (Frame("tests/test_deep.py", 5, "test_top"),),
    )
    round1 = {e.symbol for e in callee_context(source, [failure])}
    round2 = {e.symbol for e in callee_context(source, [failure], explore=1)}
    round3 = {e.symbol for e in callee_context(source, [failure], explore=2)}
    assert round1 == {"top", "middle"}
    assert round2 == {"top", "middle", "bottom"}
    assert round3 == {"top", "middle", "bottom", "floor"}


def test_a_test_helper_window_ranks_below_the_test_function_and_first_hop_callees() -> None:
    # Old code gave every frame window 2.0 - rank/100, so `tests/common.py` (the innermost frame)
    # led the evidence above the code the test calls (1.9).
    source = Source({"lib.py": LIB, "tests/test_lib.py": TEST, "tests/common.py": COMMON})
    items = frame_context(source, [("tests/test_lib.py", 7), ("tests/common.py", 2)])
    by_path = {e.path: e for e in items}
    assert by_path["tests/test_lib.py"].score > 1.9
    assert by_path["tests/common.py"].score < 1.9
    assert "helper" in by_path["tests/common.py"].why


def test_later_round_queries_add_the_failure_and_carry_earlier_evidence_lower() -> None:
    # New functions (ImportError on old code): a later round adds a query made of the observed
    # failures, and what was shown before comes back below everything new.
    failure = _helper_failure()
    q = failure_query([failure])
    assert "AssertionError" in q and "test_render" in q
    specs = formulate_queries("fix it", plan=("The code under test",), failure=q)
    assert [s.formulation for s in specs] == ["subgoal", "failure"]
    old = Evidence("a.py:1-5", "code", "a.py", 1, 5, "x", score=3.0, why="subgoal query")
    inside = Evidence("b.py:3-4", "code", "b.py", 3, 4, "y", score=1.0)
    new = Evidence("b.py:1-9", "code", "b.py", 1, 9, "z", score=0.2)
    carried = carried_evidence([old, inside], [new])
    assert [e.id for e in carried] == ["a.py:1-5"]  # b.py:3-4 lies inside a current item
    assert carried[0].score <= 0.5 and carried[0].why.startswith("shown in an earlier round")


def _big_file() -> str:
    body = [f"    value_{i} = compute_something(value_{i - 1}, {i})  # step {i}" for i in range(1, 400)]
    return "\n".join(["def big(value_0):", *body, "    return value_399", ""])


def test_a_large_item_is_condensed_around_the_failing_line_not_cut_after_its_head() -> None:
    # Old code clipped every item at 8,000 characters from its start: line 300 of a 400-line
    # function (about 20,000 characters) never reached the prompt.
    text = _big_file()
    item = Evidence("big.py:1-401", "code", "big.py", 1, 401, text, symbol="big", score=1.0)
    line_300 = text.splitlines()[299]
    assert line_300 not in render_evidence(item)  # no focus: the head, as before
    shown = render_evidence(item, [300])
    assert line_300 in shown and "def big(value_0):" in shown
    assert "not shown" in shown and len(shown) < 8_400
    assert condense(item, [300], 100_000) == text  # fits: unchanged
    failure = Failure("t.py::test_big", "ValueError", "boom", "big.py", 300, (Frame("big.py", 300, "big"),))
    packed = pack_context(RepairTask(kind="ci", failures=(failure,)), evidence=[item])
    assert line_300 in packed.text


def test_the_second_hop_reads_the_whole_body_but_not_its_docstring() -> None:
    # Old code took the second hop's names from the whole body in order, docstring included: the
    # doctest examples used up its 4 names before the real call at the end.
    names = [f"helper_{c}" for c in "abcde"]
    defs = "".join(f"def {n}(x):\n    return x\n\n\n" for n in names)
    doc = "".join(f"    >>> {n}(1)\n    1\n" for n in names)
    lib = f'{defs}def real(x):\n    return x\n\n\ndef api(x):\n    """Examples.\n\n{doc}    """\n    return real(x)\n'
    test = "from lib import api\n\n\ndef test_api():\n    assert api(1) == 2\n"
    source = Source({"lib.py": lib, "tests/test_api.py": test})
    failure = Failure(
        "tests/test_api.py::test_api",
        "AssertionError",
        "",
        "tests/test_api.py",
        5,
        (Frame("tests/test_api.py", 5, "test_api"),),
    )
    symbols = [e.symbol for e in callee_context(source, [failure])]
    assert symbols[0] == "api"
    assert "real" in symbols
    assert not any(s.startswith("helper_") for s in symbols)


def test_evidence_costs_what_the_prompt_shows_of_it() -> None:
    # Old code counted a 20,000-character chunk at full length (the prompt shows at most 8,000 of
    # it), so under a 12,000 budget it dropped every short item and then the long one too.
    long = Evidence("big.py:1-500", "code", "big.py", 1, 500, "x" * 20_000, score=1.0)
    short = [Evidence(f"s{i}.py:1-9", "code", f"s{i}.py", 1, 9, "y" * 1_000, score=0.5) for i in range(3)]
    kept, dropped = fit_evidence([long, *short], budget_chars=12_000)
    assert dropped == ()
    assert len(kept) == 4


def test_an_item_inside_a_container_that_does_not_show_it_is_kept() -> None:
    # Old code dropped any item whose range lay inside an earlier item of the same file: a
    # retrieved 600-line class chunk (shown cut or condensed, or an outline) hid the constructor
    # the callee lookup had found inside it.
    method = "    def __init__(self, pre):\n        self.pre = None if pre is None else str(pre)"
    outline = Evidence(
        "v.py:1-600", "code", "v.py", 1, 600, "class V:\n    def __init__(self, pre): ...", score=2.0
    )
    huge = Evidence(
        "v.py:1-601", "code", "v.py", 1, 601, "class V:\n" + method + "\n" + "#" * 9_000, score=2.0
    )
    ctor = Evidence("callee:v.py:2-3", "code", "v.py", 2, 3, method, score=1.2)
    assert [e.id for e in filter_redundancy([outline, ctor])] == ["v.py:1-600", "callee:v.py:2-3"]
    assert [e.id for e in filter_redundancy([huge, ctor])] == ["v.py:1-601", "callee:v.py:2-3"]
    whole = Evidence("v.py:1-3", "code", "v.py", 1, 3, "class V:\n" + method, score=2.0)
    assert [e.id for e in filter_redundancy([whole, ctor])] == ["v.py:1-3"]  # shown whole: dropped
