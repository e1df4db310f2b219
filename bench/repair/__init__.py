"""Repair benchmark: a corpus of small broken repositories and the runner that repairs them with
``jobs.fix.fix`` (tier 0, and the large tier against a scripted local Anthropic-compatible server).
See ``bench/repair/README.md``."""

from __future__ import annotations
