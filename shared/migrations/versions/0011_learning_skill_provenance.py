"""learning: skill provenance that says who owns a skill, and the conversation key of OpenAI-client sessions

Revision ID: 0011_learning
Revises: 0010
Create Date: 2026-12-10
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = "0011_learning"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("conversation_key", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True))
    op.create_index("ix_sessions_user_conversation", "sessions", ["user_id", "conversation_key"])


def downgrade() -> None:
    op.drop_index("ix_sessions_user_conversation", table_name="sessions")
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("conversation_key")
