"""message_embeddings: vectors from the provider's /v1/embeddings for hybrid search (EMBEDDINGS_MODEL)

Stored as unit-length float32 bytes on both databases and compared with numpy over one user's scope, as
`message_vectors` is. Not pgvector: Debian bookworm (this deployment's base) ships no postgresql-15-pgvector
package, and the stock postgres image has no `vector` extension, so a migration requiring it would fail on
every default install. Not sqlite-vec: Python's sqlite3 is often built without `enable_load_extension` (it is
on this machine's Python 3.11), so the extension cannot be loaded at all. One person's history is searched
brute force in a few milliseconds either way; an ANN index pays off only for corpora far larger than that.

Revision ID: 0027_embeddings
Revises: 0022_cron_jobs
Create Date: 2026-12-07
"""
from alembic import op
import sqlalchemy as sa
import sqlmodel

revision = "0027_embeddings"
down_revision = "0026_evolution_runs"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "message_embeddings",
        sa.Column("message_id", sa.Integer(), nullable=False),
        sa.Column("model", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("dimensions", sa.Integer(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["message_id"], ["messages.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("message_id"),
    )


def downgrade() -> None:
    op.drop_table("message_embeddings")
