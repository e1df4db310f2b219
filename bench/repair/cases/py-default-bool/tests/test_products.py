from importer.products import load_products


def test_load_products():
    assert load_products("name,price\ntea,3.5\nmug,7\n") == {"tea": 3.5, "mug": 7.0}
