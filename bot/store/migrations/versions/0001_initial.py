"""Initial schema: deliveries, attempts, pull_requests, events.

Revision ID: 0001
Revises:
Create Date: 2026-11-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# Frozen copies of the model types, so later model changes do not rewrite history.
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def UTCDateTime() -> sa.DateTime:
    return sa.DateTime(timezone=True)


revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Create the four tables."""
    op.create_table(
        "deliveries",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("delivery_id", sa.String(100), nullable=False),
        sa.Column("event", sa.String(64), nullable=False),
        sa.Column("action", sa.String(64), nullable=True),
        sa.Column("installation_id", sa.BigInteger(), nullable=True),
        sa.Column("repo", sa.String(255), nullable=True),
        sa.Column("payload_sha256", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("received_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deliveries")),
        sa.UniqueConstraint("delivery_id", name=op.f("uq_deliveries_delivery_id")),
    )
    op.create_table(
        "attempts",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("idempotency_key", sa.String(255), nullable=False),
        sa.Column("installation_id", sa.BigInteger(), nullable=True),
        sa.Column("repo", sa.String(255), nullable=False),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("trigger", sa.String(16), nullable=False),
        sa.Column("delivery_id", sa.String(100), nullable=True),
        sa.Column("requested_by", sa.String(255), nullable=True),
        sa.Column("head_sha", sa.String(64), nullable=True),
        sa.Column("head_branch", sa.String(255), nullable=True),
        sa.Column("base_branch", sa.String(255), nullable=True),
        sa.Column("run_id", sa.BigInteger(), nullable=True),
        sa.Column("issue_number", sa.Integer(), nullable=True),
        sa.Column("comment_id", sa.BigInteger(), nullable=True),
        sa.Column("failure_class", sa.String(32), nullable=True),
        sa.Column("options", sa.JSON(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("verdict", sa.String(32), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("tier", sa.String(32), nullable=True),
        sa.Column("rounds", sa.Integer(), nullable=True),
        sa.Column("tokens", sa.BigInteger(), nullable=True),
        sa.Column("cost_usd", sa.Float(), nullable=True),
        sa.Column("patch", sa.Text(), nullable=True),
        sa.Column("files", sa.JSON(), nullable=True),
        sa.Column("explanation", sa.Text(), nullable=True),
        sa.Column("trace_path", sa.Text(), nullable=True),
        sa.Column("trace", sa.JSON(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=True),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.Column("red_build_at", UTCDateTime(), nullable=True),
        sa.Column("branch", sa.String(255), nullable=True),
        sa.Column("pr_number", sa.Integer(), nullable=True),
        sa.Column("pr_url", sa.Text(), nullable=True),
        sa.Column("pr_state", sa.String(16), nullable=True),
        sa.Column("check_run_id", sa.BigInteger(), nullable=True),
        sa.Column("status_comment_id", sa.BigInteger(), nullable=True),
        sa.Column("message_id", sa.String(64), nullable=True),
        sa.Column("publish_state", sa.String(16), nullable=True),
        sa.Column("publish_started_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_attempts")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_attempts_idempotency_key")),
    )
    op.create_index("ix_attempts_repo_created_at", "attempts", ["repo", "created_at"])
    op.create_index("ix_attempts_status", "attempts", ["status"])
    op.create_index("ix_attempts_owner", "attempts", ["owner"])
    op.create_table(
        "pull_requests",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("attempt_id", BigId, nullable=True),
        sa.Column("repo", sa.String(255), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("branch", sa.String(255), nullable=False),
        sa.Column("head_sha", sa.String(64), nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("merged_at", UTCDateTime(), nullable=True),
        sa.Column("closed_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["attempt_id"],
            ["attempts.id"],
            name=op.f("fk_pull_requests_attempt_id_attempts"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pull_requests")),
        sa.UniqueConstraint("repo", "number", name=op.f("uq_pull_requests_repo_number")),
    )
    op.create_index("ix_pull_requests_attempt_id", "pull_requests", ["attempt_id"])
    op.create_table(
        "events",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("attempt_id", BigId, nullable=True),
        sa.Column("delivery_id", sa.String(100), nullable=True),
        sa.Column("installation_id", sa.BigInteger(), nullable=True),
        sa.Column("repo", sa.String(255), nullable=True),
        sa.Column("data", sa.JSON(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["attempt_id"], ["attempts.id"], name=op.f("fk_events_attempt_id_attempts"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_events")),
    )
    op.create_index("ix_events_attempt_id", "events", ["attempt_id"])
    op.create_index("ix_events_created_at", "events", ["created_at"])


def downgrade() -> None:
    """Drop everything (children first)."""
    op.drop_table("events")
    op.drop_table("pull_requests")
    op.drop_table("attempts")
    op.drop_table("deliveries")
