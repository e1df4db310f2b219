"""indexing/languages.py: the one languages table, its grammars, per-thread parsers, and its purity."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections import defaultdict
from typing import Any

import pytest
import tree_sitter

import indexing.files
from indexing.languages import (
    code_language,
    code_languages,
    doc_languages,
    family,
    family_members,
    grammar,
    is_test_path,
    languages,
    parser_for,
)
from jobs.repair import gates
from jobs.repair.tier0 import symbols
from tests.import_graph import analyse

SNIPPETS = {
    "python": "def f(x):\n    return x\n",
    "javascript": "export function f(x) { return x; }\n",
    "typescript": "export const f = (x: number): number => x;\n",
    "tsx": "export const A = () => <div>hi</div>;\n",
    "go": "package a\n\nfunc F(x int) int { return x }\n",
    "rust": "pub fn f(x: i32) -> i32 { x }\n",
    "java": "class A { int f(int x) { return x; } }\n",
}


def test_the_table() -> None:
    table = languages()
    assert code_languages() == {n for n, lang in table.items() if lang.kind == "code"}
    assert {"markdown", "rst"} == doc_languages()
    assert set(SNIPPETS) == code_languages()
    for lang in table.values():
        assert lang.suffixes, lang.name
        assert all(s.startswith(".") and s == s.lower() for s in lang.suffixes), lang.name
        assert bool(lang.grammar_module) == (lang.kind == "code"), lang.name


def test_nothing_is_read_or_loaded_at_import() -> None:
    probe = (
        "import sys, indexing.languages as L\n"
        "print(L._table.cache_info().currsize, 'tree_sitter' in sys.modules)\n"
        "print(len(L.code_languages()), L._table.cache_info().currsize)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:2] == ["0 False", "7 1"]


def test_code_language() -> None:
    assert code_language("src/a.py") == "python"
    assert code_language("A.TSX") == "tsx"
    assert code_language("dist/app.min.js") == "javascript"  # noise for the index, code for the gate
    assert code_language("index.d.ts") == "typescript"
    assert code_language("index.d.ts", purpose="symbols") is None
    assert code_language("stub.pyi", purpose="symbols") is None
    assert code_language("README.md") is None
    assert code_language("main.c") is None  # text: no grammar here
    assert code_language("Makefile") is None


def test_families() -> None:
    assert family("tsx") == family("typescript") == family("javascript") == "javascript"
    assert family("go") == "go"
    assert family("cobol") == "cobol"
    assert family_members("typescript") == {"javascript", "typescript", "tsx"}
    assert family_members("python") == {"python"}
    assert family_members("cobol") == {"cobol"}


@pytest.mark.parametrize("language", sorted(SNIPPETS))
def test_every_grammar_parses(language: str) -> None:
    tree = parser_for(language).parse(SNIPPETS[language].encode())
    assert not tree.root_node.has_error
    assert grammar(language) is grammar(language)


def test_no_grammar_for_documents() -> None:
    with pytest.raises(KeyError):
        grammar("markdown")
    with pytest.raises(KeyError):
        grammar("cobol")


def test_parsers_are_per_thread_in_the_gate_and_tier_0(monkeypatch: pytest.MonkeyPatch) -> None:
    """tree-sitter parsers must not be shared between threads (a worker runs repairs in parallel)."""
    used: list[tuple[int, int]] = []  # (thread, parser) of every parse
    real = tree_sitter.Parser

    class Spy:
        def __init__(self, language: tree_sitter.Language) -> None:
            self._parser = real(language)

        def parse(self, data: bytes, *args: Any, **kwargs: Any) -> tree_sitter.Tree:
            used.append((threading.get_ident(), id(self)))
            return self._parser.parse(data, *args, **kwargs)

    monkeypatch.setattr(tree_sitter, "Parser", Spy)
    both = threading.Barrier(2)  # both threads alive at once: distinct thread ids
    errors: list[BaseException] = []

    def work() -> None:
        try:
            both.wait(timeout=30)
            assert gates.syntax_problems("web/a.js", "let x = 1;\n") == []
            assert gates.syntax_problems("cmd/main.go", "package main\n") == []
            assert symbols.parse_file("web/b.js", "export const y = 2;\n") is not None
            assert symbols.parse_file("pkg/c.go", "package pkg\n") is not None
            both.wait(timeout=30)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    threads_of: defaultdict[int, set[int]] = defaultdict(set)
    for thread, parser in used:
        threads_of[parser].add(thread)
    assert len(used) == 8  # every parse went through a parser made in its own thread
    assert all(len(owners) == 1 for owners in threads_of.values())


def test_is_test_path_has_one_definition() -> None:
    assert indexing.files.is_test_path is is_test_path
    assert is_test_path("src/test/java/AppTest.java") and not is_test_path("src/app.py")


def test_the_module_stays_pure() -> None:
    """The repair core imports indexing.languages, so it must have no effects (tests/import_contracts.toml)."""
    effectful = analyse().effectful
    ours = [
        "indexing.languages",
        "jobs.repair.gates",
        "jobs.repair.llm",
        "jobs.repair.fakes",
        "jobs.repair.model",
        *(f"jobs.repair.tier0.{m}" for m in ("templates", "symbols", "mutations", "localize")),
    ]
    assert {m: effectful[m] for m in ours if m in effectful} == {}
