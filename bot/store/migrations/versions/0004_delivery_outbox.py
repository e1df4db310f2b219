"""The delivery row is the outbox: its jobs are stored with it, and a partial index finds the rows
whose jobs the broker never confirmed (status ``received``) for the relay.

Delivery ids keep their 100-character columns: the webhook's header check now uses the same
limit (``bot.store.models.DELIVERY_ID_MAX``), so an id the check lets through always fits.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None

_RECEIVED = sa.text("status = 'received'")


def upgrade() -> None:
    """Add ``deliveries.jobs`` and the partial index of ``received`` rows."""
    # A nullable column without a default: a metadata-only change on both backends (no rewrite).
    op.add_column("deliveries", sa.Column("jobs", sa.JSON(), nullable=True))
    op.create_index(
        "ix_deliveries_received",
        "deliveries",
        ["updated_at"],
        postgresql_where=_RECEIVED,
        sqlite_where=_RECEIVED,
    )


def downgrade() -> None:
    """Drop them."""
    op.drop_index("ix_deliveries_received", table_name="deliveries")
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_column("jobs")
