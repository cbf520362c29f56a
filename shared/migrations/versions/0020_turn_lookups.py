"""turn lookups: a session's unfinished turns and a user's unsent ones without reading the finished history

Revision ID: 0020_turn_lookups
Revises: 0019_search_body_index
Create Date: 2026-12-02

Three reads run on every turn: the session's next unfinished turn (claim, twice), whether the session's
user has a turn waiting to be sent (after each turn) and the user's unfinished turns by session (each
accept). They filter on status within one session or one user, and the only indexes were on session_id
and user_id alone: SQLite, with no statistics to choose by, walked every turn of the session or of the
user (a session of 3,000 turns: 0.48, 0.34 and 0.47 ms, growing with the history; 0.08, 0.05 and 0.09 ms
with these). Postgres already found those few rows through `ix_turns_status_created` by its statistics
(0.02-0.03 ms server time with or without these indexes).
"""
from alembic import op

revision = "0020_turn_lookups"
down_revision = "0019_search_body_index"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_turns_session_status", "turns", ["session_id", "status"])
    op.create_index("ix_turns_user_status_sent", "turns", ["user_id", "status", "enqueued_at"])


def downgrade() -> None:
    op.drop_index("ix_turns_user_status_sent", table_name="turns")
    op.drop_index("ix_turns_session_status", table_name="turns")
