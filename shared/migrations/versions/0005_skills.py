"""skills: provenance and usage per (user, skill name)

Revision ID: 0005
Revises: 0002
Create Date: 2026-12-01 10:30:00
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel
import shared.models.base


revision = '0005'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('skills',
    sa.Column('user_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('origin', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('created_by', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True),
    sa.Column('state', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('pinned', sa.Boolean(), nullable=False),
    sa.Column('view_count', sa.Integer(), nullable=False),
    sa.Column('use_count', sa.Integer(), nullable=False),
    sa.Column('patch_count', sa.Integer(), nullable=False),
    sa.Column('created_at', shared.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', shared.models.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('last_used_at', shared.models.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('archived_at', shared.models.base.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ),
    sa.PrimaryKeyConstraint('user_id', 'name')
    )
    with op.batch_alter_table('skills', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_skills_state'), ['state'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('skills', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_skills_state'))

    op.drop_table('skills')
