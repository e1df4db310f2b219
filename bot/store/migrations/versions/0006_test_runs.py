"""The test history: one row per test outcome ARCS saw, for the flaky-test classifier (issue #26).

``(repo, run_key, test_id)`` unique: a redelivered CI run or a retried job records its outcomes
once. The index serves "the history of these tests in this repository, newest first".

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None

# As bot.store.models.BigId: SQLite only auto-increments INTEGER PRIMARY KEY.
_BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    """Add ``test_runs``."""
    op.create_table(
        "test_runs",
        sa.Column("id", _BIG_ID, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(255), nullable=False),
        sa.Column("test_id", sa.String(600), nullable=False),
        sa.Column("sha", sa.String(64), nullable=False),
        sa.Column("env", sa.String(255), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("failed", sa.Boolean(), nullable=False),
        sa.Column("run_key", sa.String(128), nullable=False),
        sa.Column(
            "attempt_id",
            _BIG_ID,
            sa.ForeignKey("attempts.id", ondelete="SET NULL", name="fk_test_runs_attempt_id_attempts"),
            nullable=True,
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_test_runs"),
        sa.UniqueConstraint("repo", "run_key", "test_id", name="uq_test_runs_repo_run_key_test_id"),
    )
    op.create_index("ix_test_runs_repo_test_id_created_at", "test_runs", ["repo", "test_id", "created_at"])


def downgrade() -> None:
    """Drop it."""
    op.drop_index("ix_test_runs_repo_test_id_created_at", table_name="test_runs")
    op.drop_table("test_runs")
