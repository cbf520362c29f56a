"""search at 1M messages: a GIN index of each message's own words (Postgres), and cheaper indexing

Revision ID: 0019_search_body_index
Revises: 0018_pg_ingest
Create Date: 2026-12-02

`ix_message_search_body` indexes `ts_filter(document, '{a}')`, the message's own words (weight A),
where `ix_message_search_document` indexes the whole document (the message and the two before it).
A query on the message itself (a quoted phrase, a required word, a newest-first listing) found its
candidates through the whole document: a phrase of two common words rechecked every document holding
both words anywhere in its three messages (117,684 at 1M messages for 1,151 matches; five times fewer
hold both in the message itself), each a heap fetch. Building it on a 1M-message history took 11 s.

The insert trigger of 0018 is replaced by one that counts each document's positions from its three
messages' counts instead of unnesting the whole document again, where that count is exact (no lexeme
can reach tsvector's 256 positions and no position its 16,383 limit; else it unnests, as before), and
sorts in memory (work_mem 64 MB: a 20,000-message import spilled its window sort to disk). Documents,
lengths and context ids are the ones 0018 wrote.

SQLite keeps FTS5 (positions are in its index, so a phrase is matched there); its insert and update
triggers (0003) test a message for CJK characters, to copy it into the trigram table, only when its
text is not plain ASCII (byte length differs from character length): the GLOB over every character
was 9% of a bulk import's time into a 1M-message history. Same rows indexed, same tables.
"""
from alembic import context, op

revision = "0019_search_body_index"
down_revision = "0018_pg_ingest"
branch_labels = None
depends_on = None

INDEXED = "{r}.role IN ('user', 'assistant') AND trim(coalesce({r}.content, '')) <> ''"
DOC_LEN = "(SELECT coalesce(sum(array_length(positions, 1)), 0) FROM unnest({doc}))"
MAX_POSITIONS = 256  # positions tsvector keeps per lexeme
MAX_POSITION = 16383  # the largest position it stores

# As 0018 (MATERIALIZED CTEs: each message tokenised once; settings that suit a one-row insert and an
# import alike), plus each message's position count (`positions`), most positions of one lexeme
# (`widest`) and last position (`last`), from one unnest of the message's own vector: the document's
# count is their sum over its three messages unless a lexeme could hold more than MAX_POSITIONS or a
# shifted position pass MAX_POSITION, where `||` would drop positions and only the unnest is exact.
INDEX_INSERTED = f"""
CREATE OR REPLACE FUNCTION hstack_index_inserted_messages() RETURNS trigger LANGUAGE plpgsql
SET enable_bitmapscan = off SET jit = off SET work_mem = '64MB' AS $$
BEGIN
    INSERT INTO message_search (message_id, prev_id, prev2_id, doc_len, document, user_id)
    WITH spans AS (
        SELECT session_id, min(id) AS first_id, max(id) AS last_id,
               (SELECT s.user_id FROM sessions AS s WHERE s.id = inserted.session_id) AS user_id
        FROM inserted GROUP BY session_id),
    context AS MATERIALIZED (
        SELECT sp.first_id, sp.user_id, c.id, c.session_id, v.words, n.positions, n.widest, n.last
        FROM spans AS sp CROSS JOIN LATERAL (
            (SELECT b.id, b.session_id, b.content FROM messages AS b
             WHERE b.session_id = sp.session_id AND b.id < sp.first_id AND {INDEXED.format(r='b')}
             ORDER BY b.session_id DESC, b.id DESC LIMIT 2)
            UNION ALL
            SELECT b.id, b.session_id, b.content FROM messages AS b
            WHERE b.session_id = sp.session_id AND b.id BETWEEN sp.first_id AND sp.last_id
              AND {INDEXED.format(r='b')}) AS c
        CROSS JOIN LATERAL (SELECT to_tsvector('english', hstack_search_text(c.content)) AS words OFFSET 0) AS v
        CROSS JOIN LATERAL (SELECT coalesce(sum(array_length(u.positions, 1)), 0) AS positions,
                                   coalesce(max(array_length(u.positions, 1)), 0) AS widest,
                                   coalesce(max(u.positions[array_length(u.positions, 1)]), 0) AS last
                            FROM unnest(v.words) AS u) AS n),
    documents AS MATERIALIZED (
        SELECT first_id, user_id, id, lag(id, 1) OVER w AS prev_id, lag(id, 2) OVER w AS prev2_id,
               setweight(words, 'A') || coalesce(setweight(lag(words, 1) OVER w, 'B'), '')
                                     || coalesce(setweight(lag(words, 2) OVER w, 'C'), '') AS document,
               positions + coalesce(lag(positions, 1) OVER w, 0) + coalesce(lag(positions, 2) OVER w, 0) AS summed,
               widest + coalesce(lag(widest, 1) OVER w, 0) + coalesce(lag(widest, 2) OVER w, 0) <= {MAX_POSITIONS}
               AND last + coalesce(lag(last, 1) OVER w, 0) + coalesce(lag(last, 2) OVER w, 0) < {MAX_POSITION}
               AS exact
        FROM context WINDOW w AS (PARTITION BY session_id ORDER BY id))
    SELECT id, prev_id, prev2_id, CASE WHEN exact THEN summed ELSE {DOC_LEN.format(doc='document')} END,
           document, user_id
    FROM documents WHERE id >= first_id
    -- a message another transaction stored between two new ones is indexed already: left as it is
    ON CONFLICT (message_id) DO NOTHING;
    RETURN NULL;
END $$
"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_triggers(ascii_first=True)
        return
    op.execute("CREATE INDEX ix_message_search_body ON message_search USING gin (ts_filter(document, '{a}'))")
    op.execute("ANALYZE message_search")  # the planner's estimates of the new expression (see search_postgres)
    op.execute(INDEX_INSERTED)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_triggers(ascii_first=False)
        return
    op.execute("DROP INDEX IF EXISTS ix_message_search_body")
    previous = context.script.get_revision(down_revision).module  # 0018's function, as it made it
    op.execute(previous.INDEX_INSERTED.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1))


def _sqlite_triggers(ascii_first: bool) -> None:
    """0003's insert and update triggers, the CJK test skipped for plain ASCII text when `ascii_first`."""
    index = context.script.get_revision("0003").module._sqlite_index("new")
    if ascii_first:
        # A NUL or any non-ASCII character makes the two lengths differ; plain ASCII holds no CJK.
        index = index.replace("AND new.content GLOB",
                              "AND length(CAST(new.content AS BLOB)) <> length(new.content) AND new.content GLOB")
    unindex = "DELETE FROM messages_fts WHERE rowid = old.id; DELETE FROM messages_cjk WHERE rowid = old.id;"
    op.execute("DROP TRIGGER messages_search_insert")
    op.execute("DROP TRIGGER messages_search_update")
    op.execute(f"CREATE TRIGGER messages_search_insert AFTER INSERT ON messages BEGIN {index} END")
    op.execute("CREATE TRIGGER messages_search_update AFTER UPDATE OF content, role, session_id ON messages "
               f"BEGIN {unindex} {index} END")
