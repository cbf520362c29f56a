"""skill evolution runs: one row per GEPA run with its budget, progress, scores, cost and proposal

Revision ID: 0026_evolution_runs
Revises: 0022_cron_jobs
Create Date: 2026-12-07
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel
import shared.models.base

revision = "0026_evolution_runs"
down_revision = "0025_delegation"
branch_labels = None
depends_on = None

String = sqlmodel.sql.sqltypes.AutoString
Time = shared.models.base.UTCDateTime


def upgrade() -> None:
    op.create_table(
        "evolution_runs",
        sa.Column("id", String(length=40), nullable=False),
        sa.Column("user_id", String(length=40), nullable=False),
        sa.Column("skill", String(length=64), nullable=False),
        sa.Column("trigger", String(length=16), nullable=False),
        sa.Column("status", String(length=16), nullable=False),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False),
        sa.Column("budget_metric_calls", sa.Integer(), nullable=False),
        sa.Column("budget_tokens", sa.Integer(), nullable=False),
        sa.Column("metric_calls", sa.Integer(), nullable=False),
        sa.Column("model_calls", sa.Integer(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("progress", sa.Float(), nullable=False),
        sa.Column("stage", String(length=120), nullable=False),
        sa.Column("worker", String(length=120), nullable=True),
        sa.Column("heartbeat_at", Time(timezone=True), nullable=True),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.Column("scores", sa.JSON(), nullable=False),
        sa.Column("baseline", sa.Text(), nullable=True),
        sa.Column("proposed", sa.Text(), nullable=True),
        sa.Column("diff", sa.Text(), nullable=True),
        sa.Column("staged_id", String(length=40), nullable=True),
        sa.Column("summary", String(length=500), nullable=False),
        sa.Column("error", String(length=500), nullable=True),
        sa.Column("created_at", Time(timezone=True), nullable=False),
        sa.Column("started_at", Time(timezone=True), nullable=True),
        sa.Column("finished_at", Time(timezone=True), nullable=True),
        sa.Column("restored_at", Time(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_evolution_runs_user_created", "evolution_runs", ["user_id", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_evolution_runs_user_created", table_name="evolution_runs")
    op.drop_table("evolution_runs")
