"""learning: skill provenance that says who owns a skill, and the conversation key of OpenAI-client sessions

Revision ID: 0013_learning
Revises: 0012_approvals
Create Date: 2026-12-01
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel

import shared.models.base


revision = "0013_learning"
down_revision = "0012_approvals"
branch_labels = None
depends_on = None


# Before: origin "agent" meant written by the foreground agent (created_by "agent") or by a review
# (created_by "review"). Now only a review's skills are the agent's; the foreground agent created the
# others because the user asked, so they are the user's: the curator leaves them and reviews may not edit
# them. created_by keeps who wrote each one.
FOREGROUND_TO_USER = "UPDATE skills SET origin = 'user' WHERE origin = 'agent' AND (created_by IS NULL OR created_by <> 'review')"
BACK_TO_AGENT = "UPDATE skills SET origin = 'agent' WHERE origin = 'user' AND created_by = 'agent'"


def upgrade() -> None:
    op.execute(FOREGROUND_TO_USER)
    op.create_table(
        "skill_staged_writes",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("user_id", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
        sa.Column("session_id", sqlmodel.sql.sqltypes.AutoString(length=40), nullable=True),
        sa.Column("writer", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("action", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("arguments", sa.JSON(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("diff", sa.Text(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("created_at", shared.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", shared.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("decided_at", shared.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_skill_staged_writes_user_id", "skill_staged_writes", ["user_id"])
    op.create_index("ix_skill_staged_writes_status_expires", "skill_staged_writes", ["status", "expires_at"])
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("conversation_key", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True))
    op.create_index("ix_sessions_user_conversation", "sessions", ["user_id", "conversation_key"])


def downgrade() -> None:
    op.drop_index("ix_skill_staged_writes_status_expires", table_name="skill_staged_writes")
    op.drop_index("ix_skill_staged_writes_user_id", table_name="skill_staged_writes")
    op.drop_table("skill_staged_writes")
    op.execute(BACK_TO_AGENT)
    op.drop_index("ix_sessions_user_conversation", table_name="sessions")
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("conversation_key")
