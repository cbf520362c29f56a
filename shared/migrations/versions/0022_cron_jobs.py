"""scheduled jobs: cron_jobs and cron_runs, a user's time zone, a turn's own iteration budget

Revision ID: 0022_cron_jobs
Revises: 0021_toolsets_clarifications
Create Date: 2026-12-03
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel
import shared.models.base

revision = "0022_cron_jobs"
down_revision = "0021_toolsets_clarifications"
branch_labels = None
depends_on = None

String = sqlmodel.sql.sqltypes.AutoString
Time = shared.models.base.UTCDateTime


def upgrade() -> None:
    op.create_table(
        "cron_jobs",
        sa.Column("id", String(length=40), nullable=False),
        sa.Column("user_id", String(length=40), nullable=False),
        sa.Column("session_id", String(length=40), nullable=False),
        sa.Column("name", String(length=200), nullable=False),
        sa.Column("schedule", String(length=200), nullable=False),
        sa.Column("prompt", sa.Text(), nullable=False),
        sa.Column("deliver", String(length=100), nullable=False),
        sa.Column("skill", String(length=64), nullable=True),
        sa.Column("timezone", String(length=64), nullable=True),
        sa.Column("status", String(length=16), nullable=False),
        sa.Column("max_iterations", sa.Integer(), nullable=True),
        sa.Column("timeout_seconds", sa.Float(), nullable=True),
        sa.Column("allow", sa.JSON(), nullable=False),
        sa.Column("next_run_at", Time(timezone=True), nullable=True),
        sa.Column("last_run_at", Time(timezone=True), nullable=True),
        sa.Column("last_status", String(length=16), nullable=True),
        sa.Column("created_at", Time(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.ForeignKeyConstraint(["session_id"], ["sessions.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_cron_jobs_user_id", "cron_jobs", ["user_id"])
    op.create_index("ix_cron_jobs_due", "cron_jobs", ["status", "next_run_at"])
    op.create_table(
        "cron_runs",
        sa.Column("id", String(length=40), nullable=False),
        sa.Column("job_id", String(length=40), nullable=False),
        sa.Column("user_id", String(length=40), nullable=False),
        sa.Column("turn_id", String(length=40), nullable=True),
        sa.Column("status", String(length=16), nullable=False),
        sa.Column("due_at", Time(timezone=True), nullable=False),
        sa.Column("started_at", Time(timezone=True), nullable=False),
        sa.Column("finished_at", Time(timezone=True), nullable=True),
        sa.Column("late_by_seconds", sa.Float(), nullable=False),
        sa.Column("output", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("delivery_id", String(length=40), nullable=True),
        sa.ForeignKeyConstraint(["job_id"], ["cron_jobs.id"]),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.ForeignKeyConstraint(["turn_id"], ["turns.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_cron_runs_job_started", "cron_runs", ["job_id", "started_at"])
    op.create_index("ix_cron_runs_status", "cron_runs", ["status"])
    op.add_column("users", sa.Column("timezone", String(length=64), nullable=True))
    op.add_column("turns", sa.Column("max_iterations", sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_index("ix_cron_runs_status", table_name="cron_runs")
    op.drop_index("ix_cron_runs_job_started", table_name="cron_runs")
    op.drop_table("cron_runs")
    op.drop_index("ix_cron_jobs_due", table_name="cron_jobs")
    op.drop_index("ix_cron_jobs_user_id", table_name="cron_jobs")
    op.drop_table("cron_jobs")
    # Dropped in place (SQLite 3.35+ and Postgres alike): batch mode would copy `users` and `turns` and drop
    # the originals, which the foreign keys of every other table refuse.
    op.execute("ALTER TABLE turns DROP COLUMN max_iterations")
    op.execute("ALTER TABLE users DROP COLUMN timezone")
