"""Fixtures for the index tests: a small multi-directory repository and an index factory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.settings import Settings, load_settings
from indexing.index import RepoIndex
from tests.conftest import MakeRepo

SAMPLE_FILES: dict[str, str] = {
    "README.md": "# Shop\n\nA tiny shop backend: authentication, billing and geometry helpers.\n",
    "app/__init__.py": '"""The shop application."""\n',
    "app/auth/__init__.py": '"""Authentication: logins, sessions and tokens."""\n',
    "app/auth/login.py": '''"""User login and logout with password checks and sessions."""

import hashlib


def login(user, password):
    """Check the password of a user and open a session."""
    digest = hashlib.sha256(password.encode()).hexdigest()
    if digest != user.password_hash:
        raise PermissionError("wrong password")
    return Session(user)


def logout(session):
    """Close a session."""
    session.expire()


class Session:
    """A logged-in user's session."""

    def __init__(self, user):
        self.user = user
        self.alive = True

    def refresh(self):
        """Extend the session lifetime."""
        self.alive = True

    def expire(self):
        """End the session."""
        self.alive = False
''',
    "app/auth/tokens.py": '''"""Signed API tokens."""

import hmac


def make_token(user_id, secret):
    """Sign a token for a user id."""
    mac = hmac.new(secret, str(user_id).encode(), "sha256").hexdigest()
    return f"{user_id}.{mac}"


def verify_token(token, secret):
    """Verify the signature of an API token; return the user id or None."""
    user_id, _, mac = token.partition(".")
    if make_token(user_id, secret) != token:
        return None
    return int(user_id)
''',
    "app/billing/__init__.py": '"""Billing: invoices and taxes."""\n',
    "app/billing/invoice.py": '''"""Invoices with line items and totals."""

from app.billing.tax import compute_vat


class Invoice:
    """A customer invoice."""

    def __init__(self, customer):
        self.customer = customer
        self.lines = []

    def add_line(self, description, amount):
        """Append a line item to the invoice."""
        self.lines.append((description, amount))

    def total(self):
        """Sum of all line amounts including VAT."""
        net = sum(amount for _, amount in self.lines)
        return net + compute_vat(net, 0.2)


def render_invoice_pdf(invoice):
    """Render an invoice as PDF bytes."""
    rows = [f"{d}: {a}" for d, a in invoice.lines]
    return "\\n".join(rows).encode()
''',
    "app/billing/tax.py": '''"""Value added tax rules."""


def compute_vat(amount, rate):
    """Value added tax for an amount at a rate."""
    if rate < 0:
        raise ValueError("negative tax rate")
    return round(amount * rate, 2)
''',
    "lib/geometry/shapes.py": '''"""Plane shapes."""

import math


class Circle:
    """A circle given by its radius."""

    def __init__(self, radius):
        self.radius = radius

    def area(self):
        """Area of the circle."""
        return math.pi * self.radius ** 2

    def perimeter(self):
        """Circumference of the circle."""
        return 2 * math.pi * self.radius


class Square:
    """A square given by its side."""

    def __init__(self, side):
        self.side = side

    def area(self):
        """Area of the square."""
        return self.side * self.side
''',
}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """The shared fixture's settings (hash embedder, temporary home) with the *eager* index mode:
    most index tests pin what a refresh writes; the lazy mode has its own tests (test_lazy.py)."""
    return load_settings(
        {"ARCS_HOME": str(tmp_path / "arcs-home"), "ARCS_EMBEDDER": "hash", "ARCS_INDEX_MODE": "eager"}
    )


@pytest.fixture
def sample_repo(make_repo: MakeRepo) -> Path:
    """A committed repository with app/auth, app/billing and lib/geometry."""
    return make_repo(SAMPLE_FILES, name="shop")


OpenIndex = Callable[..., RepoIndex]


@pytest.fixture
def open_index(settings: Settings) -> Iterator[OpenIndex]:
    """Factory: ``open_index(repo, **kw)`` opens a :class:`RepoIndex` closed at teardown.

    An index with its own store holds the Qdrant folder lock, so opening one without ``store=``
    closes the ones opened before; indexes sharing a ``store`` may stay open together.
    """
    opened: list[RepoIndex] = []

    def _open(repo: Path, *, settings_: Settings | None = None, **kwargs: Any) -> RepoIndex:
        if kwargs.get("store") is None:
            for index in opened:
                index.close()
        index = RepoIndex.open(settings_ or settings, repo, **kwargs)
        opened.append(index)
        return index

    yield _open
    for index in opened:
        index.close()
