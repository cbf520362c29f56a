"""The SDK test MCP server (tests/fakes/mcp_server.py) over streamable HTTP on a loopback port, restartable."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from tests.support.env import free_port
from tests.support.waiting import wait_until

SERVER = Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py"


class HttpServer:
    """Started by the test, killed by it (kill -9), started again on the same port."""

    def __init__(self, extra: int = 0) -> None:
        self.port = free_port()
        self.extra = extra
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> "HttpServer":
        self.proc = subprocess.Popen([sys.executable, str(SERVER), "http", str(self.port), "--extra", str(self.extra)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(self.listening, timeout=30, what="the MCP server to listen")
        return self

    def listening(self) -> bool:
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
            return True
        except OSError:
            return False

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
