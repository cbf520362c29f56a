"""search at scale (Postgres): the owner on each indexed message, and set-based bulk indexing

Revision ID: 0016_search_scale
Revises: 0014_hooks
Create Date: 2026-12-01

`message_search.user_id` (with a btree on (user_id, message_id)) lets a search list one user's
newest matches by walking that index backwards and testing each document, stopping at the limit,
instead of collecting every match of a common word in the whole database first; and it scopes a
ranked search without joining messages and sessions for every match.

`hstack_index_messages(ids)` indexes many new messages in one statement (each text tokenised once,
the two messages before it taken with window functions); `sessions.bulk_insert_messages` calls it
with the per-row trigger switched off for its transaction (`hstack.search_bulk`), so imports run
several times faster while every row is still indexed in the same transaction as its insert.
SQLite is unchanged: FTS5 already walks a term's rows in rowid order.
"""
from alembic import op

revision = "0016_search_scale"
down_revision = "0014_hooks"
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
    op.execute(_bulk_function())


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        return
    op.execute("DROP FUNCTION IF EXISTS hstack_index_messages(integer[])")
    op.execute(_trigger_function(with_user=False))
    op.execute("DROP INDEX IF EXISTS ix_message_search_user_message")
    op.execute("ALTER TABLE message_search DROP COLUMN user_id")


def _trigger_function(with_user: bool) -> str:
    """The per-row trigger of 0003; with the owner stored and the bulk switch honoured when `with_user`."""
    skip = ("IF current_setting('hstack.search_bulk', true) = 'on' THEN RETURN NULL; END IF;"
            if with_user else "")
    columns = "message_id, prev_id, prev2_id, doc_len, document" + (", user_id" if with_user else "")
    owner = ", (SELECT user_id FROM sessions WHERE id = NEW.session_id)" if with_user else ""
    return f"""
        CREATE OR REPLACE FUNCTION hstack_index_message() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
            ids integer[];
            texts text[];
            doc tsvector;
        BEGIN
            {skip}
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


def _bulk_function() -> str:
    """Index the given new messages (appended after their sessions' existing ones) in one statement.

    The document is the same as the trigger's: setweight(body, A) || setweight(prev, B) ||
    setweight(prev2, C), the two previous indexed messages possibly stored before this batch. The
    row comparison (session_id, id) < (...) can only be served by ix_messages_session_id_id, so the
    planner cannot walk the primary key backwards past every other session's messages instead
    (quadratic in the history on an import: it did, with `m.id < first_id`).
    """
    return f"""
        CREATE OR REPLACE FUNCTION hstack_index_messages(ids integer[]) RETURNS void LANGUAGE sql AS $$
        WITH fresh AS (
            SELECT m.id, m.session_id, m.content FROM unnest(ids) AS i (id) JOIN messages AS m ON m.id = i.id
            WHERE {INDEXED.format(r='m')}),
        firsts AS (SELECT session_id, min(id) AS first_id FROM fresh GROUP BY session_id),
        earlier AS (
            SELECT b.id, b.session_id, b.content FROM firsts AS f
            CROSS JOIN LATERAL (SELECT m.id, m.session_id, m.content FROM messages AS m
                                WHERE m.session_id = f.session_id
                                  AND (m.session_id, m.id) < (f.session_id, f.first_id)
                                  AND {INDEXED.format(r='m')}
                                ORDER BY m.session_id DESC, m.id DESC LIMIT 2) AS b),
        vectors AS (
            SELECT id, session_id, to_tsvector('english', hstack_search_text(content)) AS v
            FROM (SELECT * FROM fresh UNION ALL SELECT * FROM earlier) AS every),
        documents AS (
            SELECT id, lag(id, 1) OVER w AS prev_id, lag(id, 2) OVER w AS prev2_id,
                   setweight(v, 'A') || setweight(coalesce(lag(v, 1) OVER w, ''), 'B')
                   || setweight(coalesce(lag(v, 2) OVER w, ''), 'C') AS doc
            FROM vectors WINDOW w AS (PARTITION BY session_id ORDER BY id))
        INSERT INTO message_search (message_id, prev_id, prev2_id, doc_len, document, user_id)
        SELECT d.id, d.prev_id, d.prev2_id, {DOC_LEN.format(doc='d.doc')}, d.doc, s.user_id
        FROM documents AS d JOIN fresh AS f ON f.id = d.id JOIN sessions AS s ON s.id = f.session_id
        ON CONFLICT (message_id) DO UPDATE SET prev_id = EXCLUDED.prev_id, prev2_id = EXCLUDED.prev2_id,
            doc_len = EXCLUDED.doc_len, document = EXCLUDED.document, user_id = EXCLUDED.user_id
        $$
    """
