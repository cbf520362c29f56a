"""Celery without importing workers: app (the app and `enqueue`), names (tasks and their queues), payloads
(one model per task), wire (Celery's message), schedule (the beat), and turns (`send_turn`, the one place a
turn is put on the queue)."""
