"""Issue #25: structure numbers (modules run, controller lines, budget/trace writers, ...)."""

from __future__ import annotations
