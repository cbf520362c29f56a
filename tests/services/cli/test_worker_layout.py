"""`hstack run`'s turns worker: one process per core by default, WORKER_CONCURRENCY split across them."""

from __future__ import annotations

import pytest

from services.cli import stack
from services.cli.stack import services, worker_layout


def argv_value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


@pytest.mark.parametrize("cores, processes, concurrency, expected", [
    (2, 0, 200, (2, 100)), (1, 0, 200, (1, 200)), (4, 0, 200, (4, 50)), (3, 0, 200, (3, 67)),
    (2, 1, 200, (1, 200)), (2, 3, 10, (3, 4)), (8, 0, 4, (8, 1)),
])
def test_one_process_per_core_unless_worker_processes_says_otherwise(settings, monkeypatch, cores, processes,
                                                                      concurrency, expected):
    monkeypatch.setattr(stack, "cores", lambda: cores)
    custom = settings.model_copy(update={"worker_processes": processes, "worker_concurrency": concurrency})
    assert worker_layout(custom) == expected


def test_each_worker_process_is_its_own_celery_node_announcing_worker(settings, monkeypatch, tmp_path):
    monkeypatch.setattr(stack, "cores", lambda: 3)
    custom = settings.model_copy(update={"worker_processes": 0, "worker_concurrency": 200})
    workers = [s for s in services(custom, tmp_path) if "turns" in s.argv]
    assert [w.name for w in workers] == ["worker", "worker2", "worker3"]
    assert [argv_value(w.argv, "-n") for w in workers] == ["worker@%h", "worker2@%h", "worker3@%h"]
    assert {argv_value(w.argv, "--concurrency") for w in workers} == {"67"}
    assert {w.announces for w in workers} == {"worker"}
    others = [s.name for s in services(custom, tmp_path) if "turns" not in s.argv]
    assert others == ["api", "reviewer", "curator", "gateway"]


def test_worker_processes_refuses_nonsense(settings):
    from pydantic import ValidationError

    from shared.config import Settings

    for bad in ("-1", "65", "two"):
        with pytest.raises(ValidationError):
            Settings(WORKER_PROCESSES=bad)
