from importer.csvfile import parse_csv


def test_keep_header_when_asked():
    assert parse_csv("a,b\n1,2", skip_header=False) == [["a", "b"], ["1", "2"]]


def test_semicolons():
    assert parse_csv("h\nx;y", skip_header=True, sep=";") == [["x", "y"]]
