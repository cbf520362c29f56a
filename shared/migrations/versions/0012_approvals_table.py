"""approvals: the gate's recorded decisions and parked questions; turns.interactive

Revision ID: 0012_approvals
Revises: 0011_gateway
Create Date: 2026-12-01
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel
import shared.models.base


revision = '0012_approvals'
down_revision = '0011_gateway'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('approvals',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('user_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('session_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('turn_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('tool_call_id', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
    sa.Column('command', sa.Text(), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('rule', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('key', sqlmodel.sql.sqltypes.AutoString(length=255), nullable=True),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('scope', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('decided_by', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
    sa.Column('decided_at', shared.models.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('used_at', shared.models.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('expires_at', shared.models.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('created_at', shared.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['session_id'], ['sessions.id'], ),
    sa.ForeignKeyConstraint(['turn_id'], ['turns.id'], ),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('approvals', schema=None) as batch_op:
        batch_op.create_index('ix_approvals_user_created', ['user_id', 'created_at'], unique=False)
        batch_op.create_index('ix_approvals_status_expires', ['status', 'expires_at'], unique=False)
        batch_op.create_index('ix_approvals_turn_call', ['turn_id', 'tool_call_id'], unique=False)
        batch_op.create_index('ix_approvals_session_scope', ['session_id', 'scope', 'status'], unique=False)
    with op.batch_alter_table('turns', schema=None) as batch_op:
        batch_op.add_column(sa.Column('interactive', sa.Boolean(), nullable=False, server_default=sa.true()))


def downgrade() -> None:
    with op.batch_alter_table('turns', schema=None) as batch_op:
        batch_op.drop_column('interactive')
    with op.batch_alter_table('approvals', schema=None) as batch_op:
        batch_op.drop_index('ix_approvals_session_scope')
        batch_op.drop_index('ix_approvals_turn_call')
        batch_op.drop_index('ix_approvals_status_expires')
        batch_op.drop_index('ix_approvals_user_created')
    op.drop_table('approvals')
