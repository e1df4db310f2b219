"""The org dashboard: pages, charts, the read-only JSON API, login with GitHub and /metrics."""

from __future__ import annotations
