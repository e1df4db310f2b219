from jobsys.policy import load_policy
from jobsys.runner import delays


def test_explicit():
    assert load_policy({"retries": "5", "backoff_s": 1}).retries == 5


def test_defaults():
    policy = load_policy({})
    assert (policy.retries, policy.backoff_s) == (3, 2.0)


def test_delays():
    assert delays({"retries": 2, "backoff_s": 1.0}) == [1.0, 2.0]
