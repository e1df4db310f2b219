"""Candidate-patch proposers of the repair loop (LLM proposers, replay; tier 0 lives in jobs.repair.tier0)."""

from __future__ import annotations
