"""Running Hermes Agent (hermes-agent 0.19.0) beside us in `bench.turns`: the same scripted model, the same run.

Hermes Agent lives in a side virtualenv (`.venv-anchor/`, never installed at bench time) and runs there as a
subprocess: `bench/anchor.py` (its agent in-process) or `bench/anchor_http.py` (its agent behind its own HTTP API
server); this side counts what the scripted model received from it.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ANCHOR_PYTHON = ROOT / ".venv-anchor" / "bin" / "python"
ANCHOR_VERSION = "0.19.0"
# aiohttp: its API server's, pinned as hermes-agent's "messaging" extra pins it (that extra also brings the chat
# platforms)
INSTALL = f"python3 -m venv .venv-anchor && .venv-anchor/bin/pip install hermes-agent=={ANCHOR_VERSION} aiohttp==3.14.1"
CHAT_PATH = "/v1/chat/completions"
TIMEOUT_SECONDS = 900
TURN_MARKER = "anchor turn "  # the user messages of bench/anchor.py and bench/anchor_http.py


@dataclass(frozen=True)
class AnchorRun:
    p50_ms: float
    p99_ms: float
    n: int
    first_call_bytes: int  # the first model request of its conversation
    median_call_bytes: int  # over the requests of its turns (its background reviews' requests left out)
    calls: int


def installed() -> bool:
    return ANCHOR_PYTHON.is_file()


def anchor_version() -> str | None:
    """The hermes-agent version in the side virtualenv, or None when it is not there."""
    if not installed():
        return None
    probe = subprocess.run([str(ANCHOR_PYTHON), "-c", "import importlib.metadata as m; print(m.version('hermes-agent'))"],
                           capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        return None
    return probe.stdout.strip() or None


def request_bytes(requests, marker: str = "") -> list[int]:
    """Bytes on the wire (Content-Length as sent) of each chat-completions request whose last message starts
    with `marker`, in arrival order."""
    return [int(r.headers.get("content-length") or 0) for r in requests
            if r.path == CHAT_PATH and _last_text(r.body).startswith(marker)]


def _last_text(body: dict) -> str:
    messages = body.get("messages") or [{}]
    content = messages[-1].get("content")
    return content if isinstance(content, str) else ""


def run_anchor(model, turns: int) -> AnchorRun:
    """Run Hermes Agent in-process for `turns` turns against the scripted model; RuntimeError with its output on
    failure."""
    return _run_script("anchor.py", model, turns)


def run_anchor_http(model, turns: int) -> AnchorRun:
    """Run `turns` turns through Hermes Agent's own HTTP API server against the scripted model; RuntimeError with
    its output on failure."""
    return _run_script("anchor_http.py", model, turns)


def _run_script(script: str, model, turns: int) -> AnchorRun:
    model.reset()
    proc = subprocess.run([str(ANCHOR_PYTHON), str(ROOT / "bench" / script), model.base_url, str(turns)],
                          capture_output=True, text=True, timeout=TIMEOUT_SECONDS, cwd=str(ROOT))
    found = [r for r in map(_result_line, proc.stdout.splitlines()) if r is not None]
    if proc.returncode != 0 or not found:
        raise RuntimeError(f"Hermes Agent ({script}) failed (exit {proc.returncode}):\n"
                           f"{(proc.stdout + proc.stderr)[-3000:]}")
    result = found[-1]
    sizes = request_bytes(model.requests, TURN_MARKER)
    return AnchorRun(p50_ms=result["p50_ms"], p99_ms=result["p99_ms"], n=result["n"],
                     first_call_bytes=sizes[0] if sizes else 0,
                     median_call_bytes=int(statistics.median(sizes)) if sizes else 0, calls=len(sizes))


def _result_line(line: str) -> dict | None:
    """bench/anchor.py's result line, or None: Hermes Agent's own prints (a review's tool output) may start with `{`
    too, now that the scripted model makes its reviews write."""
    try:
        parsed = json.loads(line) if line.startswith("{") else None
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) and "p50_ms" in parsed else None


def skip_line() -> str:
    return (f"anchor: skipped, hermes-agent {ANCHOR_VERSION} is not installed in .venv-anchor/ "
            f"(install it with: {INSTALL}; the bench never installs it)")


if __name__ == "__main__":
    print(anchor_version() or skip_line())
    sys.exit(0)
