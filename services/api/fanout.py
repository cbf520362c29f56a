"""Turn events fanned out to every local SSE subscriber from a fixed number of Redis connections.

Each reader owns one connection and follows many turns with one multi-key XREAD BLOCK; a turn is
followed by exactly one reader however many clients watch it. Every subscriber has its own bounded
buffer: delivery never waits, and a subscriber whose buffer overflows is ended with an explicit
error so it can resume with Last-Event-ID. A reader is woken for a newly followed turn through its
own small wake stream, which (unlike a timer) can never miss a turn added just before it blocked.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections import deque
from dataclasses import dataclass
from typing import Any

import redis
import redis.asyncio as aioredis

from shared.messaging import events
from services.api.sse_json import sse_json

log = logging.getLogger(__name__)

BATCH = 200
BLOCK_SECONDS = 5.0
CLOSE_SECONDS = 5.0
WAKE_TTL_SECONDS = 3600
RETRY_PAUSE_SECONDS = 0.5


@dataclass(frozen=True)
class Event:
    id: str
    type: str
    data: dict[str, Any]

    @property
    def terminal(self) -> bool:
        return self.type in events.TERMINAL_EVENTS

    def sse(self) -> str:
        """One SSE frame: id, event type and JSON data."""
        return f"id: {self.id}\nevent: {self.type}\ndata: {sse_json(self.data)}\n\n"


@dataclass(frozen=True)
class StreamEnd:
    """Why a subscription stopped before its terminal event; the client resumes with Last-Event-ID."""

    code: str
    message: str


def id_key(entry_id: str) -> tuple[int, int]:
    """A stream id as a comparable (ms, seq) pair."""
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


def stream_entries(reply: Any) -> list[tuple[str, list]]:
    """XREAD's reply as [(key, [(id, fields), …])] whether the server spoke RESP2 or RESP3."""
    if not reply:
        return []
    if isinstance(reply, dict):
        return [(key, value[0] if value and isinstance(value[0], list) else value) for key, value in reply.items()]
    return [(key, entries) for key, entries in reply]


class Subscriber:
    """One client's view of a turn: a bounded buffer of events, then maybe an explicit end."""

    def __init__(self, buffer: int) -> None:
        self._events: deque[Event] = deque()
        self._buffer = buffer
        self._ready = asyncio.Event()
        self.end: StreamEnd | None = None

    def offer(self, event: Event) -> bool:
        """Buffer the event without waiting; False when the buffer is full (the subscriber is too slow)."""
        if self.end is not None or len(self._events) >= self._buffer:
            return False
        self._events.append(event)
        self._ready.set()
        return True

    def finish(self, end: StreamEnd) -> None:
        """End after the buffered events; the first reason wins."""
        if self.end is None:
            self.end = end
        self._ready.set()

    async def next(self, timeout: float) -> Event | StreamEnd | None:
        """The next buffered event, else the end, else None once `timeout` passed idle."""
        while True:
            if self._events:
                return self._events.popleft()
            if self.end is not None:
                return self.end
            self._ready.clear()
            try:
                await asyncio.wait_for(self._ready.wait(), timeout)
            except TimeoutError:
                return None


OVERFLOW = StreamEnd("stream_overflow", "This client read too slowly and fell behind; reconnect with Last-Event-ID.")
BROKEN = StreamEnd("stream_unavailable", "The event stream could not be read; reconnect with Last-Event-ID.")
SHUTDOWN = StreamEnd("shutting_down", "The server is shutting down; reconnect with Last-Event-ID.")


class Channel:
    """A followed turn: the id the reader has delivered up to, and the subscribers it delivers to."""

    def __init__(self, turn_id: str, last: str) -> None:
        self.turn_id = turn_id
        self.key = events.stream_key(turn_id)
        self.last = last
        self.subscribers: set[Subscriber] = set()

    def deliver(self, event: Event) -> None:
        self.last = event.id
        for sub in list(self.subscribers):
            if not sub.offer(event):
                self.subscribers.discard(sub)
                sub.finish(OVERFLOW)

    def finish(self, end: StreamEnd) -> None:
        for sub in self.subscribers:
            sub.finish(end)
        self.subscribers.clear()


class Reader:
    """One Redis connection following many turns with a single XREAD BLOCK."""

    def __init__(self, client: aioredis.Redis, waker: aioredis.Redis, on_done) -> None:
        self.client = client
        self.waker = waker
        self.wake_key = f"hstack:sse-wake:{secrets.token_hex(8)}"
        self.channels: dict[str, Channel] = {}
        self._on_done = on_done
        self._wake_last = "0-0"
        self._has_work = asyncio.Event()
        self.stopped = False

    def add(self, channel: Channel) -> None:
        self.channels[channel.key] = channel
        self._has_work.set()

    def drop(self, channel: Channel) -> None:
        if self.channels.get(channel.key) is channel:
            del self.channels[channel.key]

    async def wake(self) -> None:
        """Make a blocked XREAD return so it picks up the turns added since it was sent."""
        pipe = self.waker.pipeline(transaction=False)
        pipe.xadd(self.wake_key, {"w": "1"}, maxlen=8, approximate=False)
        pipe.expire(self.wake_key, WAKE_TTL_SECONDS)
        await pipe.execute()

    def stop(self) -> None:
        """Let `run` return at its next step. Cancelling its task alone is not enough: redis-py can turn a
        cancelled XREAD into a connection error, which `run` takes for a failed read and carries on, then waits
        for work that never comes (a Hub.close() that never returned, seen once under load)."""
        self.stopped = True
        self._has_work.set()

    async def run(self) -> None:
        """Read until stopped; a failed read is retried once, then every followed turn is ended."""
        failures = 0
        while not self.stopped:
            if not self.channels:
                self._has_work.clear()
                await self._has_work.wait()
                continue
            sent = dict(self.channels)
            positions = {self.wake_key: self._wake_last, **{key: c.last for key, c in sent.items()}}
            try:
                reply = await self.client.xread(positions, count=BATCH, block=int(BLOCK_SECONDS * 1000))
            except (redis.RedisError, OSError) as exc:
                if self.stopped:
                    return
                failures += 1
                log.warning("sse reader failed to read %d turns (%s)", len(sent), type(exc).__name__)
                if failures > 1:
                    self._fail(sent, BROKEN)
                await asyncio.sleep(RETRY_PAUSE_SECONDS * min(failures, 10))
                continue
            failures = 0
            self._dispatch(sent, stream_entries(reply))

    def _dispatch(self, sent: dict[str, Channel], replies: list[tuple[str, list]]) -> None:
        for key, entries in replies:
            if key == self.wake_key:
                if entries:
                    self._wake_last = entries[-1][0]
                continue
            channel = sent.get(key)
            if channel is None or self.channels.get(key) is not channel:
                continue  # the turn was dropped (or followed anew) while this read was in flight
            for entry_id, fields in entries:
                if id_key(entry_id) <= id_key(channel.last):
                    continue
                event = Event(*events.decode(entry_id, fields))
                channel.deliver(event)
                if event.terminal:
                    self._on_done(channel)
                    break

    def _fail(self, sent: dict[str, Channel], end: StreamEnd) -> None:
        for channel in sent.values():
            if self.channels.get(channel.key) is channel:
                channel.finish(end)
                self._on_done(channel)

    async def close(self) -> None:
        await _bounded(self.waker.delete(self.wake_key))
        await _bounded(self.client.aclose(close_connection_pool=True))


class Hub:
    """Every SSE subscriber of this api process, fed by a fixed set of readers."""

    def __init__(self, readers: list[aioredis.Redis], replay: aioredis.Redis, *, buffer: int) -> None:
        self.replay = replay
        self.buffer = buffer
        self.readers = [Reader(client, replay, self._done) for client in readers]
        self.channels: dict[str, tuple[Channel, Reader]] = {}
        self._tasks: list[asyncio.Task] = []
        self.closing = False

    def start(self) -> None:
        self._tasks = [asyncio.create_task(reader.run(), name="sse-reader") for reader in self.readers]

    async def subscribe(self, turn_id: str, after: str, tip: str | None = None) -> tuple[Subscriber, str]:
        """Join the turn's live fan-out; also returns the id it delivers from (replay up to it first).

        `tip`: the newest stored event, when the caller read it. A new channel then starts there, so a client
        resuming far behind replays the backlog at its own pace instead of being handed it in BATCH-sized
        reads faster than it drains them (which ended it with stream_overflow again, every time)."""
        sub = Subscriber(self.buffer)
        if self.closing:
            sub.finish(SHUTDOWN)
            return sub, after
        found = self.channels.get(turn_id)
        if found is None:
            start = tip if tip is not None and id_key(tip) > id_key(after) else after
            channel, reader = Channel(turn_id, start), min(self.readers, key=lambda r: len(r.channels))
            self.channels[turn_id] = (channel, reader)
            reader.add(channel)
        else:
            channel, reader = found
        channel.subscribers.add(sub)
        upto = channel.last
        if found is None:
            try:
                await reader.wake()
            except (redis.RedisError, OSError) as exc:  # the read still starts within BLOCK_SECONDS
                log.warning("could not wake the sse reader (%s)", type(exc).__name__)
        return sub, upto

    async def history(self, turn_id: str, after: str, upto: str | None = None) -> list[Event]:
        """The stored events after `after` (up to `upto`), read on the replay connection, never a reader's."""
        key, out, last = events.stream_key(turn_id), [], after
        while True:
            reply = stream_entries(await self.replay.xread({key: last}, count=BATCH))
            entries = reply[0][1] if reply else []
            for entry_id, fields in entries:
                if upto is not None and id_key(entry_id) > id_key(upto):
                    return out
                out.append(Event(*events.decode(entry_id, fields)))
            if len(entries) < BATCH:
                return out
            last = entries[-1][0]

    async def join(self, turn_id: str, newest: str) -> tuple[Subscriber, list[Event]]:
        """Subscribe after `newest`, the last stored event the caller read, and read what was stored between
        it and where the fan-out delivers from: with the subscription made first, nothing is missed."""
        sub, upto = await self.subscribe(turn_id, newest, tip=newest)
        try:
            gap = await self.history(turn_id, newest, upto) if id_key(upto) > id_key(newest) else []
        except BaseException:
            self.unsubscribe(turn_id, sub)
            raise
        return sub, gap

    def unsubscribe(self, turn_id: str, sub: Subscriber) -> None:
        found = self.channels.get(turn_id)
        if found is None:
            return
        channel, _ = found
        if sub not in channel.subscribers:
            return  # already ended (terminal, overflow, failure), or a later channel of the same turn
        channel.subscribers.discard(sub)
        if not channel.subscribers:
            self._done(channel)

    def _done(self, channel: Channel) -> None:
        found = self.channels.get(channel.turn_id)
        if found is not None and found[0] is channel:
            del self.channels[channel.turn_id]
            found[1].drop(channel)

    def drain(self) -> None:
        """End every open subscription with `shutting_down`, so clients know to resume elsewhere."""
        self.closing = True
        for channel, _ in list(self.channels.values()):
            channel.finish(SHUTDOWN)
            self._done(channel)

    async def close(self) -> None:
        self.drain()
        for reader in self.readers:
            reader.stop()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for reader in self.readers:
            await reader.close()
        await _bounded(self.replay.aclose(close_connection_pool=True))


async def _bounded(closing) -> None:
    """A Redis call made while shutting down: never let an unresponsive server hold the shutdown up."""
    try:
        await asyncio.wait_for(closing, CLOSE_SECONDS)
    except (redis.RedisError, OSError, TimeoutError) as exc:
        log.warning("sse shutdown: a Redis call did not finish cleanly (%s)", type(exc).__name__)
