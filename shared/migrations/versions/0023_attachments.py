"""attachments: files users send into sessions (photos, voice notes, documents), kept in their workspace

Revision ID: 0023_attachments
Revises: 0022_cron_jobs
Create Date: 2026-12-07
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel
import shared.models.base

revision = "0023_attachments"
down_revision = "0022_cron_jobs"
branch_labels = None
depends_on = None

String = sqlmodel.sql.sqltypes.AutoString
Time = shared.models.base.UTCDateTime


def upgrade() -> None:
    op.create_table(
        "attachments",
        sa.Column("id", String(length=40), nullable=False),
        sa.Column("user_id", String(length=40), nullable=False),
        sa.Column("session_id", String(length=40), nullable=False),
        sa.Column("turn_id", String(length=40), nullable=True),
        sa.Column("message_id", sa.Integer(), nullable=True),
        sa.Column("kind", String(length=16), nullable=False),
        sa.Column("filename", String(length=255), nullable=False),
        sa.Column("mime", String(length=100), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("path", String(length=1024), nullable=False),
        sa.Column("sha256", String(length=64), nullable=False),
        sa.Column("transcript", sa.Text(), nullable=True),
        sa.Column("created_at", Time(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.ForeignKeyConstraint(["session_id"], ["sessions.id"]),
        sa.ForeignKeyConstraint(["turn_id"], ["turns.id"]),
        sa.ForeignKeyConstraint(["message_id"], ["messages.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_attachments_session_id", "attachments", ["session_id"])
    op.create_index("ix_attachments_user_created", "attachments", ["user_id", "created_at"])
    op.create_index("ix_attachments_turn", "attachments", ["turn_id"])


def downgrade() -> None:
    op.drop_index("ix_attachments_turn", table_name="attachments")
    op.drop_index("ix_attachments_user_created", table_name="attachments")
    op.drop_index("ix_attachments_session_id", table_name="attachments")
    op.drop_table("attachments")
