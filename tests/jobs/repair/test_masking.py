"""The masking gate: each rule refuses its hiding move and lets the matching honest change pass."""

from __future__ import annotations

import pytest

from jobs.repair.diffing import unified_diff
from jobs.repair.gates import policy_gate
from jobs.repair.masking import RULES, masking_violations

T = "tests/test_io.py"
C = "pkg/io.py"

# (rule, path, before, after): the change masks a flaky failure.
REFUSED = [
    (
        "masking.retry",
        T,
        "def test_a():\n    assert f()\n",
        "@pytest.mark.flaky(reruns=3)\ndef test_a():\n    assert f()\n",
    ),
    ("masking.retry", "pytest.ini", "[pytest]\naddopts = -q\n", "[pytest]\naddopts = -q --reruns 5\n"),
    (
        "masking.retry",
        "src/a.test.js",
        "test('a', () => {\n  expect(f()).toBe(1);\n});\n",
        "jest.retryTimes(3);\ntest('a', () => {\n  expect(f()).toBe(1);\n});\n",
    ),
    (
        "masking.retry",
        "test/a.spec.js",
        "it('a', function () {\n  f();\n});\n",
        "it('a', function () {\n  this.retries(4);\n  f();\n});\n",
    ),
    (
        "masking.skip",
        T,
        "def test_a():\n    assert f()\n",
        "@pytest.mark.xfail(strict=False)\ndef test_a():\n    assert f()\n",
    ),
    (
        "masking.sleep",
        T,
        "def test_a():\n    start()\n    time.sleep(0.1)\n    assert done()\n",
        "def test_a():\n    start()\n    time.sleep(2)\n    assert done()\n",
    ),
    ("masking.sleep", C, "def start():\n    go()\n", "def start():\n    go()\n    time.sleep(0.5)\n"),
    (
        "masking.timeout",
        T,
        "def test_a():\n    assert wait(timeout=1)\n",
        "def test_a():\n    assert wait(timeout=30)\n",
    ),
    ("masking.timeout", C, "DEFAULT_TIMEOUT = 5\n", "DEFAULT_TIMEOUT = 60\n"),
    (
        "masking.timeout",
        T,
        "def test_a():\n    c = connect(('127.0.0.1', port), timeout=2)\n",
        "def test_a():\n    c = connect(('127.0.0.1', port), timeout=30)\n",
    ),
    (
        "masking.assert_loosened",
        T,
        "def test_a():\n    assert f() + g() < 7\n",
        "def test_a():\n    assert f() + g() <= 7\n",
    ),
    (
        "masking.assert_loosened",
        T,
        "def test_a(self):\n    self.assertEqual(total(), 3)\n",
        "def test_a(self):\n    self.assertIn(total(), (2, 3, 4))\n",
    ),
    (
        "masking.assert_loosened",
        T,
        "def test_a():\n    assert mean() == pytest.approx(0.5, rel=1e-6)\n",
        "def test_a():\n    assert mean() == pytest.approx(0.5, rel=0.2)\n",
    ),
    (
        "masking.assert_loosened",
        T,
        "def test_a():\n    assert mean() == 0.5\n",
        "def test_a():\n    assert abs(mean() - 0.5) < 0.3\n",
    ),
    (
        "masking.assert_removed",
        T,
        "def test_a():\n    x = f()\n    assert x == 1\n",
        "def test_a():\n    x = f()\n",
    ),
    (
        "masking.swallowed",
        T,
        "def test_a():\n    assert f() == 1\n",
        "def test_a():\n    try:\n        assert f() == 1\n    except AssertionError:\n        pass\n",
    ),
    (
        "masking.swallowed",
        C,
        "def load():\n    return read()\n",
        "def load():\n    try:\n        return read()\n    except Exception:\n        pass\n",
    ),
    (
        "masking.swallowed",
        "src/io.js",
        "function load() {\n  return read();\n}\n",
        "function load() {\n  return read().catch(() => {});\n}\n",
    ),
]

# (rule, path, before, after): an honest fix near the same lines; no masking rule fires.
ALLOWED = [
    (
        "masking.retry",
        T,
        "def test_a():\n    assert f()\n",
        "def test_a(monkeypatch):\n    monkeypatch.setattr(mod, 'CACHE', {})\n    assert f()\n",
    ),
    (
        "masking.skip",
        T,
        "def test_a():\n    assert f() == 1\n",
        "def test_a():\n    random.seed(0)\n    assert f() == 1\n",
    ),
    (
        "masking.sleep",
        T,
        "def test_a():\n    start()\n    time.sleep(0.1)\n    assert done()\n",
        "def test_a():\n    start()\n    event.wait()\n    assert done()\n",
    ),
    (
        "masking.sleep",
        C,
        "def start():\n    go()\n    time.sleep(1)\n",
        "def start():\n    go()\n    time.sleep(0.1)\n",
    ),
    (
        "masking.timeout",
        T,
        "def test_a():\n    c = Client(timeout=30)\n",
        "def test_a():\n    c = Client(timeout=1)\n",
    ),
    (
        "masking.assert_loosened",
        T,
        "def test_a(self):\n    self.assertIn(total(), (2, 3))\n",
        "def test_a(self):\n    self.assertEqual(total(), 3)\n",
    ),
    (
        "masking.assert_loosened",
        T,
        "def test_a():\n    assert mean() == pytest.approx(0.5, rel=0.1)\n",
        "def test_a():\n    assert mean() == pytest.approx(0.5, rel=1e-3)\n",
    ),
    (
        "masking.assert_removed",
        T,
        "def test_a():\n    assert f(1) == 1\n",
        "def test_a():\n    assert f(1, seed=0) == 1\n",
    ),
    (
        "masking.swallowed",
        C,
        "def load():\n    return read()\n",
        "def load():\n    try:\n        return read()\n    except FileNotFoundError:\n        return DEFAULT\n",
    ),
    (
        "masking.swallowed",
        T,
        "def test_a():\n    f()\n",
        "def test_a():\n    with pytest.raises(ValueError):\n        f()\n",
    ),
]


def _diff(path: str, before: str, after: str) -> str:
    return unified_diff({path: before}, {path: after})


def test_every_rule_has_a_refusal_and_an_allowed_case() -> None:
    ids = {r.id for r in RULES}
    assert ids == {c[0] for c in REFUSED} == {c[0] for c in ALLOWED}


@pytest.mark.parametrize(("rule", "path", "before", "after"), REFUSED)
def test_masking_is_refused_with_the_rule_named(rule: str, path: str, before: str, after: str) -> None:
    found = masking_violations(_diff(path, before, after))
    assert rule in {v.rule for v in found}, found
    hit = next(v for v in found if v.rule == rule)
    assert hit.path == path and hit.line > 0
    gate = policy_gate(_diff(path, before, after), about_tests=False)
    assert not gate.passed
    assert any(v["rule"] in (rule, "tests.skip", "tests.assertion_removed") for v in gate.data["violations"])  # type: ignore[attr-defined]


@pytest.mark.parametrize(("rule", "path", "before", "after"), ALLOWED)
def test_an_honest_change_passes(rule: str, path: str, before: str, after: str) -> None:
    assert masking_violations(_diff(path, before, after)) == []
    # The policy's older rules still refuse any edited assertion line; no masking rule fires.
    gate = policy_gate(_diff(path, before, after), about_tests=False)
    rules = [v["rule"] for v in gate.data.get("violations", [])]  # type: ignore[attr-defined]
    assert not [r for r in rules if r.startswith("masking.")]
    assert gate.passed or set(rules) == {"tests.assertion_removed"}


def test_policy_names_the_masking_rule() -> None:
    gate = policy_gate(_diff(T, REFUSED[0][2], REFUSED[0][3]), about_tests=False)
    assert "masking.retry" in str(gate.data) and "do not weaken" in gate.detail


def test_a_task_about_the_tests_may_change_them() -> None:
    assert policy_gate(_diff(T, REFUSED[0][2], REFUSED[0][3]), about_tests=True).passed
