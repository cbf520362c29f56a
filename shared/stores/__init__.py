"""Database stores: the only code that commits. One module per concept (sessions, turns, approvals,
reviews, skills, memory, outbox, …); each opens its transactions with `db.read()` / `db.write()`.
File stores are in shared/files/, the search engine in shared/search/."""
