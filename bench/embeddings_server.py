"""A local embeddings provider for the bench: the local model (all-MiniLM-L6-v2) behind OpenAI's
`POST /v1/embeddings`, on loopback, in its own process, as Ollama or vLLM would serve one.

    python -m bench.embeddings_server [--port 8765]      # needs the hybrid extra (requirements-hybrid.txt)

`serving()` starts it as a child process and waits until it answers; the LoCoMo bench points
EMBEDDINGS_BASE_URL at it so hybrid search takes the provider path (shared/llm/embeddings.py) end to end.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

import httpx

from tests.support.waiting import wait_until

MODEL = "all-MiniLM-L6-v2"
START_TIMEOUT = 120.0  # seconds: loading torch and the model on a busy 2-core machine


def serve(port: int) -> None:
    """Answer /v1/embeddings with the local model until killed."""
    from shared.search.vectors import embed

    embed(["warm up"])  # load the model before the first request, not during it

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_args) -> None:
            pass

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/embeddings":
                return self._reply(404, {"error": {"message": "not found"}})
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                vectors = embed([str(t) for t in texts])
            except (ValueError, KeyError, TypeError) as exc:
                return self._reply(400, {"error": {"message": f"bad request: {exc}"}})
            data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
            self._reply(200, {"object": "list", "model": MODEL, "data": data})

        def _reply(self, status: int, body: dict) -> None:
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


@contextmanager
def serving(port: int) -> Iterator[str]:
    """Run the server as a child process for the block; yields its base URL (…/v1)."""
    child = subprocess.Popen([sys.executable, "-m", "bench.embeddings_server", "--port", str(port)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"

    def answers() -> bool:
        if child.poll() is not None:
            raise RuntimeError(f"the embeddings server exited with {child.returncode}")
        try:
            return httpx.post(base + "/embeddings", json={"model": MODEL, "input": ["ready?"]}, timeout=5).is_success
        except httpx.HTTPError:
            return False

    try:
        wait_until(answers, START_TIMEOUT, interval=0.5, what="the embeddings server to answer")
        yield base
    finally:
        child.terminate()
        child.wait(timeout=10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    serve(parser.parse_args(argv).port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
