"""A fake OpenAI-compatible `/audio/transcriptions` server over real HTTP, on loopback, started by a test."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class FakeSpeech:
    """Answers every transcription with `text` (or `status` when it is not 200); records what it was sent."""

    text: str = "buy oat milk tomorrow"
    status: int = 200
    received: list[dict] = field(default_factory=list)

    def start(self) -> "FakeSpeech":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                fake.received.append({"path": self.path, "headers": dict(self.headers), "body": body})
                payload = json.dumps({"text": fake.text} if fake.status == 200 else {"error": "no"}).encode()
                self.send_response(fake.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
