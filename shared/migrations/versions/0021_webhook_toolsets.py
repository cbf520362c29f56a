"""webhook routes' toolsets: what a route's turns may use beyond the read-only tools

Revision ID: 0021_webhook_toolsets
Revises: 0020_turn_lookups
Create Date: 2026-12-03

A webhook route's turns get the read-only tools (no terminal, no memory writes); its owner widens that per
route with a comma list of toolsets. Existing routes get none (the safe set).
"""
import sqlalchemy as sa
from alembic import op

revision = "0021_webhook_toolsets"
down_revision = "0020_turn_lookups"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("webhook_routes") as batch:
        batch.add_column(sa.Column("toolsets", sa.String(length=200), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("webhook_routes") as batch:
        batch.drop_column("toolsets")
