"""A fake OpenAI-compatible `/audio/speech` server over real HTTP, on loopback, started by a test: it records each
request and answers with `reply` (status, body), by default a small OGG/Opus file."""

from __future__ import annotations

import json

from tests.support import loopback

OPUS = b"OggS\x00\x02" + b"\x00" * 22 + b"OpusHead" + b"\x01" * 200


class FakeTTS:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.reply: tuple[int, bytes] = (200, OPUS)
        fake = self

        class Handler(loopback.QuietHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                fake.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                status, data = fake.reply
                self.answer(status, data, "audio/ogg")

        self.server = loopback.serve(Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        loopback.stop(self.server)
