"""A webhook callback receiver over real HTTP: records each POST (headers and raw body); can go down and up."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer

from tests.support import loopback
from tests.support.env import free_port


class CallbackServer:
    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self.received: list[tuple[dict, bytes]] = []
        self.server: ThreadingHTTPServer | None = None
        self.lock = threading.Lock()

    def start(self) -> "CallbackServer":
        fake = self

        class Handler(loopback.QuietHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with fake.lock:
                    fake.received.append(({k: v for k, v in self.headers.items()}, body))
                self.answer(200)

        self.server = loopback.serve(Handler, self.port)
        return self

    def stop(self) -> None:
        if self.server is not None:
            loopback.stop(self.server)
            self.server = None
