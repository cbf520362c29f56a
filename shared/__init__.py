"""One importable package every service uses; it never imports services/.

At the root only what everything reads: config (one Settings), errors (one error tree), db (the engine),
clock, ids, migrate and backoff. The rest lives in a package named for what it serves: models/, stores/
(database stores, the only code that commits), files/ (file stores), search/, queue/, messaging/, ops/,
http/, concurrency/, llm/, providers/, security/, textmatch/, curation/ and migrations/.
"""
