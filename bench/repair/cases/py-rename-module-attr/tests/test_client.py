from httpkit.client import options


def test_defaults():
    opts = options()
    assert opts.timeout == 10.0
    assert opts.redirects == 5


def test_overrides():
    opts = options(timeout=2.5, redirects=0)
    assert (opts.timeout, opts.redirects) == (2.5, 0)
