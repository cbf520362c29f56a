"""webhook routes' toolsets, the agent's clarifying questions and its per-session plan list

Revision ID: 0021_toolsets_clarifications
Revises: 0020_turn_lookups
Create Date: 2026-12-03

A webhook route's turns get the read-only tools (no terminal, no memory writes); its owner widens that per
route with a comma list of toolsets. Existing routes get none (the safe set). `clarifications` holds the
multiple-choice questions the agent parks a turn on (status awaiting_input) and their answers;
`session_todos` the plan list the agent keeps per session with `todo`.
"""
import sqlalchemy as sa
from alembic import op

from shared.models.base import UTCDateTime

revision = "0021_toolsets_clarifications"
down_revision = "0020_turn_lookups"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("webhook_routes") as batch:
        batch.add_column(sa.Column("toolsets", sa.String(length=200), nullable=False, server_default=""))
    op.create_table(
        "clarifications",
        sa.Column("id", sa.String(length=40), primary_key=True),
        sa.Column("user_id", sa.String(length=40), sa.ForeignKey("users.id"), nullable=False),
        sa.Column("session_id", sa.String(length=40), sa.ForeignKey("sessions.id"), nullable=False),
        sa.Column("turn_id", sa.String(length=40), sa.ForeignKey("turns.id"), nullable=False),
        sa.Column("tool_call_id", sa.String(length=255), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("choices", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("choice", sa.Text(), nullable=True),
        sa.Column("answered_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("used_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("expires_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_clarifications_user_status", "clarifications", ["user_id", "status"])
    op.create_index("ix_clarifications_status_expires", "clarifications", ["status", "expires_at"])
    op.create_index("ix_clarifications_turn_call", "clarifications", ["turn_id", "tool_call_id"])
    op.create_table(
        "session_todos",
        sa.Column("session_id", sa.String(length=40), sa.ForeignKey("sessions.id"), primary_key=True),
        sa.Column("items", sa.JSON(), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("session_todos")
    op.drop_table("clarifications")
    with op.batch_alter_table("webhook_routes") as batch:
        batch.drop_column("toolsets")
