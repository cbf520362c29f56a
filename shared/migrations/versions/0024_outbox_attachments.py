"""gateway outbox: an item may carry a file (an attachment the agent sends) beside its text

Revision ID: 0024_outbox_attachments
Revises: 0023_attachments
Create Date: 2026-12-07
"""
from alembic import op
import sqlalchemy as sa

revision = "0024_outbox_attachments"
down_revision = "0023_attachments"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # No foreign key: a file forgotten with its session leaves an item the gateway fails for good (404).
    with op.batch_alter_table("gateway_outbox") as batch:
        batch.add_column(sa.Column("attachment_id", sa.String(length=40), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("gateway_outbox") as batch:
        batch.drop_column("attachment_id")
