from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from indexing.index import RepoIndex
from indexing.model import Chunk, Location, Query, SearchFilters
from indexing.retriever import HybridRetriever, Retriever
from indexing.store import StoredHit, StoreFilter
from tests.conftest import MakeRepo
from tests.indexing.conftest import SAMPLE_FILES, OpenIndex


@pytest.fixture
def shop(sample_repo: Path, open_index: OpenIndex) -> RepoIndex:
    index = open_index(sample_repo)
    index.refresh()
    return index


def _line_of(path: str, needle: str) -> int:
    lines = SAMPLE_FILES[path].split("\n")
    return next(i for i, line in enumerate(lines, start=1) if needle in line)


def test_retriever_implements_the_port(shop: RepoIndex) -> None:
    assert isinstance(shop.retriever(), Retriever)


@pytest.mark.parametrize("mode", ["hybrid", "dense", "sparse"])
def test_each_mode_finds_the_obvious_chunk(shop: RepoIndex, mode: str) -> None:
    hits = shop.retriever().search(Query("compute value added tax rate", k=3, mode=mode))  # type: ignore[arg-type]
    assert hits[0].chunk.qualified_name.endswith("compute_vat")


def test_hybrid_ranks_the_circle_first(shop: RepoIndex) -> None:
    hits = shop.retriever().search(Query("area of a circle from its radius", k=5))
    names = [h.chunk.qualified_name for h in hits]
    assert names[0].endswith(("Circle", "Circle.area")), names
    assert any(n.endswith("Circle.area") for n in names[:3]), names
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    reasons = " ".join(hits[0].reasons)
    assert "dense#" in reasons and "sparse:" in reasons


def test_results_are_deterministic_and_cut_to_k(shop: RepoIndex) -> None:
    r = shop.retriever()
    a = r.search(Query("session token user", k=4))
    b = r.search(Query("session token user", k=4))
    assert len(a) == 4
    assert [h.as_dict() for h in a] == [h.as_dict() for h in b]
    assert r.search(Query("session", k=0)) == []


def test_a_query_without_terms_returns_nothing(shop: RepoIndex) -> None:
    assert shop.retriever().search(Query("the of and", mode="sparse")) == []
    assert shop.retriever().search(Query("   ")) == []


def test_filters_restrict_results(shop: RepoIndex) -> None:
    r = shop.retriever()
    q = "area total session token invoice"
    under_lib = r.search(Query(q, k=20, filters=SearchFilters(path_prefix="lib/")))
    assert under_lib and all(h.chunk.path.startswith("lib/") for h in under_lib)
    one_file = r.search(Query(q, k=20, filters=SearchFilters(path_prefix="./app/auth/tokens.py")))
    assert one_file and {h.chunk.path for h in one_file} == {"app/auth/tokens.py"}
    md = r.search(Query("shop backend billing", k=20, filters=SearchFilters(language="markdown")))
    assert md and all(h.chunk.language == "markdown" for h in md)
    classes = r.search(Query(q, k=20, filters=SearchFilters(kind="class")))
    assert classes and all(h.chunk.kind == "class" for h in classes)
    # filters also bind the chunks pulled in by hints and named symbols
    hinted = r.search(
        Query(
            "Invoice",
            k=20,
            hints=(Location("app/auth/login.py", 10),),
            filters=SearchFilters(path_prefix="lib"),
        )
    )
    assert all(h.chunk.path.startswith("lib/") for h in hinted)


def test_hint_puts_the_traceback_function_first(shop: RepoIndex) -> None:
    line = _line_of("app/auth/login.py", "self.alive = False")
    query = Query("AttributeError: total is not defined in invoice rendering", k=5)
    plain = shop.retriever().search(query)
    assert not plain[0].chunk.qualified_name.endswith("Session.expire")
    for hint_path in (
        "app/auth/login.py",
        str(shop.root / "app/auth/login.py"),
        "/home/runner/work/shop/shop/app/auth/login.py",  # a CI runner's checkout
    ):
        hits = shop.retriever().search(Query(query.text, k=5, hints=(Location(hint_path, line),)))
        top = hits[0]
        # the tightest chunk containing the line wins over its enclosing class
        assert top.chunk.qualified_name.endswith("Session.expire"), hint_path
        assert f"contains app/auth/login.py:{line}" in top.reasons


def test_hint_without_line_boosts_the_file(shop: RepoIndex) -> None:
    hits = shop.retriever().search(Query("circle area radius", k=5, hints=(Location("app/billing/tax.py"),)))
    in_file = [i for i, h in enumerate(hits) if h.chunk.path == "app/billing/tax.py"]
    assert in_file and in_file[0] <= 2
    assert "in app/billing/tax.py" in hits[in_file[0]].reasons


def test_hint_paths_resolve_to_indexed_files(shop: RepoIndex) -> None:
    r = shop.retriever()
    assert r.resolve_path("./app/auth/login.py") == "app/auth/login.py"
    assert r.resolve_path(str(shop.root / "app/auth/login.py")) == "app/auth/login.py"
    assert r.resolve_path("/ci/checkout/shop/app/auth/login.py") == "app/auth/login.py"
    assert r.resolve_path("auth/login.py") == "app/auth/login.py"
    assert r.resolve_path("__init__.py") is None  # ambiguous: several files have that name
    assert r.resolve_path("nowhere/else.py") is None


def test_unknown_hint_paths_are_ignored(shop: RepoIndex) -> None:
    hits = shop.retriever().search(Query("circle area", k=3, hints=(Location("nowhere/else.py", 3),)))
    assert hits[0].chunk.qualified_name.endswith("Circle.area")


def test_named_symbol_is_boosted(shop: RepoIndex) -> None:
    hits = shop.retriever().search(Query("render_invoice_pdf() fails on an empty list", k=5))
    assert hits[0].chunk.symbol == "render_invoice_pdf"
    assert "defines render_invoice_pdf" in hits[0].reasons
    explicit = shop.retriever().search(Query("it breaks", k=5, symbols=("verify_token",)))
    assert explicit[0].chunk.symbol == "verify_token"


REDUNDANT = '''
def normalise_phone_number(raw):
    """Normalise a phone number to E.164 digits."""
    digits = "".join(ch for ch in raw if ch.isdigit())
    if digits.startswith("00"):
        digits = digits[2:]
    if digits.startswith("0"):
        digits = "44" + digits[1:]
    if len(digits) < 8 or len(digits) > 15:
        raise ValueError("not a phone number: " + raw)
    return "+" + digits
'''


def test_redundancy_filter_keeps_one_of_two_identical_functions(
    make_repo: MakeRepo, open_index: OpenIndex
) -> None:
    repo = make_repo(
        {
            "crm/contacts.py": REDUNDANT,
            "billing/customers.py": REDUNDANT,
            "misc/other.py": "def unrelated_thing():\n    return 'phone'\n",
        }
    )
    index = open_index(repo)
    index.refresh()
    r = index.retriever()
    hits = r.search(Query("normalise phone number digits", k=5))
    names = [h.chunk.path for h in hits if h.chunk.symbol == "normalise_phone_number"]
    assert len(names) == 1
    assert names == ["billing/customers.py"]  # the tie is broken by path: the earlier one survives
    both = r.search(Query("normalise phone number digits", k=5, redundancy_threshold=None))
    assert len([h for h in both if h.chunk.symbol == "normalise_phone_number"]) == 2


def _chunk(path: str, start: int) -> Chunk:
    return Chunk(path, "python", "function", "f", f"{path}.f", start, start + 1, "def f(): pass")


def test_ties_break_by_path_then_start_line(shop: RepoIndex) -> None:
    r = HybridRetriever(shop.store, shop.collection, shop.tree_collection, shop.embedder)
    from indexing.index import chunk_payload

    rng = np.random.default_rng(0)
    hits = []
    for path, start in (("b.py", 1), ("a.py", 9), ("a.py", 2), ("c.py", 1)):
        vec = rng.standard_normal(8).astype(np.float32)
        hits.append(StoredHit(f"{path}{start}", 0.5, chunk_payload(_chunk(path, start)), vec))
    ranked = r._rank(Query("zzz", k=10, redundancy_threshold=None), hits, StoreFilter(), None, {})
    assert [(h.chunk.path, h.chunk.start_line) for h in ranked] == [
        ("a.py", 2),
        ("a.py", 9),
        ("b.py", 1),
        ("c.py", 1),
    ]


def test_hits_serialise_to_the_public_shape(shop: RepoIndex) -> None:
    hit = shop.retriever().search(Query("compute vat", k=1))[0]
    d = hit.as_dict()
    assert list(d) == ["path", "start_line", "end_line", "symbol", "kind", "score"]
    assert d["path"] == "app/billing/tax.py"


@pytest.mark.slow
def test_real_model_index_and_search(sample_repo: Path, tmp_path: Path) -> None:
    from bot.settings import load_settings

    settings = load_settings(
        {"ARCS_HOME": str(tmp_path / "model-home"), "ARCS_EMBEDDER": "onnx", "ARCS_INDEX_MODE": "eager"}
    )
    with RepoIndex.open(settings, sample_repo) as index:
        stats = index.refresh()
        assert stats.embedded == stats.chunks > 0
        assert index.store.dense_dim(index.collection) == 384
        r = index.retriever()
        top2 = r.search(Query("how much value added tax is due", k=2))
        assert "compute_vat" in [h.chunk.symbol for h in top2]
        assert {h.chunk.path for h in top2} == {"app/billing/tax.py"}
        assert r.search(Query("end a user's session", k=3, mode="dense"))[0].chunk.path == "app/auth/login.py"
        assert r.hierarchical(Query("check a signed api token", k=1))[0].chunk.symbol == "verify_token"
        assert index.refresh(full=True).embedded == 0


PRICING = '''"""Prices."""


def tier_discount(quantity):
    """Discount rate for a bulk quantity."""
    if quantity > 10:
        return 0.05
    return 0.0


def bulk_price(unit, quantity):
    """Price of some units with the bulk discount."""
    return unit * quantity * (1 - tier_discount(quantity))


def unit_label(unit):
    """A price label."""
    return f"{unit:.2f} USD"
'''

PRICING_TEST = """from shop.pricing import bulk_price, unit_label


def test_bulk_price_at_tier_boundary():
    assert bulk_price(2.0, 10) == 19.0


def test_label():
    assert unit_label(2.0) == "2.00 USD"
"""

PYTEST_LOG = """___________ test_bulk_price_at_tier_boundary ___________
tests/test_pricing.py:5: in test_bulk_price_at_tier_boundary
    assert bulk_price(2.0, 10) == 19.0
E   AssertionError: assert 20.0 == 19.0
"""


@pytest.fixture
def pricing(make_repo: MakeRepo, open_index: OpenIndex) -> RepoIndex:
    repo = make_repo({"shop/pricing.py": PRICING, "tests/test_pricing.py": PRICING_TEST})
    index = open_index(repo)
    index.refresh()
    return index


def test_failing_test_points_at_the_code_it_calls(pricing: RepoIndex) -> None:
    hits = pricing.retriever().search(
        Query(PYTEST_LOG, k=5, hints=(Location("tests/test_pricing.py", 5),), redundancy_threshold=None)
    )
    names = [h.chunk.symbol for h in hits]
    assert not hits[0].chunk.path.startswith("tests/"), names
    assert names.index("bulk_price") < names.index("test_bulk_price_at_tier_boundary"), names
    assert names.index("tier_discount") < 3, names  # the helper bulk_price calls
    bulk = hits[names.index("bulk_price")]
    assert "called: bulk_price" in bulk.reasons
    assert "called by callee: tier_discount" in hits[names.index("tier_discount")].reasons
    # unit_label is used by the test module, not on the failing line: no callee boost
    assert all("called: unit_label" not in h.reasons for h in hits)


def test_a_query_about_tests_keeps_test_code_on_top(pricing: RepoIndex) -> None:
    text = "fix the test test_bulk_price_at_tier_boundary: " + PYTEST_LOG
    hits = pricing.retriever().search(Query(text, k=3, hints=(Location("tests/test_pricing.py", 5),)))
    assert hits[0].chunk.symbol == "test_bulk_price_at_tier_boundary"
    prefixed = pricing.retriever().search(Query("bulk price boundary", k=3, filters=SearchFilters("tests")))
    assert prefixed and all(h.chunk.path.startswith("tests/") for h in prefixed)


def test_stack_frames_are_weighted_almost_evenly_and_test_frames_low() -> None:
    hints = [
        ("pkg/a.py", 3),
        ("pkg/b.py", 9),
        ("tests/test_a.py", 4),
        ("pkg/c.py", 7),
        ("tests/test_a.py", 9),
    ]
    weights = HybridRetriever._hint_weights(hints, about_tests=False)
    assert weights[0] == 1.0
    assert weights[1] == weights[3] == pytest.approx(0.9)
    assert weights[2] < 0.5 and weights[4] < weights[2]
    assert HybridRetriever._hint_weights(hints, about_tests=True)[:2] == [1.0, pytest.approx(0.9)]
    assert HybridRetriever._hint_weights(hints, about_tests=True)[2] == pytest.approx(0.9)


def test_a_method_ranks_above_its_small_class(shop: RepoIndex) -> None:
    hits = shop.retriever().search(Query("area of a circle from its radius", k=5, redundancy_threshold=None))
    names = [h.chunk.qualified_name for h in hits]
    area = next(i for i, n in enumerate(names) if n.endswith("Circle.area"))
    circle = next((i for i, n in enumerate(names) if n.endswith("Circle")), len(names))
    assert area < circle, names
    assert area == 0, names
