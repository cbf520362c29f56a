"""A real Celery worker (thread pool) running inside the test process against the test Redis."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from celery.contrib.testing.worker import start_worker

from shared.queue.app import get_celery


@contextmanager
def inprocess_worker(queues: tuple[str, ...] = ("turns",), concurrency: int = 50) -> Iterator[object]:
    """Run a worker consuming `queues` for the duration of the block; it stops cleanly afterwards."""
    import services.worker.tasks  # noqa: F401  (registers run_turn on the shared app)

    app = get_celery()
    with start_worker(app, pool="threads", concurrency=concurrency, queues=list(queues),
                      perform_ping_check=False, loglevel="WARNING", shutdown_timeout=30.0) as worker:
        yield worker
