"""Definitions followed from the failing test lines (jobs/repair/callees.py, issue #15)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from jobs.repair.callees import PART_LINES, called_names, callee_context, enclosing_def, function_window
from jobs.repair.model import Failure, Frame

LIB = """\
import re


def helper(x):
    return x * 2


def compute(x):
    y = helper(x)
    return y + 1
"""
TEST = """\
from pkg.lib import compute


def test_compute():
    value = 3
    assert compute(value) == 8
"""


class Source:
    def __init__(self, files: Mapping[str, str]) -> None:
        self._files = dict(files)

    def read(self, path: str) -> str | None:
        return self._files.get(path)

    def files(self) -> Sequence[str]:
        return sorted(self._files)


def _failure(path: str = "tests/test_lib.py", line: int = 6) -> Failure:
    return Failure(
        "tests/test_lib.py::test_compute",
        "AssertionError",
        "7 != 8",
        path,
        line,
        (Frame(path, line, "test_compute"),),
    )


def test_called_names_are_read_from_the_failing_test_nearest_first() -> None:
    lines = TEST.splitlines()
    assert enclosing_def(lines, 6) == 4
    assert called_names(lines, 6) == ["compute"]  # `assert`, `==` and the import line are not calls


def test_the_called_function_and_its_callee_are_shown() -> None:
    source = Source({"pkg/lib.py": LIB, "tests/test_lib.py": TEST})
    got = callee_context(source, [_failure()])
    assert [(e.path, e.start_line, e.end_line, e.symbol) for e in got] == [
        ("pkg/lib.py", 8, 10, "compute"),
        ("pkg/lib.py", 4, 5, "helper"),
    ]
    assert got[0].text.startswith("def compute(x):") and got[0].score > got[1].score
    assert got[0].id == "callee:pkg/lib.py:8-10"


def test_definitions_in_test_files_are_not_followed() -> None:
    test = TEST + "\n\ndef compute_expected():\n    return 8\n"
    test = test.replace("== 8", "== compute_expected()")
    source = Source({"pkg/lib.py": LIB, "tests/test_lib.py": test})
    got = callee_context(source, [_failure()])
    assert {e.symbol for e in got} == {"compute", "helper"}


def test_a_large_function_is_shown_in_parts() -> None:
    body = "".join(f"    x = x + {i}\n" for i in range(2 * PART_LINES))
    lib = f"def compute(x):\n{body}    return x\n"
    source = Source({"pkg/lib.py": lib, "tests/test_lib.py": TEST})
    got = callee_context(source, [_failure()])
    assert [(e.start_line, e.end_line) for e in got] == [
        (1, PART_LINES),
        (PART_LINES + 1, 2 * PART_LINES),
        (2 * PART_LINES + 1, 2 * PART_LINES + 2),
    ]


def test_javascript_functions_are_followed() -> None:
    lib = "function title(s) {\n  return s.toUpperCase();\n}\nmodule.exports = { title };\n"
    test = (
        "const { title } = require('../lib');\ntest('t', () => {\n  assert.equal(title('a b'), 'A B');\n});\n"
    )
    source = Source({"lib.js": lib, "test/title.test.js": test})
    failure = Failure("t", "AssertionError", "", "test/title.test.js", 3, ())
    got = callee_context(source, [failure])
    assert [(e.path, e.start_line, e.end_line) for e in got] == [("lib.js", 1, 3)]


def test_no_test_frame_means_no_callees() -> None:
    source = Source({"pkg/lib.py": LIB, "tests/test_lib.py": TEST})
    failure = Failure("x", "TypeError", "", "pkg/lib.py", 9, (Frame("pkg/lib.py", 9, "compute"),))
    assert callee_context(source, [failure]) == []


def test_a_failing_line_in_code_shows_its_function_or_the_region_before_it() -> None:
    lines = LIB.splitlines()
    assert function_window(lines, 9) == (8, 10)
    assert function_window(lines, 1) == (0, 0)
    big = ["def f(x):", *(f"    x = x + {i}" for i in range(300)), "    return x"]
    assert function_window(big, 200) == (140, 220)
    assert function_window(big, 10, max_lines=400) == (1, 302)


def test_code_frames_come_before_test_frames_in_the_hints() -> None:
    from jobs.repair.feedback import failure_hints

    f = Failure(
        "t",
        frames=(
            Frame("tests/t.py", 3, "test"),
            Frame("src/a.py", 9, "g"),
            Frame("tests/helper.py", 137, "check"),
        ),
        path="tests/helper.py",
        line=137,
    )
    # Code first; then the test function's line before the helper it called (#15, session 5).
    assert failure_hints([f]) == (("src/a.py", 9), ("tests/t.py", 3), ("tests/helper.py", 137))


def test_frame_context_shows_the_whole_function_around_a_code_frame() -> None:
    from jobs.repair.feedback import frame_context

    lib = "import os\n\n\ndef long(x):\n" + "".join(f"    x += {i}\n" for i in range(40)) + "    return x\n"
    items = frame_context(Source({"pkg/lib.py": lib}), [("pkg/lib.py", 44)], radius=5)
    assert [(e.start_line, e.end_line) for e in items] == [(4, 45)]


def test_calling_a_class_shows_its_constructor() -> None:
    lib = "class Version:\n    '''Doc.'''\n\n    def __init__(self, v):\n        self.v = v\n\n    def bump(self):\n        return self.v + 1\n"
    test = "from lib import Version\n\n\ndef test_v():\n    assert Version(1).v == 2\n"
    source = Source({"lib.py": lib, "tests/test_v.py": test})
    got = callee_context(source, [Failure("t", "AssertionError", "", "tests/test_v.py", 5, ())])
    assert [(e.start_line, e.end_line, e.symbol) for e in got] == [(4, 5, "Version")]


def test_the_large_tier_shows_what_the_failing_test_calls() -> None:
    from jobs.repair.budget import Budget
    from jobs.repair.fakes import FakeRetriever, ScriptedLLM, ScriptedProposer
    from tests.jobs.repair.test_loop import NOOP, ci_task, make

    proposer = ScriptedProposer([[NOOP, NOOP]] * 5)
    loop, _ = make(proposer, llm=ScriptedLLM([]), retriever=FakeRetriever([]))
    loop.run(ci_task(), Budget(), "large")
    first = proposer.requests[0]
    assert "callee:calc/core.py:1-2" in [e.id for e in first.evidence]  # is_adult, called at the failing line


def test_chained_method_calls_find_methods_before_same_named_functions() -> None:
    deprecated = "def bump(version):\n    return version\n"
    lib = (
        "class V:\n    def __init__(self, n):\n        self.n = n\n\n"
        "    def bump(self):\n        return self._inc()\n\n    def _inc(self):\n        return V(self.n + 2)\n"
    )
    test = "from lib import V\n\n\ndef test_bump():\n    assert V(1).bump().bump().n == 3\n"
    source = Source(
        {
            "a_deprecated.py": deprecated,
            "lib.py": lib,
            "tests/test_v.py": test,
            "docs/ex.py": "def bump(x):\n    pass\n",
        }
    )
    got = callee_context(source, [Failure("t", "AssertionError", "", "tests/test_v.py", 5, ())])
    assert [(e.path, e.start_line, e.symbol) for e in got] == [
        ("lib.py", 2, "V"),
        ("lib.py", 5, "bump"),
        ("a_deprecated.py", 1, "bump"),
        ("lib.py", 8, "_inc"),
    ]
