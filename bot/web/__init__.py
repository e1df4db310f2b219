"""The ARCS web side: webhook intake, health probes and the GitHub App manifest flow."""

from __future__ import annotations
