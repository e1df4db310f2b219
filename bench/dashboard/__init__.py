"""Dashboard benchmark: the org dashboard's queries and ``/metrics`` over a synthetic large org."""

from __future__ import annotations
