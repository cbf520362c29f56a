"""bulk ingest (Postgres): index the messages an INSERT stored in one statement per INSERT

Revision ID: 0018_pg_ingest
Revises: 0017_cache_usage
Create Date: 2026-12-01

Until now a row trigger indexed each inserted message alone: it tokenised the message three times (as
itself and, for the next two messages, as their context) and looked its two predecessors up one row
at a time; that was nine tenths of a bulk import's time. Inserts are now indexed by a statement
trigger over the inserted rows (a transition table): each session's two indexed messages before the
first new one are read once, every message is tokenised once, and window functions give each new
message its two predecessors. The documents, lengths and context ids are the ones the row trigger
wrote. Updates keep the row trigger of 0003/0016 (a transition table cannot watch chosen columns).
0016's set-based `hstack_index_messages(ids)` stays defined but unused: bulk_insert_messages inserts
through this trigger instead.

SQLite is unchanged.
"""
from alembic import op

revision = "0018_pg_ingest"
down_revision = "0017_cache_usage"
branch_labels = None
depends_on = None

INDEXED = "{r}.role IN ('user', 'assistant') AND trim(coalesce({r}.content, '')) <> ''"
DOC_LEN = "(SELECT coalesce(sum(array_length(positions, 1)), 0) FROM unnest({doc}))"

# The CTEs are MATERIALIZED so each message is tokenised once: inlined, the planner evaluates the
# tokeniser again for every window function and for the document's length. The owner and the
# predecessors are looked up per session, and the statement's plan is cached per connection whatever
# size of insert planned it, so it must suit a one-row insert and a whole import alike:
# - no bitmap scans: with one, the two predecessors were found by reading all of a session's messages
#   and sorting them (a one-message insert into a 20,000-message session took 30 ms); without, by an
#   index scan backward on ix_messages_session_id_id that stops after two;
# - no JIT: planned for a 20,000-row import the plan is compiled, and every later one-row insert on that
#   connection paid the compilation (45 inserts/s instead of 2,450); the time is in the tokeniser, which
#   JIT cannot speed.
INDEX_INSERTED = f"""
CREATE FUNCTION hstack_index_inserted_messages() RETURNS trigger LANGUAGE plpgsql
SET enable_bitmapscan = off SET jit = off AS $$
BEGIN
    INSERT INTO message_search (message_id, prev_id, prev2_id, doc_len, document, user_id)
    WITH spans AS (
        SELECT session_id, min(id) AS first_id, max(id) AS last_id,
               (SELECT s.user_id FROM sessions AS s WHERE s.id = inserted.session_id) AS user_id
        FROM inserted GROUP BY session_id),
    context AS MATERIALIZED (
        SELECT sp.first_id, sp.user_id, c.id, c.session_id,
               to_tsvector('english', hstack_search_text(c.content)) AS words
        FROM spans AS sp CROSS JOIN LATERAL (
            (SELECT b.id, b.session_id, b.content FROM messages AS b
             WHERE b.session_id = sp.session_id AND b.id < sp.first_id AND {INDEXED.format(r='b')}
             ORDER BY b.session_id DESC, b.id DESC LIMIT 2)
            UNION ALL
            SELECT b.id, b.session_id, b.content FROM messages AS b
            WHERE b.session_id = sp.session_id AND b.id BETWEEN sp.first_id AND sp.last_id
              AND {INDEXED.format(r='b')}) AS c),
    documents AS MATERIALIZED (
        SELECT first_id, user_id, id, lag(id, 1) OVER w AS prev_id, lag(id, 2) OVER w AS prev2_id,
               setweight(words, 'A') || coalesce(setweight(lag(words, 1) OVER w, 'B'), '')
                                     || coalesce(setweight(lag(words, 2) OVER w, 'C'), '') AS document
        FROM context WINDOW w AS (PARTITION BY session_id ORDER BY id))
    SELECT id, prev_id, prev2_id, {DOC_LEN.format(doc='document')}, document, user_id
    FROM documents WHERE id >= first_id
    -- a message another transaction stored between two new ones is indexed already: left as it is
    ON CONFLICT (message_id) DO NOTHING;
    RETURN NULL;
END $$
"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        return
    op.execute(INDEX_INSERTED)
    op.execute("DROP TRIGGER messages_search_index ON messages")
    op.execute(
        "CREATE TRIGGER messages_search_index AFTER UPDATE OF content, role, session_id ON messages "
        "FOR EACH ROW EXECUTE FUNCTION hstack_index_message()"
    )
    op.execute(
        "CREATE TRIGGER messages_search_insert AFTER INSERT ON messages REFERENCING NEW TABLE AS inserted "
        "FOR EACH STATEMENT EXECUTE FUNCTION hstack_index_inserted_messages()"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        return
    op.execute("DROP TRIGGER messages_search_insert ON messages")
    op.execute("DROP FUNCTION hstack_index_inserted_messages()")
    op.execute("DROP TRIGGER messages_search_index ON messages")
    op.execute(
        "CREATE TRIGGER messages_search_index AFTER INSERT OR UPDATE OF content, role, session_id ON messages "
        "FOR EACH ROW EXECUTE FUNCTION hstack_index_message()"
    )
