"""message search: FTS5 (SQLite) or tsvector + GIN (Postgres), kept in sync by triggers

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 10:30:00

Also `message_vectors`, the embeddings hybrid search stores (SEARCH_HYBRID; empty otherwise).

Only user and assistant messages with text are indexed (tool results are bulky, noisy and stay
readable through the transcript). Each indexed message also carries the text of the two indexed
messages before it in its session (`prev`, `prev2`), so an answer is found by the words of the
question it answers. Triggers keep the index in the same transaction as every insert, update and
delete, whichever code path writes the message. The objects are backend-specific and not in the
models; `shared.models.search.include_name` keeps autogenerate from dropping them.
"""
import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# Hiragana, Katakana, CJK Extension A, CJK Unified Ideographs, Hangul syllables, CJK compatibility.
CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
INDEXED = "{r}.role IN ('user', 'assistant') AND trim(coalesce({r}.content, '')) <> ''"


def upgrade() -> None:
    op.create_table(
        "message_vectors",
        sa.Column("message_id", sa.Integer(), nullable=False),
        sa.Column("model", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["message_id"], ["messages.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("message_id"),
    )
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_upgrade()
    else:
        _postgres_upgrade()


def downgrade() -> None:
    op.drop_table("message_vectors")
    if op.get_bind().dialect.name == "sqlite":
        for trigger in ("messages_search_insert", "messages_search_update", "messages_search_delete"):
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        op.execute("DROP TABLE IF EXISTS messages_cjk")
        op.execute("DROP TABLE IF EXISTS messages_fts")
    else:
        op.execute("DROP TRIGGER IF EXISTS messages_search_index ON messages")
        op.execute("DROP TABLE IF EXISTS message_search")
        for fn in ("hstack_index_message()", "hstack_search_document(text, text, text)", "hstack_search_text(text)"):
            op.execute(f"DROP FUNCTION IF EXISTS {fn}")


def _sqlite_index(row: str) -> str:
    """Statements indexing message `row` (new) with the two indexed messages before it."""
    return f"""
    INSERT INTO messages_fts (rowid, body, prev, prev2, prev_id, prev2_id)
    WITH before AS MATERIALIZED (
        SELECT id, content FROM messages AS b
        WHERE b.session_id = {row}.session_id AND b.id < {row}.id AND {INDEXED.format(r='b')}
        ORDER BY b.id DESC LIMIT 2)
    SELECT {row}.id, {row}.content,
        (SELECT content FROM before ORDER BY id DESC LIMIT 1),
        (SELECT content FROM before ORDER BY id DESC LIMIT 1 OFFSET 1),
        (SELECT id FROM before ORDER BY id DESC LIMIT 1),
        (SELECT id FROM before ORDER BY id DESC LIMIT 1 OFFSET 1)
    WHERE {INDEXED.format(r=row)};
    INSERT INTO messages_cjk (rowid, body) SELECT {row}.id, {row}.content
    WHERE {INDEXED.format(r=row)} AND {row}.content GLOB '*[{CJK}]*';
    """


def _sqlite_upgrade() -> None:
    op.execute(
        "CREATE VIRTUAL TABLE messages_fts USING fts5("
        "body, prev, prev2, prev_id UNINDEXED, prev2_id UNINDEXED, "
        "tokenize = 'porter unicode61 remove_diacritics 2')"
    )
    # CJK has no spaces between words: a trigram index finds any substring of three characters or more.
    op.execute("CREATE VIRTUAL TABLE messages_cjk USING fts5(body, tokenize = 'trigram')")
    unindex = "DELETE FROM messages_fts WHERE rowid = old.id; DELETE FROM messages_cjk WHERE rowid = old.id;"
    op.execute(f"CREATE TRIGGER messages_search_insert AFTER INSERT ON messages BEGIN {_sqlite_index('new')} END")
    op.execute(
        "CREATE TRIGGER messages_search_update AFTER UPDATE OF content, role, session_id ON messages "
        f"BEGIN {unindex} {_sqlite_index('new')} END"
    )
    op.execute(f"CREATE TRIGGER messages_search_delete AFTER DELETE ON messages BEGIN {unindex} END")
    op.execute(f"""
        INSERT INTO messages_fts (rowid, body, prev, prev2, prev_id, prev2_id)
        SELECT id, content, lag(content, 1) OVER w, lag(content, 2) OVER w, lag(id, 1) OVER w, lag(id, 2) OVER w
        FROM messages AS m WHERE {INDEXED.format(r='m')}
        WINDOW w AS (PARTITION BY session_id ORDER BY id)
    """)
    op.execute(f"""
        INSERT INTO messages_cjk (rowid, body) SELECT id, content FROM messages AS m
        WHERE {INDEXED.format(r='m')} AND m.content GLOB '*[{CJK}]*'
    """)


def _postgres_upgrade() -> None:
    # Each CJK character becomes its own token, so a run of them is found as a phrase of characters.
    op.execute(f"""
        CREATE FUNCTION hstack_search_text(text) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        AS $$ SELECT regexp_replace(coalesce($1, ''), '([{CJK}])', ' \\1 ', 'g') $$
    """)
    op.execute("""
        CREATE FUNCTION hstack_search_document(body text, prev text, prev2 text) RETURNS tsvector
        LANGUAGE sql IMMUTABLE PARALLEL SAFE
        AS $$ SELECT setweight(to_tsvector('english', hstack_search_text(body)), 'A')
                  || setweight(to_tsvector('english', hstack_search_text(prev)), 'B')
                  || setweight(to_tsvector('english', hstack_search_text(prev2)), 'C') $$
    """)
    op.execute("""
        CREATE TABLE message_search (
            message_id integer PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
            prev_id integer,
            prev2_id integer,
            doc_len integer NOT NULL,
            document tsvector NOT NULL
        )
    """)
    op.execute("CREATE INDEX ix_message_search_document ON message_search USING gin (document)")
    op.execute(f"""
        CREATE FUNCTION hstack_index_message() RETURNS trigger LANGUAGE plpgsql AS $$
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
            INSERT INTO message_search (message_id, prev_id, prev2_id, doc_len, document)
            VALUES (NEW.id, ids[1], ids[2],
                    (SELECT coalesce(sum(array_length(positions, 1)), 0) FROM unnest(doc)), doc);
            RETURN NULL;
        END $$
    """)
    op.execute(
        "CREATE TRIGGER messages_search_index AFTER INSERT OR UPDATE OF content, role, session_id ON messages "
        "FOR EACH ROW EXECUTE FUNCTION hstack_index_message()"
    )
    op.execute(f"""
        INSERT INTO message_search (message_id, prev_id, prev2_id, doc_len, document)
        SELECT id, prev_id, prev2_id,
               (SELECT coalesce(sum(array_length(positions, 1)), 0) FROM unnest(doc)), doc
        FROM (SELECT id, lag(id, 1) OVER w AS prev_id, lag(id, 2) OVER w AS prev2_id,
                     hstack_search_document(content, lag(content, 1) OVER w, lag(content, 2) OVER w) AS doc
              FROM messages AS m WHERE {INDEXED.format(r='m')}
              WINDOW w AS (PARTITION BY session_id ORDER BY id)) AS indexed
    """)
