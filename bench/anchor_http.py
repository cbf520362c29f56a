"""Hermes Agent's turn overhead through its own HTTP API server, on the scripted model.

Run by `bench.turns` with the side virtualenv's python (`.venv-anchor/bin/python bench/anchor_http.py
BASE_URL N`), never imported by our code: it imports only Hermes Agent's package (its API server needs
aiohttp, which hermes-agent's "messaging" extra pins), httpx (a hermes-agent dependency, and our bench's
own client) and the standard library, plus bench/anchor.py beside it for the same isolation.

Where bench/anchor.py calls AIAgent in-process, this measures what a client of Hermes Agent's HTTP API
meets, as our bench measures a client of ours: a child process serves Hermes Agent's API server
(`gateway.platforms.api_server.APIServerAdapter`, the gateway's `api_server` platform, started on its own:
no chat platform, no GatewayRunner) on a free 127.0.0.1 port, with HERMES_HOME in a fresh temp dir whose
config.yaml names the scripted model as provider "custom". This process creates one stored session
(`POST /api/sessions`) and sends each turn as `POST /api/sessions/{id}/chat/stream`, reading the SSE stream
to its end; a turn's time runs from sending the request to its `run.completed` event. Per turn the server
loads the session's history from its SQLite state.db, builds an AIAgent, runs it in a thread and writes the
turn's messages back. It prints one JSON line: {"p50_ms", "p99_ms", "n", "warmup", "route"}.

Two things a real model server settles once and the scripted model never does are settled for it, so that they
are not paid at every per-request agent: its context length (`write_config`) and what kind of local server it is
(`remember_server_type`).

No network: the server's only upstream is the scripted model (the child refuses to serve if Hermes Agent
resolves any other base URL), proxies and provider keys are cleared as for the in-process run, and an
audit of socket.connect/getaddrinfo in both processes during a run saw only 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from anchor import WARMUP, isolate, percentile  # bench/anchor.py, beside this script

del sys.path[0]  # this script's folder, bench/: its gateway.py would shadow Hermes Agent's `gateway` package

ROUTE = "POST /api/sessions/{id}/chat/stream"
SERVER_LOG = "api-server.log"
STOP_SECONDS = 30


def write_config(home: str, base_url: str) -> None:
    """The scripted model as Hermes Agent's provider "custom", the way `hermes model` would store it.

    Its context length is stated (Hermes Agent's own fallback, which the in-process run ends on): the
    scripted model's /v1/models names no context length, so each per-request AIAgent would probe for one
    again, where a real server's answer is cached on disk."""
    config = {"model": {"provider": "custom", "base_url": base_url, "default": "scripted",
                        "api_key": "sk-anchor-bench", "context_length": 256000}}
    with open(os.path.join(home, "config.yaml"), "w", encoding="utf-8") as f:
        json.dump(config, f)  # JSON is YAML


# The server: a child process, so the client's work does not share the server's GIL (as ours does not).

def remember_server_type() -> None:
    """Let Hermes Agent remember that the scripted model is no known local server, as it remembers a known one.

    The API server builds an AIAgent per request, and each build probes a loopback model endpoint for Ollama
    (five GETs: LM Studio, Ollama, llama.cpp twice, vLLM), caching only a positive answer. A real local
    server is recognised once (and a remote provider is never probed); the scripted model, none of them, would
    be probed again at every turn. Its answer is remembered for the run instead.
    """
    import functools

    from agent import model_metadata

    model_metadata.detect_local_server_type = functools.lru_cache(model_metadata.detect_local_server_type)


async def serve(base_url: str) -> int:
    """Serve Hermes Agent's API server until stdin closes; print {"port": P} once listening."""
    from gateway.config import PlatformConfig
    from gateway.platforms.api_server import APIServerAdapter
    from gateway.run import _resolve_runtime_agent_kwargs

    resolved = _resolve_runtime_agent_kwargs()
    if resolved.get("base_url") != base_url or resolved.get("provider") != "custom":
        print(f"refusing to serve: Hermes Agent resolved {resolved.get('provider')} at {resolved.get('base_url')}",
              file=sys.stderr)
        return 1
    remember_server_type()
    adapter = APIServerAdapter(PlatformConfig(enabled=True, extra={"host": "127.0.0.1", "port": 0}))
    if not await adapter.connect():
        print("Hermes Agent's API server did not start", file=sys.stderr)
        return 1
    try:
        port = adapter._runner.addresses[0][1]  # bound to port 0: ask the runner which one it got
        print(json.dumps({"port": port}), flush=True)
        os.dup2(2, 1)  # from here Hermes Agent's prints go to the log: nobody reads this pipe any more
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    finally:
        await adapter.disconnect()
    return 0


def start_server(home: str, base_url: str, key: str) -> tuple[subprocess.Popen, int]:
    """The server child and its port; its stderr (Hermes Agent's prints and logs) goes to a file in `home`."""
    log = open(os.path.join(home, SERVER_LOG), "w", encoding="utf-8")
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", base_url],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
                            env={**os.environ, "API_SERVER_KEY": key})
    log.close()
    for line in proc.stdout:
        if line.startswith('{"port"'):
            return proc, json.loads(line)["port"]
    proc.wait()
    raise RuntimeError(f"Hermes Agent's API server exited ({proc.returncode}):\n{server_log(home)}")


def stop_server(proc: subprocess.Popen) -> None:
    """Close the child's stdin (it disconnects and exits); kill it only if it does not."""
    proc.stdin.close()
    try:
        proc.wait(STOP_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def server_log(home: str) -> str:
    try:
        with open(os.path.join(home, SERVER_LOG), encoding="utf-8") as f:
            return f.read()[-3000:]
    except OSError:
        return ""


# The client: this process.

def read_events(response) -> list[tuple[str, dict, float]]:
    """Every SSE event of `response` to the stream's end: (name, data, perf_counter when it arrived)."""
    events, name, data = [], "message", []
    for line in response.iter_lines():
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif not line and data:
            events.append((name, json.loads("\n".join(data)), time.perf_counter()))
            name, data = "message", []
    return events


def timed_turn(client, session_id: str, text: str) -> float:
    """ms from sending one turn to its run.completed; the stream is read to its end either way."""
    start = time.perf_counter()
    with client.stream("POST", f"/api/sessions/{session_id}/chat/stream", json={"message": text}) as response:
        response.raise_for_status()
        events = read_events(response)
    by_name = {name: (data, at) for name, data, at in events}
    if "run.completed" not in by_name or not by_name.get("assistant.completed", ({},))[0].get("content"):
        raise RuntimeError(f"Hermes Agent's turn {text!r} did not complete: {[n for n, _, _ in events]} "
                           f"{by_name.get('error', ({},))[0]}")
    return (by_name["run.completed"][1] - start) * 1000


def run_turns(port: int, key: str, n: int) -> dict:
    import httpx

    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=120, trust_env=False) as client:
        created = client.post("/api/sessions", json={"title": "anchor bench"})
        created.raise_for_status()
        session_id = created.json()["session"]["id"]
        samples = [timed_turn(client, session_id, f"anchor turn {i}") for i in range(WARMUP + n)][WARMUP:]
    return {"p50_ms": statistics.median(samples), "p99_ms": percentile(samples, 99), "n": n, "warmup": WARMUP,
            "route": ROUTE}


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[1] == "--serve":
        return asyncio.run(serve(argv[2]))
    if len(argv) != 3:
        print("usage: anchor_http.py BASE_URL N", file=sys.stderr)
        return 2
    if importlib.util.find_spec("aiohttp") is None:  # Hermes Agent's API server needs it; hermes-agent alone lacks it
        print(f"aiohttp is not installed beside hermes-agent: {sys.executable} -m pip install aiohttp==3.14.1",
              file=sys.stderr)
        return 1
    home = tempfile.mkdtemp(prefix="anchor-http-home-")
    try:
        isolate(home)
        write_config(home, argv[1])
        key = secrets.token_hex(24)
        proc, port = start_server(home, argv[1], key)
        try:
            result = run_turns(port, key, int(argv[2]))
        except Exception as exc:
            raise RuntimeError(f"{exc}\nserver log:\n{server_log(home)}") from exc
        finally:
            stop_server(proc)
        print(json.dumps(result), flush=True)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
