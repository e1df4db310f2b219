"""Policies, dashboard sessions, attempt title/cancel/reservation, webhook latency.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def UTCDateTime() -> sa.DateTime:
    return sa.DateTime(timezone=True)


revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Add the policy and session tables and the new attempt/delivery columns."""
    with op.batch_alter_table("attempts") as batch:
        batch.add_column(sa.Column("title", sa.Text(), nullable=True))
        batch.add_column(sa.Column("cancel_requested_at", UTCDateTime(), nullable=True))
        batch.add_column(sa.Column("cancel_reason", sa.Text(), nullable=True))
        batch.add_column(sa.Column("reserved_usd", sa.Float(), nullable=True))
    with op.batch_alter_table("deliveries") as batch:
        batch.add_column(sa.Column("latency_ms", sa.Float(), nullable=True))
    op.create_table(
        "policies",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("repo", sa.String(255), nullable=False),
        sa.Column("paused", sa.Boolean(), nullable=True),
        sa.Column("monthly_usd", sa.Float(), nullable=True),
        sa.Column("max_prs_per_day", sa.Integer(), nullable=True),
        sa.Column("quiet_start", sa.Integer(), nullable=True),
        sa.Column("quiet_end", sa.Integer(), nullable=True),
        sa.Column("timezone", sa.String(64), nullable=True),
        sa.Column("updated_by", sa.String(255), nullable=True),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_policies")),
        sa.UniqueConstraint("owner", "repo", name=op.f("uq_policies_owner_repo")),
    )
    op.create_table(
        "dashboard_sessions",
        sa.Column("id_hash", sa.String(64), nullable=False),
        sa.Column("login", sa.String(255), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=True),
        sa.Column("scope", sa.JSON(), nullable=False),
        sa.Column("csrf", sa.String(64), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id_hash", name=op.f("pk_dashboard_sessions")),
    )
    op.create_index("ix_dashboard_sessions_expires_at", "dashboard_sessions", ["expires_at"])


def downgrade() -> None:
    """Drop what 0002 added."""
    op.drop_index("ix_dashboard_sessions_expires_at", table_name="dashboard_sessions")
    op.drop_table("dashboard_sessions")
    op.drop_table("policies")
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_column("latency_ms")
    with op.batch_alter_table("attempts") as batch:
        batch.drop_column("reserved_usd")
        batch.drop_column("cancel_reason")
        batch.drop_column("cancel_requested_at")
        batch.drop_column("title")
