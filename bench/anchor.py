"""Hermes Agent's turn overhead: hermes-agent's AIAgent, in-process, on the scripted model.

Run by `bench.turns` with the side virtualenv's python (`.venv-anchor/bin/python bench/anchor.py
BASE_URL N`), never imported by our code: it imports only Hermes Agent's package and the standard
library. It builds one AIAgent pointed at the scripted model (an instant model, answering text),
with HERMES_HOME in a fresh temp dir so nothing of a real installation is read or written, and
runs N turns of one conversation, each continuing the history of the one before, as Hermes Agent's
gateway does for one chat. It prints one JSON line: {"p50_ms", "p99_ms", "n", "warmup"}.

No network: the agent's only endpoint is the scripted model on 127.0.0.1, and the proxy variables
and provider keys are cleared so nothing is routed elsewhere. Tools stay Hermes Agent's default set
(its request bytes "with the default tools" are part of what we compare); the instant model never
calls one, and an audit of socket.connect/getaddrinfo during a run saw no other destination.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time

WARMUP = 5


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered)) - 1))
    return ordered[index]


def isolate(home: str) -> None:
    """Point Hermes Agent at an empty home and keep it off the network before its modules are imported."""
    os.environ["HERMES_HOME"] = home
    os.environ["HOME"] = home
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        os.environ.pop(name, None)
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"
    for name in list(os.environ):  # no provider key of the caller's may steer Hermes Agent elsewhere
        if name.endswith("_API_KEY") or name.startswith(("OPENROUTER", "ANTHROPIC", "OPENAI", "NOUS")):
            os.environ.pop(name, None)


def build_agent(base_url: str):
    from run_agent import AIAgent

    return AIAgent(base_url=base_url, api_key="sk-anchor-bench", provider="custom", model="scripted",
                   quiet_mode=True, skip_context_files=True, save_trajectories=False, max_iterations=90)


def run_turns(base_url: str, n: int) -> dict:
    agent = build_agent(base_url)
    history: list = []
    samples: list[float] = []
    for i in range(WARMUP + n):
        start = time.perf_counter()
        result = agent.run_conversation(f"anchor turn {i}", conversation_history=history)
        elapsed = (time.perf_counter() - start) * 1000
        if not result.get("final_response"):
            raise RuntimeError(f"Hermes Agent's turn {i} gave no answer: {result.get('error') or result}")
        history = result["messages"]
        if i >= WARMUP:
            samples.append(elapsed)
    return {"p50_ms": statistics.median(samples), "p99_ms": percentile(samples, 99), "n": n, "warmup": WARMUP}


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: anchor.py BASE_URL N", file=sys.stderr)
        return 2
    home = tempfile.mkdtemp(prefix="anchor-home-")
    try:
        isolate(home)
        result = run_turns(argv[1], int(argv[2]))
        print(json.dumps(result), flush=True)
    finally:
        logging.shutdown()  # Hermes Agent logs into HERMES_HOME: close its files before the folder goes
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
