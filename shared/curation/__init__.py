"""Skill curation: the curator's rules (pure) and one pass over a user's skills, used by the curator
service and the `hstack curator` commands alike."""
