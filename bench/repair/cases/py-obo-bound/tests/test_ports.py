from netcfg.ports import is_privileged, is_valid_port


def test_range_ends():
    assert not is_valid_port(0)
    assert is_valid_port(1)
    assert is_valid_port(65535)
    assert not is_valid_port(65536)


def test_privileged():
    assert is_privileged(80)
    assert not is_privileged(8080)
