"""reviews: per-session review counters, background review runs and their tool-call ledger

Revision ID: 0008
Revises: 0002
Create Date: 2026-12-02 09:00:00
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel
import shared.models.base


revision = '0008'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('review_counters',
    sa.Column('session_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('turns_since_memory', sa.Integer(), nullable=False),
    sa.Column('iterations_since_skill', sa.Integer(), nullable=False),
    sa.Column('last_turn_seq', sa.Integer(), nullable=False),
    sa.Column('updated_at', shared.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['session_id'], ['sessions.id'], ),
    sa.PrimaryKeyConstraint('session_id')
    )
    op.create_table('reviews',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('session_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('user_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('turn_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('trigger', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('through_message_id', sa.Integer(), nullable=False),
    sa.Column('compaction_id', sa.Integer(), nullable=True),
    sa.Column('system_prompt', sa.Text(), nullable=False),
    sa.Column('messages', sa.JSON(), nullable=False),
    sa.Column('summary', sa.Text(), nullable=True),
    sa.Column('model_calls', sa.Integer(), nullable=False),
    sa.Column('prompt_tokens', sa.Integer(), nullable=False),
    sa.Column('completion_tokens', sa.Integer(), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('worker_id', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=True),
    sa.Column('error_code', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
    sa.Column('error_message', sa.Text(), nullable=True),
    sa.Column('created_at', shared.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('enqueued_at', shared.models.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('started_at', shared.models.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('heartbeat_at', shared.models.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('finished_at', shared.models.base.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['session_id'], ['sessions.id'], ),
    sa.ForeignKeyConstraint(['turn_id'], ['turns.id'], ),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('reviews', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_reviews_user_id'), ['user_id'], unique=False)
        batch_op.create_index('ix_reviews_session_status', ['session_id', 'status'], unique=False)

    op.create_table('review_calls',
    sa.Column('review_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('call_index', sa.Integer(), nullable=False),
    sa.Column('tool_call_id', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('arguments', sa.Text(), nullable=False),
    sa.Column('outcome', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('result', sa.Text(), nullable=True),
    sa.Column('created_at', shared.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('finished_at', shared.models.base.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['review_id'], ['reviews.id'], ),
    sa.PrimaryKeyConstraint('review_id', 'call_index')
    )


def downgrade() -> None:
    op.drop_table('review_calls')
    with op.batch_alter_table('reviews', schema=None) as batch_op:
        batch_op.drop_index('ix_reviews_session_status')
        batch_op.drop_index(batch_op.f('ix_reviews_user_id'))
    op.drop_table('reviews')
    op.drop_table('review_counters')
