"""A scripted embeddings provider: OpenAI's `POST /v1/embeddings` over real HTTP, deterministic vectors.

A text's vector counts its words' *concepts*: words listed in one SYNONYMS group share a dimension (so
"puppy" is close to "dog" and "wedding" to "married"), any other word hashes to a dimension of its own.
So similarity is meaning as these tests define it, and a test can tell an embedding-ranked answer from a
keyword one. It records every request, can fail the next calls with a status, answer garbage, or answer
rows out of order (as a provider may: each row carries its `index`).
"""

from __future__ import annotations

import json
import re
import threading
import zlib
from dataclasses import dataclass
from http.server import ThreadingHTTPServer

from tests.support import loopback
from tests.support.env import free_port

WIDTH = 64
SYNONYMS = (
    {"dog", "dogs", "puppy", "puppies", "pup", "pet", "pets", "hound"},
    {"married", "marry", "wedding", "husband", "wife", "spouse"},
    {"laptop", "computer", "notebook", "pc"},
    {"sunny", "weather", "rain", "rainy", "forecast"},
)
_CONCEPT = {word: index for index, group in enumerate(SYNONYMS) for word in group}


def vector(text: str, width: int = WIDTH) -> list[float]:
    """Concept counts of the text's words (not normalised: the client must scale it itself)."""
    out = [0.0] * width
    for word in re.findall(r"[a-z]+", text.lower()):
        slot = _CONCEPT.get(word)
        if slot is None:
            slot = len(SYNONYMS) + zlib.crc32(word.encode()) % (width - len(SYNONYMS))
        out[slot] += 3.0 if word in _CONCEPT else 1.0
    if not any(out):
        out[-1] = 1.0
    return out


@dataclass
class Request:
    headers: dict
    body: dict


class FakeEmbeddings:
    def __init__(self) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.requests: list[Request] = []
        self.failures: list[tuple[int, dict]] = []  # (status, headers) of the next answers
        self.garbage: list[object] = []  # bodies to answer next instead of vectors
        self.reverse = False
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None

    def start(self) -> "FakeEmbeddings":
        fake = self

        class Handler(loopback.QuietHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, headers, body = fake._answer(self.path, dict(self.headers.items()), raw)
                self.answer(status, json.dumps(body).encode(), "application/json", headers)

        self.server = loopback.serve(Handler, self.port)
        return self

    def stop(self) -> None:
        if self.server is not None:
            loopback.stop(self.server)

    def fail_next(self, status: int, times: int = 1, headers: dict | None = None) -> None:
        with self.lock:
            self.failures.extend([(status, headers or {})] * times)

    def answer_next(self, body: object) -> None:
        with self.lock:
            self.garbage.append(body)

    def inputs(self) -> list[str]:
        """Every text embedded so far, in order."""
        with self.lock:
            return [text for r in self.requests for text in r.body.get("input", [])]

    def _answer(self, path: str, headers: dict, raw: bytes) -> tuple[int, dict, object]:
        if path != "/v1/embeddings":
            return 404, {}, {"error": {"message": f"no route {path}"}}
        body = json.loads(raw or b"{}")
        with self.lock:
            self.requests.append(Request(headers, body))
            if self.failures:
                status, extra = self.failures.pop(0)
                return status, extra, {"error": {"message": f"scripted failure {status}"}}
            if self.garbage:
                return 200, {}, self.garbage.pop(0)
        texts = body["input"] if isinstance(body.get("input"), list) else [body.get("input", "")]
        width = int(body.get("dimensions") or WIDTH)
        rows = [{"object": "embedding", "index": i, "embedding": vector(t, width)} for i, t in enumerate(texts)]
        if self.reverse:
            rows.reverse()
        return 200, {}, {"object": "list", "model": body.get("model"), "data": rows,
                         "usage": {"prompt_tokens": 0, "total_tokens": 0}}
