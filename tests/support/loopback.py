"""Small HTTP servers on loopback for the fakes: a handler that writes no access log, served from a daemon thread."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing and answers in one call."""

    def log_message(self, *_args) -> None:
        pass

    def answer(self, status: int, body: bytes = b"", content_type: str | None = None,
               headers: dict[str, str] | None = None) -> None:
        """The whole response: status, Content-Type (when given), any other headers, Content-Length and body."""
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)


def serve(handler: type[BaseHTTPRequestHandler], port: int = 0) -> ThreadingHTTPServer:
    """`handler` served on 127.0.0.1:`port` (any free port when 0) until `stop`."""
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def stop(server: ThreadingHTTPServer) -> None:
    server.shutdown()
    server.server_close()
