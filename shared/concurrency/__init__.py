"""Threads and locks: daemon_threads (idle threads kept for reuse) and writer_lock (one SQLite writer at a
time across every process on the database file, taken in turns)."""
