"""memory: staged writes awaiting approval, per-session memory snapshots

Revision ID: 0004
Revises: 0002
Create Date: 2026-12-01 10:00:00
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel
import shared.models.base


revision = '0004'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('memory_staged_writes',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('user_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('session_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=True),
    sa.Column('target', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('summary', sa.Text(), nullable=False),
    sa.Column('request', sa.JSON(), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('created_at', shared.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('expires_at', shared.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('decided_at', shared.models.base.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('memory_staged_writes', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_memory_staged_writes_user_id'), ['user_id'], unique=False)
        batch_op.create_index('ix_memory_staged_writes_status_expires', ['status', 'expires_at'], unique=False)

    op.create_table('memory_snapshots',
    sa.Column('session_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('target', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('known', sa.JSON(), nullable=False),
    sa.Column('pending', sa.JSON(), nullable=True),
    sa.Column('pending_turn_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=True),
    sa.Column('updated_at', shared.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['session_id'], ['sessions.id'], ),
    sa.PrimaryKeyConstraint('session_id', 'target')
    )


def downgrade() -> None:
    op.drop_table('memory_snapshots')
    with op.batch_alter_table('memory_staged_writes', schema=None) as batch_op:
        batch_op.drop_index('ix_memory_staged_writes_status_expires')
        batch_op.drop_index(batch_op.f('ix_memory_staged_writes_user_id'))
    op.drop_table('memory_staged_writes')
