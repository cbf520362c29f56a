"""The sandbox's egress: an HTTP proxy in the worker, reached only through a Unix socket bound into one sandbox.

The sandbox has a network namespace of its own (loopback only); its forwarder (forwarder.py) carries
127.0.0.1:INSIDE_PORT to this proxy. Each command gets its own socket ("door"), so one user's sandbox never
holds another's, and each door counts its own connections. The proxy resolves names itself, judges every
address (reach.py) and connects to the address it judged, so a name that changes its answer between the
check and the connection gains nothing. One asyncio loop on one daemon thread serves every door of this
worker process.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import secrets
import shutil
import socket
import tempfile
import threading
from dataclasses import dataclass, field

from shared.security.addresses import AddressRefused

from .proxy_head import BadHead, Target, parse
from .reach import Reach

log = logging.getLogger(__name__)

INSIDE_SOCKET = "/run/hstack/egress.sock"
INSIDE_PORT = 3128
HEAD_LIMIT = 16 * 1024
CHUNK = 64 * 1024
DONE_POLL_SECONDS = 1.0
LINGER_SECONDS = 1.0  # how long a refused client may go on sending before the proxy closes on it
LINGER_CHUNKS = 4


@dataclass(frozen=True)
class Timeouts:
    """Seconds allowed to send the request head, resolve, connect, and for a tunnel to stay silent."""

    head: float = 15.0
    resolve: float = 10.0
    connect: float = 10.0
    idle: float = 300.0


class Refusal(Exception):
    """A request the proxy answers itself, with this status and reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


REASONS = {400: "Bad Request", 403: "Forbidden", 408: "Request Timeout", 431: "Request Header Fields Too Large",
           502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}


@dataclass
class Door:
    """One command's socket: the path bound into its sandbox, what it may reach, how many connections it has."""

    path: str
    reach: Reach
    label: str
    max_connections: int
    server: asyncio.AbstractServer | None = None
    open_connections: int = 0
    proxy: EgressProxy | None = field(default=None, repr=False)

    def close(self) -> None:
        """Stop accepting; the socket file goes. Tunnels already open end with the sandbox that holds them."""
        if self.proxy is not None:
            self.proxy.close_door(self)

    def close_when_done(self, proc) -> None:
        """Close once the sandboxed process has ended (looked at every DONE_POLL_SECONDS on the proxy's loop)."""
        if self.proxy is not None:
            self.proxy.loop.call_soon_threadsafe(self._check_done, proc)

    def _check_done(self, proc) -> None:
        if proc.poll() is None:
            self.proxy.loop.call_later(DONE_POLL_SECONDS, self._check_done, proc)
        else:
            self.close()


class EgressProxy:
    """The worker process's egress proxy: opens a door per command and serves every door on one loop."""

    def __init__(self, timeouts: Timeouts = Timeouts()) -> None:
        self.timeouts = timeouts
        self.root = tempfile.mkdtemp(prefix="hstack-egress-")
        os.chmod(self.root, 0o711)  # the sandbox uid passes through to its own folder, and lists nothing
        atexit.register(shutil.rmtree, self.root, ignore_errors=True)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="sandbox-egress", daemon=True)
        self.thread.start()

    def open_door(self, reach: Reach, *, uid: int | None, label: str, max_connections: int) -> Door:
        """A new socket only the sandbox it is bound into can reach (its folder belongs to the sandbox's uid)."""
        folder = os.path.join(self.root, str(uid if uid is not None else os.geteuid()))
        os.makedirs(folder, mode=0o700, exist_ok=True)
        if uid is not None:
            os.chown(folder, uid, uid)
        path = os.path.join(folder, secrets.token_hex(16) + ".sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(path)
            os.chmod(path, 0o666)  # the folder is the gate; inside the sandbox the uid is mapped
            sock.listen(64)
        except OSError:
            sock.close()
            raise
        door = Door(path, reach, label, max_connections, proxy=self)
        start = asyncio.start_unix_server(lambda r, w: self.serve(door, r, w), sock=sock, limit=HEAD_LIMIT)
        door.server = asyncio.run_coroutine_threadsafe(start, self.loop).result(timeout=10)
        return door

    def close_door(self, door: Door) -> None:
        server, door.server = door.server, None
        if server is not None:
            self.loop.call_soon_threadsafe(server.close)
        try:
            os.unlink(door.path)
        except FileNotFoundError:
            pass

    async def serve(self, door: Door, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One connection from the sandbox: a request head, a judgement, then a relay or a refusal."""
        if door.open_connections >= door.max_connections:
            await answer(writer, Refusal(503, f"this sandbox already has {door.max_connections} connections open "
                                              "(TERMINAL_NETWORK_MAX_CONNECTIONS)"), reader)
            return
        door.open_connections += 1
        try:
            target = await self.read_target(reader)
            upstream = await self.connect(door, target)
        except Refusal as refusal:
            await answer(writer, refusal, reader)
        except Exception:
            log.exception("sandbox egress failed for %s", door.label)
            await answer(writer, Refusal(502, "the proxy could not serve this request"), reader)
        else:
            await self.relay(target, reader, writer, *upstream)
        finally:
            door.open_connections -= 1

    async def read_target(self, reader: asyncio.StreamReader) -> Target:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.timeouts.head)
        except asyncio.LimitOverrunError:
            raise Refusal(431, f"the request head is longer than {HEAD_LIMIT} bytes") from None
        except asyncio.IncompleteReadError:
            raise Refusal(400, "the connection closed before the request head ended") from None
        except asyncio.TimeoutError:
            raise Refusal(408, f"no complete request head within {self.timeouts.head:g} s") from None
        try:
            return parse(head)
        except BadHead as exc:
            raise Refusal(400, str(exc)) from None

    async def connect(self, door: Door, target: Target):
        """Judge the target's addresses and connect to one of them (never to the name again)."""
        where = f"{target.host}:{target.port}"
        try:
            addresses = await asyncio.wait_for(
                self.loop.run_in_executor(None, door.reach.addresses, target.host, target.port), self.timeouts.resolve)
        except AddressRefused as exc:
            log.warning("sandbox egress refused for %s: %s", door.label, exc.message)
            raise Refusal(403, f"refused: {exc.message}") from None
        except asyncio.TimeoutError:
            raise Refusal(504, f"{target.host} did not resolve within {self.timeouts.resolve:g} s") from None
        last = "no address"
        for address in addresses:
            try:
                return await asyncio.wait_for(asyncio.open_connection(str(address), target.port, limit=CHUNK),
                                              self.timeouts.connect)
            except (OSError, asyncio.TimeoutError) as exc:
                last = str(exc) or "timed out"
        raise Refusal(502, f"could not connect to {where}: {last}")

    async def relay(self, target: Target, reader, writer, up_reader, up_writer) -> None:
        """Carry bytes both ways until both sides close, or neither side spoke for the idle timeout."""
        if target.tunnel:
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            up_writer.write(target.first_bytes)
        quiet = Quiet(self.loop, self.timeouts.idle)
        await asyncio.gather(pump(reader, up_writer, quiet), pump(up_reader, writer, quiet))
        for w in (writer, up_writer):
            w.close()


class Quiet:
    """When either direction of a relay last carried a byte."""

    def __init__(self, loop: asyncio.AbstractEventLoop, idle: float) -> None:
        self.loop, self.idle, self.last = loop, idle, loop.time()

    def touch(self) -> None:
        self.last = self.loop.time()

    def too_long(self) -> bool:
        return self.loop.time() - self.last >= self.idle


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, quiet: Quiet) -> None:
    """Copy one direction, at most a chunk in flight (drain waits for the other side to take it)."""
    try:
        while True:
            try:
                data = await asyncio.wait_for(reader.read(CHUNK), quiet.idle)
            except asyncio.TimeoutError:
                if quiet.too_long():
                    break
                continue
            if not data:
                break
            quiet.touch()
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, RuntimeError):
        pass
    finally:
        if quiet.too_long():
            writer.close()


async def answer(writer: asyncio.StreamWriter, refusal: Refusal, reader: asyncio.StreamReader | None = None) -> None:
    """The proxy's own answer: a status line and the reason as plain text, then close.

    With the reader, what the client still sends is read and dropped for a moment first: closing on unread
    bytes resets the connection, and the client would lose the answer."""
    body = (refusal.reason + "\n").encode()
    head = (f"HTTP/1.1 {refusal.status} {REASONS.get(refusal.status, 'Error')}\r\n"
            f"Content-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n").encode()
    try:
        writer.write(head + body)
        await writer.drain()
        if reader is not None and writer.can_write_eof():
            writer.write_eof()
            await asyncio.wait_for(_discard(reader), LINGER_SECONDS)
    except (OSError, RuntimeError, asyncio.TimeoutError):
        pass
    finally:
        writer.close()


async def _discard(reader: asyncio.StreamReader) -> None:
    for _ in range(LINGER_CHUNKS):
        if not await reader.read(CHUNK):
            return


_proxy: EgressProxy | None = None
_proxy_lock = threading.Lock()


def egress_proxy() -> EgressProxy:
    """This worker process's one egress proxy, started on first use."""
    global _proxy
    with _proxy_lock:
        if _proxy is None:
            _proxy = EgressProxy()
        return _proxy
