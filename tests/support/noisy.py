"""A noisy neighbour for a running stack: one user holding hundreds of open event streams and a backlog of
queued turns, and a quiet user's turn streamed over SSE beside them (a must-show, test and bench)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import httpx

from tests.support.processes import Stack


@dataclass
class StreamedTurn:
    """What a client saw of one turn over SSE, and how long from POST to its terminal event."""

    events: list[str]
    output: str
    seconds: float


def stream_one_turn(stack: Stack, key: str, text: str = "just one") -> StreamedTurn:
    """POST a turn in a new session and read its event stream to the terminal event."""
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=stack.base_url, headers=headers, timeout=120) as c:
        sid = c.post("/v1/sessions", json={}).raise_for_status().json()["id"]
        start = time.perf_counter()
        turn = c.post(f"/v1/sessions/{sid}/turns", json={"input": text}).raise_for_status().json()
        events, output = [], ""
        with c.stream("GET", f"/v1/turns/{turn['id']}/events") as response:
            response.raise_for_status()
            kind = None
            for line in response.iter_lines():
                if line.startswith("event: "):
                    kind = line[7:]
                    events.append(kind)
                elif line.startswith("data: ") and kind in {"turn.completed", "turn.failed", "turn.cancelled"}:
                    output = json.loads(line[6:]).get("output") or ""
                    break
        return StreamedTurn(events, output, time.perf_counter() - start)


def keys_for(stack: Stack, name: str, count: int) -> list[str]:
    """A user with `count` API keys (a determined user spreads streams over several keys)."""
    with stack.client() as admin:
        user = admin.post("/v1/users", json={"name": name}).raise_for_status().json()
        return [admin.post(f"/v1/users/{user['id']}/keys").raise_for_status().json()["key"] for _ in range(count)]


def queue_backlog(stack: Stack, key: str, turns: int) -> list[str]:
    """`turns` queued turns, one session each; returns their ids."""
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=stack.base_url, headers=headers, timeout=60) as c:
        sids = [c.post("/v1/sessions", json={}).raise_for_status().json()["id"] for _ in range(turns)]
        with ThreadPoolExecutor(8) as pool:
            posted = pool.map(lambda s: c.post(f"/v1/sessions/{s}/turns", json={"input": "backlog"}), sids)
            return [r.raise_for_status().json()["id"] for r in posted]


@dataclass
class StreamHold:
    """Opens `total` event streams on the given turns, spread over `keys`, and holds them open."""

    stack: Stack
    keys: list[str]
    turn_ids: list[str]
    total: int
    statuses: Counter = field(default_factory=Counter)
    endings: Counter = field(default_factory=Counter)
    _opened: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _loop: asyncio.AbstractEventLoop | None = None
    _stop: asyncio.Event | None = None

    def __enter__(self) -> "StreamHold":
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(),), daemon=True)
        self._thread.start()
        if not self._opened.wait(120):
            raise AssertionError(f"could not open the streams: {dict(self.statuses)}")
        return self

    def __exit__(self, *exc) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(60)

    @property
    def open_streams(self) -> int:
        return self.statuses[200]

    async def _main(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        limits = httpx.Limits(max_connections=self.total + 10, max_keepalive_connections=0)
        async with httpx.AsyncClient(base_url=self.stack.base_url, timeout=None, limits=limits) as client:
            started = [asyncio.Event() for _ in range(self.total)]
            tasks = [asyncio.create_task(self._hold(client, n, started[n])) for n in range(self.total)]
            await asyncio.gather(*(e.wait() for e in started))
            self._opened.set()
            await self._stop.wait()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _hold(self, client: httpx.AsyncClient, n: int, started: asyncio.Event) -> None:
        key = self.keys[n % len(self.keys)]
        turn_id = self.turn_ids[n % len(self.turn_ids)]
        headers = {"Authorization": f"Bearer {key}"}
        try:
            async with client.stream("GET", f"/v1/turns/{turn_id}/events", headers=headers) as response:
                self.statuses[response.status_code] += 1
                started.set()
                async for line in response.aiter_lines():
                    if line.startswith("event: ") and line[7:] in {"turn.completed", "error"}:
                        self.endings[line[7:]] += 1
        except httpx.HTTPError as exc:
            self.statuses[type(exc).__name__] += 1
        finally:
            started.set()
