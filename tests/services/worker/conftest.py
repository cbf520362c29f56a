"""Fixtures for running the agent loop in-process against the scripted model."""

from __future__ import annotations

import shutil
import uuid

import pytest

from services.worker.runtime import Runtime
from tests.services.worker.terminal_turns import closed_data_dir
from tests.support.factories import make_session


@pytest.fixture
def make_runtime(settings):
    """Build runtimes with a settings copy (`**overrides`), own tools and worker id; stops their lease keepers."""
    built: list[Runtime] = []

    def make(*, tools=None, worker_id: str | None = None, **overrides) -> Runtime:
        custom = settings.model_copy(update=overrides) if overrides else settings
        runtime = Runtime.build(custom, tools=tools, worker_id=worker_id or f"worker@test:{uuid.uuid4().hex[:6]}")
        built.append(runtime)
        return runtime

    yield make
    for runtime in built:
        runtime.leases.stop()


@pytest.fixture
def session(db, user):
    return make_session(db, user.id)


@pytest.fixture
def data():
    """A DATA_DIR under a 0700 folder, as on a root install (see terminal_turns.closed_data_dir)."""
    path = closed_data_dir()
    yield path
    shutil.rmtree(path.parent, ignore_errors=True)


@pytest.fixture
def workspace():
    """DATA_DIR/users/alice/workspace, in a DATA_DIR under a 0700 folder as on a root install."""
    path = closed_data_dir() / "users" / "alice" / "workspace"
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path.parents[3], ignore_errors=True)
