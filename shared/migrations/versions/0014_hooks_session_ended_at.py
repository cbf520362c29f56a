"""hooks: sessions.ended_at, set once when a session really ends (the providers' on_session_end fired)

Revision ID: 0014_hooks
Revises: 0013_learning
Create Date: 2026-12-01
"""
from alembic import op
import sqlalchemy as sa

import shared.models.base


revision = "0014_hooks"
down_revision = "0013_learning"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("ended_at", shared.models.base.UTCDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("ended_at")
