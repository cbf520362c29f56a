"""search at scale (Postgres): the owner on each indexed message

Revision ID: 0016_search_scale
Revises: 0015_cache_usage
Create Date: 2026-12-01

`message_search.user_id` (with a btree on (user_id, message_id)) lets a search list one user's
newest matches by walking that index backwards and testing each document, stopping at the limit,
instead of collecting every match of a common word in the whole database first; and it scopes a
ranked search without joining messages and sessions for every match.

SQLite is unchanged: FTS5 already walks a term's rows in rowid order.
"""
from alembic import op

revision = "0016_search_scale"
down_revision = "0015_cache_usage"
branch_labels = None
depends_on = None

INDEXED = "{r}.role IN ('user', 'assistant') AND trim(coalesce({r}.content, '')) <> ''"
DOC_LEN = "(SELECT coalesce(sum(array_length(positions, 1)), 0) FROM unnest({doc}))"


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        return
    op.execute("ALTER TABLE message_search ADD COLUMN user_id varchar(40)")
    op.execute("""
        UPDATE message_search AS ms SET user_id = s.user_id
        FROM messages AS m JOIN sessions AS s ON s.id = m.session_id WHERE m.id = ms.message_id
    """)
    op.execute("ALTER TABLE message_search ALTER COLUMN user_id SET NOT NULL")
    op.execute("CREATE INDEX ix_message_search_user_message ON message_search (user_id, message_id)")
    op.execute(_trigger_function(with_user=True))


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        return
    op.execute(_trigger_function(with_user=False))
    op.execute("DROP INDEX IF EXISTS ix_message_search_user_message")
    op.execute("ALTER TABLE message_search DROP COLUMN user_id")


def _trigger_function(with_user: bool) -> str:
    """The per-row trigger of 0003; with the owner stored when `with_user`."""
    columns = "message_id, prev_id, prev2_id, doc_len, document" + (", user_id" if with_user else "")
    owner = ", (SELECT user_id FROM sessions WHERE id = NEW.session_id)" if with_user else ""
    return f"""
        CREATE OR REPLACE FUNCTION hstack_index_message() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
            ids integer[];
            texts text[];
            doc tsvector;
        BEGIN
            DELETE FROM message_search WHERE message_id = NEW.id;
            IF NOT ({INDEXED.format(r='NEW')}) THEN
                RETURN NULL;
            END IF;
            SELECT array_agg(b.id ORDER BY b.id DESC), array_agg(b.content ORDER BY b.id DESC)
              INTO ids, texts
              FROM (SELECT id, content FROM messages AS m
                    WHERE m.session_id = NEW.session_id AND m.id < NEW.id AND {INDEXED.format(r='m')}
                    ORDER BY m.id DESC LIMIT 2) AS b;
            doc := hstack_search_document(NEW.content, texts[1], texts[2]);
            INSERT INTO message_search ({columns})
            VALUES (NEW.id, ids[1], ids[2], {DOC_LEN.format(doc='doc')}, doc{owner});
            RETURN NULL;
        END $$
    """
