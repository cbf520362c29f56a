"""cache usage: reviews.cached_tokens, the prompt tokens of a review the provider read from its prompt cache

Revision ID: 0017_cache_usage
Revises: 0016_search_scale
Create Date: 2026-12-01
"""
from alembic import op
import sqlalchemy as sa


revision = "0017_cache_usage"
down_revision = "0016_search_scale"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("reviews") as batch:
        batch.add_column(sa.Column("cached_tokens", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("reviews") as batch:
        batch.drop_column("cached_tokens")
