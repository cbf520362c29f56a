"""The search engine over a user's stored messages: `engine.search_messages` is its one entry point.

query (parsing), dates, words and lexemes (terms), scope, budget and common (planning what one search may
cost), sqlite (FTS5) and postgres (tsvector) backends, timeline (date questions), embeddings (hybrid search
from the provider's /v1/embeddings) and vectors (from the local model), and views (scrolling and browsing
sessions). It reads; what it stores — the full-text index, kept in the messages' own transaction, and the
embeddings (stores.message_embeddings, stores.message_vectors) — is written by shared/stores/.
"""
