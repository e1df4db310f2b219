from __future__ import annotations

import pytest

from indexing.tokens import (
    code_tokens,
    document_vector,
    query_symbols,
    query_vector,
    split_identifier,
    term_id,
)


@pytest.mark.parametrize(
    ("ident", "words"),
    [
        ("parse_config", ["parse", "config"]),
        ("parseConfig", ["parse", "config"]),
        ("ParseConfig", ["parse", "config"]),
        ("HTTPServerError", ["http", "server", "error"]),
        ("utf8_decode2", ["utf", "8", "decode", "2"]),
        ("__init__", ["init"]),
        ("x", ["x"]),
    ],
)
def test_split_identifier(ident: str, words: list[str]) -> None:
    assert split_identifier(ident) == words


def test_code_tokens_keep_identifier_whole_and_split() -> None:
    tokens = code_tokens("def parse_config(path): return loadYaml(path)")
    assert "parse_config" in tokens
    assert {"parse", "config", "loadyaml", "load", "yaml", "path"} <= set(tokens)
    # term frequency is preserved
    assert tokens.count("path") == 2


def test_code_tokens_drop_stop_words_short_tokens_and_numbers() -> None:
    tokens = code_tokens("def f(self, a): return self.x + 42 if the_value else None")
    assert "self" not in tokens
    assert "def" not in tokens and "return" not in tokens and "none" not in tokens
    assert "f" not in tokens and "a" not in tokens
    assert "the_value" in tokens and "value" in tokens and "the" not in tokens


def test_term_id_is_stable_31_bit() -> None:
    assert term_id("parse_config") == term_id("parse_config")
    assert term_id("parse") != term_id("config")
    ids = [term_id(t) for t in ("a", "parse", "HTTPServer", "ünïcode")]
    assert all(0 <= i < 2**31 for i in ids)
    # pinned: ids are part of stored vectors, so they must never drift between releases
    assert term_id("parse") == 1187170985
    assert term_id("foo") == 1968957292


def test_document_vector_sorted_unique_and_saturating() -> None:
    vec = document_vector("total total total total total amount")
    assert list(vec.indices) == sorted(set(vec.indices))
    weights = dict(zip(vec.indices, vec.values, strict=True))
    total, amount = weights[term_id("total")], weights[term_id("amount")]
    assert total > amount
    assert total < 5 * amount  # BM25 saturation, not raw term frequency


def test_document_vector_of_empty_text_is_empty() -> None:
    assert len(document_vector("")) == 0
    assert len(document_vector("the a of")) == 0


def test_query_vector_counts_each_term_once() -> None:
    vec = query_vector("parse parse config")
    weights = dict(zip(vec.indices, vec.values, strict=True))
    assert weights[term_id("config")] == 1.0
    assert weights[term_id("parse")] > 1.0


def test_query_symbols_picks_code_names_not_words() -> None:
    text = (
        "TypeError in shapes.Circle.area: parse_config() failed; see app/util.py, "
        "name 'foo' is not defined, getValue broke. Please fix it e.g. soon"
    )
    syms = query_symbols(text)
    assert "shapes.Circle.area" in syms and "area" in syms
    assert "parse_config" in syms
    assert "foo" in syms
    assert "getValue" in syms
    assert "TypeError" in syms
    assert "Please" not in syms and "fix" not in syms
    assert "py" not in syms and "util.py" not in syms
    assert "e.g" not in syms
