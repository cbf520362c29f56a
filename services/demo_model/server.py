"""The scripted model: a real HTTP server speaking the OpenAI chat-completions wire format
(and Anthropic Messages at /v1/messages).

`python -m services.demo_model` serves it as the offline demo model; tests script its answers
through `tests.fakes.model.FakeModel`, this same class.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

from services.demo_model.anthropic_wire import AnthropicWire
from services.demo_model.openai_wire import Wire, error_body
from services.demo_model.prefix_cache import PrefixCache
from services.demo_model.replies import (Reply, Responder, Scripted, fail, latest_user_images, latest_user_text,
                                         own_words, text, tool_call)

__all__ = ["ScriptedModel", "Recorded", "Reply", "text", "tool_call", "fail"]

WIRES = {"/v1/chat/completions": Wire, "/v1/messages": AnthropicWire}
DISCONNECTS = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, socket.timeout)


@dataclass(frozen=True)
class Recorded:
    """One request the model received; `at` is time.monotonic() on arrival, `peer` the client's port (its connection)."""

    path: str
    headers: dict[str, str]
    body: dict
    at: float
    peer: int = 0


def echo(body: dict) -> Reply:
    """The answer when nothing is scripted (naming the images it was sent, if any)."""
    images = latest_user_images(body)
    seen = f" [saw {len(images)} image(s): {', '.join(images)}]" if images else ""
    return text(f"You said: {latest_user_text(body)}{seen}")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # stopping never waits for a client's keep-alive connection to close
    request_queue_size = 1024
    fake: "ScriptedModel"

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], DISCONNECTS):
            super().handle_error(request, client_address)


class ScriptedModel:
    """Scripted OpenAI-compatible model on 127.0.0.1, served from a daemon thread."""

    def __init__(self, port: int | None = None, host: str = "127.0.0.1", default: Responder = echo) -> None:
        self.latency = 0.0
        self.models = ["scripted"]
        self._default = default
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._script: deque[Scripted] = deque()
        self._rules: dict[str, deque[Scripted]] = {}
        self._requests: list[Recorded] = []
        self._answered: list[Recorded] = []
        self.prompt_cache = PrefixCache()
        self.in_flight = 0
        self.max_in_flight = 0
        self._stopping = threading.Event()
        self._server = _Server((host, port or 0), _Handler)
        self._server.fake = self
        self._thread: threading.Thread | None = None
        self.host, self.port = self._server.server_address[:2]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> "ScriptedModel":
        """Serve in a daemon thread."""
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="scripted-model",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; requests still waiting on latency give up."""
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "ScriptedModel":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def script(self, *replies: Scripted) -> None:
        """Queue replies for any request, first in first out."""
        with self._lock:
            self._script.extend(replies)

    def on(self, marker: str, *replies: Scripted) -> None:
        """Queue replies for requests whose latest user message contains `marker`."""
        with self._lock:
            self._rules.setdefault(marker, deque()).extend(replies)

    def reset(self) -> None:
        """Forget scripts, recorded requests, the prompt cache and latency."""
        with self._lock:
            self._script.clear()
            self._rules.clear()
            self._requests.clear()
            self._answered.clear()
            self.prompt_cache.clear()
            self.latency = 0.0
            self.max_in_flight = self.in_flight

    @property
    def requests(self) -> list[Recorded]:
        """A snapshot of every request received since the last reset."""
        with self._lock:
            return list(self._requests)

    def requests_since(self, n: int) -> list[Recorded]:
        """The requests received after the first `n` since the last reset."""
        with self._lock:
            return self._requests[n:]

    def request_count(self) -> int:
        with self._lock:
            return len(self._requests)

    @property
    def answered(self) -> list[Recorded]:
        """The requests whose whole answer was written to the client (not cut off by a hang-up)."""
        with self._lock:
            return list(self._answered)

    def record_answered(self, path: str, body: dict) -> None:
        with self._lock:
            self._answered.append(Recorded(path, {}, body, time.monotonic()))

    def wait_for_requests(self, n: int, timeout: float = 10) -> list[Recorded]:
        """Block until at least n requests were recorded; TimeoutError otherwise."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: len(self._requests) >= n, timeout):
                raise TimeoutError(f"the scripted model got {len(self._requests)} requests, expected {n}")
            return list(self._requests)

    def record(self, path: str, headers: dict[str, str], body: dict, peer: int = 0) -> None:
        with self._arrived:
            self._requests.append(Recorded(path, headers, body, time.monotonic(), peer))
            self._arrived.notify_all()

    def next_reply(self, body: dict) -> Reply:
        """The reply for this request: a matching `on` rule first, then the script, then the default."""
        latest = latest_user_text(body)
        with self._lock:
            chosen = self._take_rule(latest)
            if chosen is None and self._script:
                chosen = self._script.popleft()
            delay = self.latency
        source = self._default if chosen is None else chosen
        reply = source if isinstance(source, Reply) else source(body)
        return replace(reply, latency=delay) if reply.latency is None else reply

    def _take_rule(self, latest: str) -> Scripted | None:
        """The next reply of the rule whose marker appears first in the latest user message's own words (caller
        holds the lock): a recalled `<memory-context>` block quotes other sessions, and so their markers, so it is
        left out; the first by position wins, not the first added."""
        latest = own_words(latest)
        found = [(latest.find(marker), n, q) for n, (marker, q) in enumerate(self._rules.items()) if q and marker in latest]
        return min(found, key=lambda f: f[:2])[2].popleft() if found else None

    def answering(self, delta: int) -> None:
        """Count requests being answered, keeping the highest number seen at once."""
        with self._lock:
            self.in_flight += delta
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def pause(self, seconds: float) -> None:
        """Wait, but not past stop()."""
        if seconds > 0:
            self._stopping.wait(seconds)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as real providers' servers do: each streamed chunk goes out as it is written
    server: _Server

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the stdlib's signature
        """Stay quiet: tests read requests from ScriptedModel.requests."""

    @property
    def fake(self) -> ScriptedModel:
        return self.server.fake

    def _route(self) -> str:
        return self.path.split("?", 1)[0].rstrip("/")

    def _headers(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def do_GET(self) -> None:
        self.fake.record(self._route(), self._headers(), {})
        if self._route() == "/v1/models":
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "hermes-stack"} for m in self.fake.models]
            self._send_json(200, {"object": "list", "data": data})
        else:
            self._send_json(404, error_body(404, f"no route {self._route()}"))

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        route = self._route()
        self.fake.record(route, self._headers(), body if isinstance(body, dict) else {}, self.client_address[1])
        if not isinstance(body, dict):
            self._send_json(400, error_body(400, "the request body is not a JSON object"))
        elif route in WIRES:
            self.fake.answering(+1)
            try:
                self._answer(body, WIRES[route])
            finally:
                self.fake.answering(-1)
        else:
            self._send_json(404, error_body(404, f"no route {route}"))

    def _answer(self, body: dict, wire_class) -> None:
        reply = self.fake.next_reply(body)
        self.fake.pause(reply.latency or 0)
        if self.fake.stopping:
            self.close_connection = True  # a stopped model answers nothing more
            return
        answering = not reply.is_error and reply.drop_after != 0
        measure = (lambda: self.fake.prompt_cache.measure(body)) if answering else None
        wire = wire_class(body, measure)
        try:
            if reply.drop_after == 0 or (reply.drop_after is not None and not body.get("stream")):
                self.close_connection = True
                return
            if reply.is_error:
                self._send_error(reply, wire)
                return
            if body.get("stream"):
                if not self._stream(reply, wire.frames(reply)):
                    return
            else:
                self._send_json(200, wire.completion(reply), reply.headers)
        except DISCONNECTS:
            self.close_connection = True
            return
        finally:
            if answering:
                _ = wire.prompt  # measured when it was first needed, or now: every answered request is remembered
        self.fake.record_answered(self._route(), body)

    def _send_error(self, reply: Reply, wire) -> None:
        headers = dict(reply.headers)
        if reply.retry_after is not None:
            value = reply.retry_after
            whole = isinstance(value, (int, float)) and value == int(value)
            headers["Retry-After"] = str(int(value)) if whole else str(value)
        self._send_json(reply.status, wire.error_body(reply.status, reply.message), headers)

    def _send_json(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _stream(self, reply: Reply, frames: Iterator[bytes]) -> bool:
        """Server-sent events in chunked transfer encoding, like real providers; False when cut by `drop_after`."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        for index, frame in enumerate(frames):
            if index == reply.drop_after:
                self.close_connection = True
                return False
            if index and reply.chunk_delay:
                self.fake.pause(reply.chunk_delay)
            self._write_chunk(frame)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        return True
