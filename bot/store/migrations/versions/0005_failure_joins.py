"""One attempt per failure: the failure signature and admission time of an attempt, and the runs
that joined it.

``attempts.failure_signature`` is part of a CI attempt's idempotency key (``attempts.idempotency_key``
stays the unique arbiter: runs of one commit with the same signature claim the same row);
``joined_runs`` records every other run that failed that way, ``(attempt_id, run_id)`` unique so a
redelivered run or two workers joining at once record it once. ``attempts.admitted_at`` marks the
running attempts that count against the per-repository cap. Two indexes find the attempt a run
started or joined (a redelivered run is recognised before its logs are downloaded again).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None

# As bot.store.models.BigId: SQLite only auto-increments INTEGER PRIMARY KEY.
_BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    """Add the two attempt columns and the ``joined_runs`` table."""
    # Nullable columns without defaults: metadata-only changes on both backends (no rewrite).
    op.add_column("attempts", sa.Column("failure_signature", sa.String(64), nullable=True))
    op.add_column("attempts", sa.Column("admitted_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "joined_runs",
        sa.Column("id", _BIG_ID, primary_key=True, autoincrement=True),
        sa.Column(
            "attempt_id",
            _BIG_ID,
            sa.ForeignKey("attempts.id", ondelete="CASCADE", name="fk_joined_runs_attempt_id_attempts"),
            nullable=False,
        ),
        sa.Column("repo", sa.String(255), nullable=False),
        sa.Column("run_id", sa.BigInteger(), nullable=False),
        sa.Column("workflow_name", sa.String(255), nullable=True),
        sa.Column("delivery_id", sa.String(100), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_joined_runs"),
        sa.UniqueConstraint("attempt_id", "run_id", name="uq_joined_runs_attempt_id_run_id"),
    )
    op.create_index("ix_joined_runs_repo_run_id", "joined_runs", ["repo", "run_id"])
    op.create_index("ix_attempts_repo_run_id", "attempts", ["repo", "run_id"])


def downgrade() -> None:
    """Drop them."""
    op.drop_index("ix_attempts_repo_run_id", table_name="attempts")
    op.drop_table("joined_runs")
    with op.batch_alter_table("attempts") as batch:
        batch.drop_column("admitted_at")
        batch.drop_column("failure_signature")
