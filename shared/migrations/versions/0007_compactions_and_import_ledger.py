"""compactions and the import ledger

Revision ID: 0007
Revises: 0002
Create Date: 2026-12-01 10:00:00
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel
import shared.models.base


revision = '0007'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('compactions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('session_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('outcome', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('head_through_id', sa.Integer(), nullable=True),
    sa.Column('summarized_through_id', sa.Integer(), nullable=True),
    sa.Column('summary', sa.Text(), nullable=True),
    sa.Column('summary_role', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True),
    sa.Column('fallback', sa.Boolean(), nullable=False),
    sa.Column('tokens_before', sa.Integer(), nullable=False),
    sa.Column('tokens_after', sa.Integer(), nullable=False),
    sa.Column('system_prompt_sha256', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
    sa.Column('created_at', shared.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['session_id'], ['sessions.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('compactions', schema=None) as batch_op:
        batch_op.create_index('ix_compactions_session_id_id', ['session_id', 'id'], unique=False)

    op.create_table('import_ledger',
    sa.Column('user_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('source_key', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('target_id', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
    sa.Column('cursor', sa.Integer(), nullable=True),
    sa.Column('created_at', shared.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('user_id', 'kind', 'source_key')
    )


def downgrade() -> None:
    op.drop_table('import_ledger')
    with op.batch_alter_table('compactions', schema=None) as batch_op:
        batch_op.drop_index('ix_compactions_session_id_id')
    op.drop_table('compactions')
