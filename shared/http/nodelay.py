"""An httpx client whose connections send each write at once (TCP_NODELAY), proxies from the environment kept.

httpx's sync transport leaves Nagle's algorithm on, and a request goes out as two writes (its headers, then
its body): on a kept-alive connection the second may wait until the server acknowledges the first, and a
server that delays its acknowledgements (40 ms on Linux) holds it back. That stall was measured the other
way round, on the scripted model's streamed answers (bench/README.md); every other client and
server in the stack (asyncio's, redis-py's, uvicorn's) sets TCP_NODELAY, and this does the same for httpx,
on the direct transport and on any proxy one the environment asks for (httpx drops environment proxies when
it is handed a transport, so none is handed over).
"""

from __future__ import annotations

import socket
from typing import Any

import httpx

NO_DELAY = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]


class NoDelayClient(httpx.Client):
    """httpx.Client, but every transport it builds (direct or proxy) sets TCP_NODELAY on its sockets."""

    def _init_transport(self, *args: Any, transport: httpx.BaseTransport | None = None, **options: Any):
        return transport or httpx.HTTPTransport(*args, socket_options=NO_DELAY, **options)

    def _init_proxy_transport(self, proxy: httpx.Proxy, *args: Any, **options: Any):
        return httpx.HTTPTransport(*args, proxy=proxy, socket_options=NO_DELAY, **options)
