"""The deflake plan of varied orders and the flaky-cause classifier (pure)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from jobs.repair.flaky_cause import FIXED_HASH_SEED, SIGNALS, Observed, Order, classify, function_body, plan

T = "tests/test_a.py::test_victim"
SETTER = "tests/test_a.py::test_setter"
OTHER = "tests/test_a.py::test_other"
FILE = (SETTER, T, OTHER)


def test_plan_varies_orders_and_covers_every_neighbour() -> None:
    orders = plan(T, [SETTER, OTHER], 12, seed=3)
    assert len(orders) == 12 and orders[0].kind == "file"
    kinds = {o.kind for o in orders}
    assert kinds == {"file", "alone", "alone-seed", "after", "shuffled"}
    assert {o.after for o in orders if o.kind == "after"} == {SETTER, OTHER}
    assert all(o.tests[-1] == T for o in orders if o.kind == "after")
    assert all(o.hash_seed == FIXED_HASH_SEED for o in orders if o.kind == "alone-seed")
    assert len({o.hash_seed for o in orders if o.kind == "alone"}) == len(
        [o for o in orders if o.kind == "alone"]
    )
    shuffled = [o.tests for o in orders if o.kind == "shuffled"]
    assert all(sorted(s) == sorted(FILE) for s in shuffled) and len(set(shuffled)) > 1
    assert plan(T, [SETTER, OTHER], 12, seed=3) == orders  # seeded: repeatable


def test_plan_without_neighbours_runs_the_test_alone() -> None:
    assert {o.kind for o in plan(T, [], 5)} == {"file", "alone", "alone-seed"}


def _simulate(
    orders: list[Order],
    fails: Callable[[Order], bool],
    message: str = "",
    type_: str = "AssertionError",
    failing: tuple[int, ...] = (),
) -> list[Observed]:
    # Orders can be equal (two fixed-seed alone runs): each is its own run, by position.
    return [
        Observed(o, "failed", type_, message) if fails(o) or (i in failing) else Observed(o, "passed")
        for i, o in enumerate(orders)
    ]


def test_order_dependence_names_the_polluter() -> None:
    def after_setter(o: Order) -> bool:
        return SETTER in o.tests[: o.tests.index(T)]

    d = classify(T, _simulate(plan(T, [SETTER, OTHER], 16, seed=1), after_setter))
    assert d.cause == "order-dependence" and d.polluter == SETTER
    assert any("right after" in e and SETTER in e for e in d.evidence)


def test_a_test_that_needs_a_setter_is_order_dependent() -> None:
    def without_setter(o: Order) -> bool:
        return SETTER not in o.tests[: o.tests.index(T)]

    d = classify(T, _simulate(plan(T, [SETTER, OTHER], 16, seed=1), without_setter))
    assert d.cause == "order-dependence" and d.polluter == SETTER and "relies on" in d.evidence[-1]


def test_hash_seed_steady_but_varied_seeds_mixed_is_randomness() -> None:
    def by_hash(o: Order) -> bool:
        return o.hash_seed != FIXED_HASH_SEED and int(o.hash_seed) % 4 == 1

    d = classify(T, _simulate(plan(T, [], 12), by_hash, "assert ['b', 'a'] == ['a', 'b']"))
    assert d.cause == "randomness" and "PYTHONHASHSEED" in d.evidence[-2]


@pytest.mark.parametrize(
    ("type_", "message", "cause"),
    [
        ("OSError", "[Errno 24] Too many open files", "resource"),
        ("ConnectionRefusedError", "[Errno 111] Connection refused", "network"),
        ("TimeoutError", "worker thread did not finish", "concurrency"),
        ("AssertionError", "assert 3 == 0\n where 3 = datetime.now().second % 4", "time"),
        (
            "AssertionError",
            "assert 0.81 < 0.7\n where 0.81 = <built-in method random of Random object>()",
            "randomness",
        ),
    ],
)
def test_failure_messages_point_at_a_cause(type_: str, message: str, cause: str) -> None:
    orders = plan(T, [SETTER], 12)
    d = classify(T, _simulate(orders, lambda o: False, message, type_, failing=(1, 4, 7, 10)))
    assert d.cause == cause, d.evidence
    assert {s.cause for s in SIGNALS} >= {"resource", "network", "concurrency", "time", "randomness"}


def test_never_failing_and_never_reported() -> None:
    orders = plan(T, [SETTER], 6)
    assert classify(T, _simulate(orders, lambda o: False)).cause == "not-flaky"
    assert classify(T, [Observed(o, "absent") for o in orders]).runs == 0
    broken = classify(T, _simulate(orders, lambda o: True, "assert 3 == 4"))
    assert broken.cause == "not-flaky" and broken.failures == 6 and "real failure" in broken.evidence[-1]
    d = classify(T, _simulate(orders, lambda o: False, "assert 1 == 2", failing=(2, 5)))
    assert d.cause == "unknown" and d.failures == 2 and d.rate == pytest.approx(2 / 6)


SOURCE = """import threading


def test_other():
    assert True


def test_victim():
    t = threading.Thread(target=work)
    t.start()
    assert out == [3]


def test_after():
    pass
"""


def test_test_source_is_the_function_body() -> None:
    body = function_body(SOURCE, "tests/test_a.py::test_victim")
    assert body.startswith("def test_victim():") and "threading.Thread" in body and "test_after" not in body
    assert function_body(SOURCE, "tests/test_a.py::test_missing") == ""


def test_the_code_is_a_last_resort_hint() -> None:
    orders = plan(T, [], 8)
    observed = _simulate(orders, lambda o: False, "assert [] == [3]", failing=(1, 4))
    assert classify(T, observed).cause == "unknown"
    d = classify(T, observed, function_body(SOURCE, T))
    assert d.cause == "concurrency" and "hint from the code" in d.evidence[-1]
    # A telling message wins over the code.
    told = _simulate(
        orders, lambda o: False, "[Errno 111] Connection refused", "ConnectionRefusedError", (1, 4)
    )
    assert classify(T, told, function_body(SOURCE, T)).cause == "network"


def test_one_varied_failure_is_not_hash_order() -> None:
    # 0 of 3 under the fixed seed is likely by chance at a 1-in-3 rate: no hash-order claim.
    orders = plan(T, [], 7)
    varied = [i for i, o in enumerate(orders) if o.kind == "alone"]
    d = classify(T, _simulate(orders, lambda o: False, "assert [] == [3]", failing=(varied[0],)))
    assert d.cause == "unknown" and d.failures == 1
