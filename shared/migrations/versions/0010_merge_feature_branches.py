"""merge the feature branches developed in parallel into one head

Revision ID: 0010
Revises: 0003, 0004, 0005, 0007, 0008, 0009
Create Date: 2026-11-30
"""

revision = "0010"
down_revision = ("0003", "0004", "0005", "0007", "0008", "0009")
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
