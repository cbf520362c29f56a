"""A stdio MCP server started in the user's sandbox, and the SDK's message streams over its pipes.

The SDK's own stdio_client spawns a plain subprocess; ours is bwrap (the terminal's launcher: the user's
workspace only, the same limits, never the worker's uid), so the server's stdin and stdout are bridged to
the ClientSession's streams here, one JSON-RPC message per line as the stdio transport specifies.
"""

from __future__ import annotations

import asyncio
import collections
import shlex
import subprocess
import threading
from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator, Callable

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from services.worker.sandbox import Sandbox
from services.worker.sandbox import cgroup
from services.worker.sandbox.launcher import launch
from services.worker.sandbox.runner import kill_group

MAX_LINE_BYTES = 16 * 1024 * 1024  # one message; a server writing more per line is cut off
STDERR_LINES = 20


class Server:
    """One running server process: its pipes, the tail of its stderr (for the last error) and its cgroup."""

    def __init__(self, proc: subprocess.Popen, group) -> None:
        self.proc = proc
        self.group = group
        self.stderr: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        threading.Thread(target=self._read_stderr, name="mcp-stderr", daemon=True).start()

    def _read_stderr(self) -> None:
        for raw in iter(self.proc.stderr.readline, b""):
            self.stderr.append(raw.decode(errors="replace").rstrip()[:300])
        self.proc.stderr.close()

    def said(self) -> str:
        return " | ".join(line for line in self.stderr if line)[-400:]

    def stop(self) -> None:
        kill_group(self.proc)
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        cgroup.release(self.group)


def command_line(argv: list[str], env: dict[str, str] | None) -> str:
    """The bash line the sandbox runs: the configured environment, then the server's argv, exec'd."""
    exports = "".join(f"export {k}={shlex.quote(v)}; " for k, v in (env or {}).items())
    return f"{exports}exec {shlex.join(argv)}"


def start(argv: list[str], env: dict[str, str] | None, workspace: Path, sandbox: Sandbox) -> Server:
    """Start the server in the user's sandbox (SandboxUnavailable when bwrap cannot start)."""
    group = cgroup.acquire(workspace)
    try:
        proc = launch(command_line(argv, env), workspace=workspace, sandbox=sandbox, stdin=subprocess.PIPE,
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, group=group)
    except BaseException:
        cgroup.release(group)
        raise
    return Server(proc, group)


@asynccontextmanager
async def streams(server: Server, on_end: Callable[[], None]) -> AsyncIterator[tuple]:
    """(read, write) streams for a ClientSession over the server's pipes; `on_end` runs when its output ends."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES, loop=loop)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), server.proc.stdout)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, server.proc.stdin)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)

    async def from_server() -> None:
        async with read_send:
            try:
                while line := await reader.readline():
                    if line.strip():
                        await read_send.send(_parse(line))
            except (ValueError, ConnectionError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # a line past the cap or a closed session: the connection ends either way
        on_end()

    async def to_server() -> None:
        async with write_recv:
            async for message in write_recv:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                try:
                    writer.write(data.encode())
                    await writer.drain()
                except (ConnectionError, RuntimeError):
                    on_end()
                    return

    async with anyio.create_task_group() as tg:
        tg.start_soon(from_server)
        tg.start_soon(to_server)
        try:
            yield read_recv, write_send
        finally:
            tg.cancel_scope.cancel()
            transport.close()


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc
