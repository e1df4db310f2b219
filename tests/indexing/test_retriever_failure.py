"""A query built from a failure (issue 30): the library ranks above the README and the tests whose
words the assertion message shares, when library code matches at all."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from indexing.model import Query
from tests.conftest import MakeRepo
from tests.indexing.conftest import OpenIndex

FILES = {
    "README.md": (
        "# pad\n\n## Usage\n\npadLeft pads a string on the left to a width with a fill character:\n"
        "padLeft('7', 3, '0') gives '007'.\n\n## License\n\nMIT\n"
    ),
    "src/pad.js": (
        "'use strict';\n\n"
        "module.exports.padLeft = function (text, width, fill) {\n"
        "  var out = String(text);\n"
        "  while (out.length < width - 1) { out = fill + out; }\n"
        "  return out;\n"
        "};\n"
    ),
    "test/pad.test.js": (
        "var assert = require('assert');\nvar padLeft = require('../src/pad').padLeft;\n\n"
        "describe('padLeft', function () {\n"
        "  it('pads a string on the left to the width', function () {\n"
        "    assert.equal(padLeft('7', 3, '0'), '007');\n"
        "  });\n"
        "});\n"
    ),
    "package.json": '{"name": "pad", "version": "1.0.0", "scripts": {"test": "mocha"}}\n',
}

Ranked = Callable[[str], list[str]]

FAILURE = "pads a string on the left to the width\nAssertionError: '07' == '007'"


@pytest.fixture
def paths_for(make_repo: MakeRepo, open_index: OpenIndex) -> Ranked:
    """The files of the hits of a query (best first, each once)."""
    index = open_index(make_repo(FILES, name="pad"))
    index.refresh()
    retriever = index.retriever()

    def ranked(text: str) -> list[str]:
        hits = retriever.search(Query(text, k=10))
        return list(dict.fromkeys(h.chunk.path for h in hits))

    return ranked


def test_a_failure_query_ranks_the_library_first(paths_for: Ranked) -> None:
    paths = paths_for(FAILURE)
    assert paths[0] == "src/pad.js", paths


def test_a_question_keeps_the_docs_where_they_were(paths_for: Ranked) -> None:
    # No failure in the text: the README that answers it is not pushed down.
    paths = paths_for("how are strings padded on the left to a width with a fill character")
    assert paths[0] == "README.md", paths
