"""Candidate-patch proposers of the repair loop (tier 0 templates, LLM proposers, replay)."""

from __future__ import annotations
