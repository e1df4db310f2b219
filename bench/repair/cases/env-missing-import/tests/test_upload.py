from feeds.upload import part_name


def test_part_name():
    assert part_name("a/b/c.csv") == "c.csv"
