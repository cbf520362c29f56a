"""curator: per-user pass state, runs and the ledger of skill transitions

Revision ID: 0009
Revises: 0002
Create Date: 2026-11-30 10:12:22
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel
import shared.models.base


revision = '0009'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('curator_runs',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('user_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('started_at', shared.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('finished_at', shared.models.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('backup_path', sqlmodel.sql.sqltypes.AutoString(length=500), nullable=True),
    sa.Column('summary', sqlmodel.sql.sqltypes.AutoString(length=240), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('curator_runs', schema=None) as batch_op:
        batch_op.create_index('ix_curator_runs_user_started', ['user_id', 'started_at'], unique=False)

    op.create_table('curator_state',
    sa.Column('user_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('last_pass_at', shared.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('pass_count', sa.Integer(), nullable=False),
    sa.Column('last_summary', sqlmodel.sql.sqltypes.AutoString(length=240), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('user_id')
    )
    op.create_table('curator_transitions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('run_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('user_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('skill', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('from_state', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('to_state', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('reason', sqlmodel.sql.sqltypes.AutoString(length=300), nullable=False),
    sa.Column('at', shared.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['curator_runs.id'], ),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('curator_transitions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_curator_transitions_run_id'), ['run_id'], unique=False)
        batch_op.create_index('ix_curator_transitions_user_skill', ['user_id', 'skill', 'id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('curator_transitions', schema=None) as batch_op:
        batch_op.drop_index('ix_curator_transitions_user_skill')
        batch_op.drop_index(batch_op.f('ix_curator_transitions_run_id'))

    op.drop_table('curator_transitions')
    op.drop_table('curator_state')
    with op.batch_alter_table('curator_runs', schema=None) as batch_op:
        batch_op.drop_index('ix_curator_runs_user_started')

    op.drop_table('curator_runs')
