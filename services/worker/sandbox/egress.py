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

from shared.concurrency.daemon_threads import DaemonThreads
from shared.security.addresses import AddressRefused

from .proxy_head import BadHead, Target, parse
from .reach import Reach
from .relay import CHUNK, Quiet, Refusal, answer, pump

log = logging.getLogger(__name__)

INSIDE_SOCKET = "/run/hstack/egress.sock"
INSIDE_PORT = 3128
HEAD_LIMIT = 16 * 1024
DONE_POLL_SECONDS = 1.0
LOGGED_REFUSALS = 20  # per command: a loop of refused requests must not flood the worker's log


@dataclass(frozen=True)
class Timeouts:
    """Seconds allowed to send the request head, resolve, connect, and for a tunnel to stay silent."""

    head: float = 15.0
    resolve: float = 10.0
    connect: float = 10.0
    idle: float = 300.0


@dataclass
class Door:
    """One command's socket: the path bound into its sandbox, what it may reach, how many connections it has."""

    path: str
    reach: Reach
    label: str
    max_connections: int
    server: asyncio.AbstractServer | None = None
    open_connections: int = 0
    refusals: int = 0
    proxy: EgressProxy | None = field(default=None, repr=False)

    def log_refusal(self, reason: str) -> None:
        self.refusals += 1
        if self.refusals <= LOGGED_REFUSALS:
            log.warning("sandbox egress refused for %s: %s", self.label, reason)
        elif self.refusals == LOGGED_REFUSALS + 1:
            log.warning("sandbox egress: further refusals for %s are not logged", self.label)

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
        # Names resolve on daemon threads of their own: one sandbox's slow names never queue another's
        # behind them (a shared executor has a few threads), and a hung lookup never holds up the exit.
        self.resolvers = DaemonThreads("sandbox-egress-resolve")
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
            addresses = await asyncio.wait_for(self.resolve(door.reach, target), self.timeouts.resolve)
        except AddressRefused as exc:
            door.log_refusal(exc.message)
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

    def resolve(self, reach: Reach, target: Target) -> asyncio.Future:
        """reach.addresses(host, port) on a resolver thread, as a future of this loop."""
        future = self.loop.create_future()

        def settle(result, error) -> None:
            if not future.done():  # a timeout may have given up on it already
                future.set_exception(error) if error is not None else future.set_result(result)

        def job() -> None:
            try:
                result, error = reach.addresses(target.host, target.port), None
            except Exception as exc:
                result, error = None, exc
            self.loop.call_soon_threadsafe(settle, result, error)

        self.resolvers.run(job)
        return future

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


_proxy: EgressProxy | None = None
_proxy_lock = threading.Lock()


def egress_proxy() -> EgressProxy:
    """This worker process's one egress proxy, started on first use."""
    global _proxy
    with _proxy_lock:
        if _proxy is None:
            _proxy = EgressProxy()
        return _proxy
