"""The sandbox identity a root worker's file tools take on: one thread's, for one call, always given back."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from shared.errors import HermesError
from services.worker.tools import files, identity
from services.worker.tools.registry import ToolContext

pytestmark = [pytest.mark.once,
              pytest.mark.skipif(os.geteuid() != 0, reason="only a root worker changes its filesystem uid")]


def test_only_the_calling_thread_acts_as_the_sandbox_uid(tmp_path):
    """Another thread of the worker keeps root's filesystem identity while a tool acts as the sandbox uid."""
    inside, release = threading.Event(), threading.Event()
    tmp_path.chmod(0o777)
    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)  # its parents are closed to uid 65534

    def create(name):
        os.close(os.open(name, os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=folder))

    def tool_thread():
        with identity.acting_as(65534):
            create("by-tool")
            inside.set()
            release.wait(10)

    worker = threading.Thread(target=tool_thread)
    worker.start()
    assert inside.wait(10)
    try:
        create("by-other")
        seen_elsewhere = identity.current()
    finally:
        release.set()
        worker.join(10)
        os.close(folder)

    assert seen_elsewhere == (0, 0)
    assert (tmp_path / "by-tool").stat().st_uid == 65534 and (tmp_path / "by-other").stat().st_uid == 0


def test_a_failing_tool_gives_the_pool_thread_back_as_root(settings, tmp_data_dir):
    """A refused call must not leave its pool thread acting as the sandbox uid for the next task."""
    ctx = ToolContext(user_id="usr_pool", session_id="s", turn_id="t",
                      settings=settings.model_copy(update={"data_dir": tmp_data_dir}))
    (ctx.workspace / "link").symlink_to("/etc")

    def refused_then_identity():
        with pytest.raises(HermesError):
            files.write_file(ctx, {"path": "link/hstack-probe", "content": "x"})
        return identity.current()

    with ThreadPoolExecutor(max_workers=1) as pool:
        assert pool.submit(refused_then_identity).result() == (0, 0)
    assert not os.path.exists("/etc/hstack-probe")


def test_a_thread_keeps_the_signal_that_stops_it_with_its_supervisor():
    """A service started by `make run` gets SIGTERM when its supervisor dies (PR_SET_PDEATHSIG, which the kernel
    clears on any change of the filesystem uid): a tool in that thread silently cancelled it."""
    import ctypes
    import signal

    libc = ctypes.CDLL(None, use_errno=True)
    seen = []

    def thread():
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG, as services/cli/children.py sets it
        with identity.acting_as(65534):
            pass
        seen.append(identity.death_signal())

    worker = threading.Thread(target=thread)
    worker.start()
    worker.join(10)

    assert seen == [signal.SIGTERM]
