"""The scripted model in a process of its own, as a real provider is: the bench's client never shares its GIL.

`ModelProcess` starts `services.demo_model`'s ScriptedModel in a child process and speaks to it over a socket pair; it
offers what the timing benches use of a ScriptedModel (`base_url`, `latency`, `requests`, `requests_since`,
`request_count`, `max_in_flight`, `reset`, start/stop as a context manager). Each request's `at` is the child's
`time.monotonic()`, the clock every process of the machine shares, so stage times line up with the client's.

The child answers as `bench.turns` needs: reviews as a real model would (`bench.review_model.reviewing`), anything
else echoed. Scripting replies per test stays with the in-process ScriptedModel.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from services.demo_model.server import Recorded

START_SECONDS = 60
ROOT = Path(__file__).resolve().parents[1]


class ModelProcess:
    """The scripted model served by a child process on 127.0.0.1."""

    def __init__(self, port: int | None = None) -> None:
        self._lock = threading.Lock()
        self._conn = None
        self._proc = None
        self.host, self.port = "127.0.0.1", port or 0

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> "ModelProcess":
        """Start the child (`python -m bench.model_process FD PORT`, not multiprocessing: a spawned child would run
        the bench's own module again to import it) and wait until it listens."""
        mine, theirs = socket.socketpair()
        self._proc = subprocess.Popen([sys.executable, "-m", "bench.model_process", str(theirs.fileno()),
                                       str(self.port)], pass_fds=[theirs.fileno()], cwd=ROOT)
        theirs.close()
        self._conn = Connection(mine.detach())
        if not self._conn.poll(START_SECONDS):
            self._proc.kill()
            raise RuntimeError("the scripted model's process did not start")
        self.host, self.port = self._conn.recv()
        return self

    def stop(self) -> None:
        if self._proc is None:
            return
        try:
            self._call("stop")
        except (EOFError, OSError):
            pass
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._conn.close()
        self._proc = None

    def __enter__(self) -> "ModelProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _call(self, op: str, *args: Any) -> Any:
        with self._lock:
            self._conn.send((op, args))
            return self._conn.recv()

    @property
    def latency(self) -> float:
        return self._call("get", "latency")

    @latency.setter
    def latency(self, seconds: float) -> None:
        self._call("set_latency", seconds)

    @property
    def max_in_flight(self) -> int:
        return self._call("get", "max_in_flight")

    @property
    def requests(self) -> list[Recorded]:
        return self.requests_since(0)

    def requests_since(self, n: int) -> list[Recorded]:
        return self._call("requests_since", n)

    def request_count(self) -> int:
        return self._call("request_count")

    def reset(self) -> None:
        self._call("reset")


def _serve(conn, port: int | None) -> None:
    """The child: serve the scripted model and answer the parent's calls until it says stop or goes away."""
    from bench.review_model import reviewing
    from services.demo_model.server import ScriptedModel, echo

    model = ScriptedModel(port=port, default=reviewing(echo)).start()
    conn.send((model.host, model.port))
    try:
        while True:
            try:
                op, args = conn.recv()
            except EOFError:
                return
            if op == "stop":
                conn.send(None)
                return
            conn.send(_answer(model, op, args))
    finally:
        model.stop()


def _answer(model, op: str, args: tuple) -> Any:
    if op == "get":
        return getattr(model, args[0])
    if op == "set_latency":
        model.latency = args[0]
        return None
    if op == "requests_since":
        return model.requests_since(args[0])
    if op == "request_count":
        return model.request_count()
    if op == "reset":
        return model.reset()
    raise ValueError(f"no such call: {op}")


if __name__ == "__main__":
    _serve(Connection(int(sys.argv[1])), int(sys.argv[2]) or None)
