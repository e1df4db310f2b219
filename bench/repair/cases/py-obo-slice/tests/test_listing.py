from catalog.listing import render_listing


def test_render_listing():
    assert render_listing(["d", "a", "c", "b"], 1) == "page 1/2: a, b, c"
