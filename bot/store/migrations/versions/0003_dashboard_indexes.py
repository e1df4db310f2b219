"""Covering indexes for the dashboard's window aggregates and the /metrics duration histogram.

Measured on 100k attempts (bench/dashboard, bench/RESULTS.md): the org page's aggregate scans and
the duration histogram read these indexes instead of the attempt rows, which carry patches and
traces (on SQLite a row scan walks their overflow pages).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from __future__ import annotations

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Create the two indexes."""
    op.create_index(
        "ix_attempts_window",
        "attempts",
        ["created_at", "repo", "status", "cost_usd", "failure_class", "trigger"],
    )
    op.create_index("ix_attempts_durations", "attempts", ["status", "started_at", "finished_at"])


def downgrade() -> None:
    """Drop them."""
    op.drop_index("ix_attempts_durations", table_name="attempts")
    op.drop_index("ix_attempts_window", table_name="attempts")
