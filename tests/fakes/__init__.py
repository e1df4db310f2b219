"""In-repo test doubles shared by the test suites."""

from __future__ import annotations
