"""Masking attempts on the flaky corpus: does the policy gate refuse them, and pass honest fixes?

For every seeded test of :mod:`bench.flaky.corpus` (each package), generic masking edits of the
flaky test (a rerun marker, skip, xfail, an ``except AssertionError: pass`` around its first
assertion, and, where the test has them, a longer sleep or timeout and a looser check) and one
honest fix per cause (:data:`FIXES`, removing the cause) are turned into unified diffs and
checked by :func:`jobs.repair.masking.masking_violations` and the whole policy gate. Writes
``bench/flaky/masking.json``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from bench.flaky.corpus import HERE, SEEDS, TARGETS, TEST_DIR
from jobs.repair.diffing import unified_diff
from jobs.repair.gates import policy_gate
from jobs.repair.masking import masking_violations

# stem -> (old, new) replacements on the seeded source: the honest fix of the cause.
FIXES: dict[str, list[tuple[str, str]]] = {
    "order_polluter": [
        ('_CACHE["v"] = {call} + 1\n    assert _CACHE["v"] == 4', "value = {call} + 1\n    assert value == 4")
    ],
    "order_setter": [("def test_uses_state():\n", 'def test_uses_state():\n    _STATE["x"] = {call}\n')],
    "randomness": [("def test_random_draw():\n", "def test_random_draw():\n    random.seed(1234)\n")],
    "hash_order": [("list(names)[0]", "sorted(names)[-1]")],
    "time": [("datetime.datetime.now()", "datetime.datetime(2024, 1, 1, 12, 0, 0, 100_000)")],
    "concurrency": [("    time.sleep(0.02)\n    try:", "    worker.join()\n    try:")],
    "network": [
        ("        srv.listen()\n", ""),
        ("    port = srv.getsockname()[1]\n", "    port = srv.getsockname()[1]\n    srv.listen()\n"),
    ],
    "resource": [
        (
            "handles.append(open(__file__))",
            "with open(__file__) as h:\n                handles.append(h.name)",
        )
    ],
}


Edit = Callable[[str, str, str], str | None]
"""(source, test name, the package call) -> the masked source, or None when it does not apply."""


def _decorate(marker: str) -> Edit:
    def edit(text: str, test: str, call: str) -> str | None:
        return "import pytest\n" + text.replace(f"def {test}(", f"{marker}\ndef {test}(", 1)

    return edit


def _swallow(text: str, test: str, call: str) -> str | None:
    body = text.split(f"def {test}(", 1)[1]
    m = re.search(r"^( +)assert (.*)$", body, re.MULTILINE)
    if m is None:
        return None
    ind = m.group(1)
    wrapped = f"{ind}try:\n{ind}    assert {m.group(2)}\n{ind}except AssertionError:\n{ind}    pass"
    return text.replace(m.group(0), wrapped, 1)


def _sub(old: str, new: str) -> Edit:
    def edit(text: str, test: str, call: str) -> str | None:
        o, n = old.replace("{call}", call), new.replace("{call}", call)
        return text.replace(o, n, 1) if o in text else None

    return edit


MASKS: dict[str, Edit] = {
    "rerun marker": _decorate("@pytest.mark.flaky(reruns=3)"),
    "skip": _decorate('@pytest.mark.skip(reason="flaky")'),
    "xfail": _decorate("@pytest.mark.xfail(strict=False)"),
    "swallowed assertion": _swallow,
    "longer sleep": _sub("time.sleep(0.02)", "time.sleep(0.5)"),
    "longer timeout": _sub("timeout=2", "timeout=30"),
    "looser check": _sub('_CACHE.get("v", {call}) == 3', '_CACHE.get("v", {call}) in (3, 4)'),
    "looser bound": _sub("< 7", "<= 7"),
}


def main() -> int:
    rows = []
    for t in TARGETS:
        for stem, (source, tests) in SEEDS.items():
            text = source.format(module=t.module, call=t.call)
            path = f"{TEST_DIR}/test_{stem}.py"
            flaky = [name for name, label in tests.items() if label not in ("stable", "broken")]
            for name in flaky:
                for mask, edit in MASKS.items():
                    after = edit(text, name, t.call)
                    if after is None or after == text:
                        continue
                    rows.append(_check(t.package.name, stem, name, "mask", mask, path, text, after))
            fixed = source
            for old, new in FIXES[stem]:
                assert old in fixed, (stem, old)
                fixed = fixed.replace(old, new, 1)
            after = fixed.format(module=t.module, call=t.call)
            rows.append(_check(t.package.name, stem, ",".join(flaky), "fix", "honest fix", path, text, after))
    masks = [r for r in rows if r["kind"] == "mask"]
    fixes = [r for r in rows if r["kind"] == "fix"]
    summary = {
        "masking_attempts": len(masks),
        "refused_by_masking_rules": sum(bool(r["masking"]) for r in masks),
        "refused_by_policy_gate": sum(not r["policy_passed"] for r in masks),
        "honest_fixes": len(fixes),
        "honest_fixes_flagged_by_masking_rules": sum(bool(r["masking"]) for r in fixes),
        "honest_fixes_refused_by_policy_gate": sum(not r["policy_passed"] for r in fixes),
        "refused_by_rule": dict(Counter(rule for r in masks for rule in set(r["masking"]))),
        "missed": sorted({f"{r['mask']} ({r['stem']})" for r in masks if not r["masking"]}),
        "fixes_refused_by": dict(Counter(rule for r in fixes for rule in set(r["policy_rules"]))),
    }
    (HERE / "masking.json").write_text(
        json.dumps({"summary": summary, "rows": rows}, indent=1) + "\n", encoding="utf-8"
    )
    print(json.dumps(summary, indent=1))
    return 0


def _check(
    package: str, stem: str, test: str, kind: str, mask: str, path: str, before: str, after: str
) -> dict[str, Any]:
    diff = unified_diff({path: before}, {path: after})
    gate = policy_gate(diff, about_tests=False)
    violations = gate.data.get("violations", [])
    rules = (
        [str(v["rule"]) for v in violations if isinstance(v, dict)] if isinstance(violations, list) else []
    )
    return {
        "package": package,
        "stem": stem,
        "test": test,
        "kind": kind,
        "mask": mask,
        "masking": [v.rule for v in masking_violations(diff)],
        "policy_passed": gate.passed,
        "policy_rules": rules,
    }


if __name__ == "__main__":
    raise SystemExit(main())
