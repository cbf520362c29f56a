"""File stores: what the stack keeps on disk under DATA_DIR rather than in the database.

memory (MEMORY.md and USER.md: entries, the lock, atomic writes, drift backups), skills (skill folders,
safe paths, one lock per skill), skill_format (the agentskills.io format, pure checks), backups (the
curator's compressed copies of a skills folder) and atomic (whole-file writes a reader never sees torn).
Apart from shared/stores/ because none of them opens a database transaction: the stores that pair a file
with a row (stores.memory, stores.skills, stores.skill_writes) call into these under their own rules.
"""
