"""The worker's features, one module each (memory, skills, providers, review, titles).

A feature module defines its prompt parts and per-turn hooks and fills no registry:
services/worker/registrations.py adds them to the process's hooks at start-up.
"""
