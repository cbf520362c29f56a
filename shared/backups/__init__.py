"""Whole-server backups: one tar archive of the database and DATA_DIR's files, with a manifest of checksums.

`archive.create_backup` takes one while the stack runs; `restore.restore_backup` checks every member
against the manifest before it writes anything, then moves the files in and migrates the database.
`exports` renders one conversation as JSON, Markdown or HTML; `user_export` packs one user's data.
"""
