"""A fake OpenAI-compatible `/audio/transcriptions` server over real HTTP, on loopback, started by a test."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from tests.support import loopback


@dataclass
class FakeSpeech:
    """Answers every transcription with `text` (or `status` when it is not 200); records what it was sent."""

    text: str = "buy oat milk tomorrow"
    status: int = 200
    received: list[dict] = field(default_factory=list)

    def start(self) -> "FakeSpeech":
        fake = self

        class Handler(loopback.QuietHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                fake.received.append({"path": self.path, "headers": dict(self.headers), "body": body})
                payload = json.dumps({"text": fake.text} if fake.status == 200 else {"error": "no"}).encode()
                self.answer(fake.status, payload, "application/json")

        self.server = loopback.serve(Handler)
        return self

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def stop(self) -> None:
        loopback.stop(self.server)
