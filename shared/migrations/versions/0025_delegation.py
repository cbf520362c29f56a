"""delegation: the children a turn's delegate_task started (its turn waits in status awaiting_children)

Revision ID: 0025_delegation
Revises: 0022_cron_jobs
Create Date: 2026-12-07
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel
import shared.models.base

revision = "0025_delegation"
down_revision = "0024_outbox_attachments"
branch_labels = None
depends_on = None

String = sqlmodel.sql.sqltypes.AutoString
Time = shared.models.base.UTCDateTime


def upgrade() -> None:
    op.create_table(
        "delegations",
        sa.Column("id", String(length=40), nullable=False),
        sa.Column("user_id", String(length=40), nullable=False),
        sa.Column("session_id", String(length=40), nullable=False),
        sa.Column("turn_id", String(length=40), nullable=False),
        sa.Column("tool_call_id", String(length=255), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("goal", sa.Text(), nullable=False),
        sa.Column("child_session_id", String(length=40), nullable=True),
        sa.Column("child_turn_id", String(length=40), nullable=True),
        sa.Column("status", String(length=24), nullable=False),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("deadline_at", Time(timezone=True), nullable=False),
        sa.Column("created_at", Time(timezone=True), nullable=False),
        sa.Column("finished_at", Time(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.ForeignKeyConstraint(["session_id"], ["sessions.id"]),
        sa.ForeignKeyConstraint(["turn_id"], ["turns.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_delegations_user_id", "delegations", ["user_id"])
    op.create_index("ix_delegations_turn_call", "delegations", ["turn_id", "tool_call_id"])
    op.create_index("ix_delegations_status_deadline", "delegations", ["status", "deadline_at"])
    op.create_index("ix_delegations_child_turn", "delegations", ["child_turn_id"])


def downgrade() -> None:
    op.drop_index("ix_delegations_child_turn", table_name="delegations")
    op.drop_index("ix_delegations_status_deadline", table_name="delegations")
    op.drop_index("ix_delegations_turn_call", table_name="delegations")
    op.drop_index("ix_delegations_user_id", table_name="delegations")
    op.drop_table("delegations")
