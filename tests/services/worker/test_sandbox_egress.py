"""The egress proxy as a hostile sandbox speaks to it: straight onto a door's Unix socket, no bwrap needed.

Destinations are loopback only; what a private or public address would get is proven on the classifier
(test_sandbox_reach.py).
"""

from __future__ import annotations

import socket
import threading

import pytest

from services.worker.sandbox.egress import HEAD_LIMIT, EgressProxy, Timeouts
from services.worker.sandbox.reach import Reach
from shared.security.addresses import Allowlist
from tests.support.waiting import wait_until

pytestmark = pytest.mark.once


@pytest.fixture(scope="module")
def proxy():
    return EgressProxy(Timeouts(head=2.0, resolve=5.0, connect=5.0, idle=30.0))


@pytest.fixture
def echo_port():
    """A loopback TCP server that echoes, outside the proxy."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=echo, args=(conn,), daemon=True).start()

    def echo(conn):
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    stop.set()
    server.close()


def ask(door, request: bytes, *, read_all: bool = True) -> tuple[bytes, socket.socket]:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(10)
    client.connect(door.path)
    client.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data or read_all:
        chunk = client.recv(65536)
        if not chunk:
            break
        data += chunk
    return data, client


@pytest.mark.parametrize("target", ["127.0.0.1", "[::1]", "0.0.0.0", "localhost", "[::ffff:127.0.0.1]",
                                    "2130706433", "127.1"])
def test_connect_to_the_hosts_loopback_is_refused_with_its_reason(proxy, echo_port, target):
    door = proxy.open_door(Reach(), uid=None, label="test", max_connections=4)
    try:
        reply, client = ask(door, f"CONNECT {target}:{echo_port} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        client.close()
    finally:
        door.close()
    assert reply.startswith(b"HTTP/1.1 403 Forbidden\r\n"), reply
    assert b"refused: " in reply and b"the operator may allow it" in reply


def test_absolute_form_get_to_loopback_is_refused_and_logged_without_the_url(proxy, echo_port, caplog):
    door = proxy.open_door(Reach(), uid=None, label="user alice", max_connections=4)
    url = f"http://127.0.0.1:{echo_port}/reset?token=s3cr3t-in-the-query"
    try:
        with caplog.at_level("WARNING", logger="services.worker.sandbox.egress"):
            reply, client = ask(door, f"GET {url} HTTP/1.1\r\nHost: x\r\nCookie: s3cr3t-cookie\r\n\r\n".encode())
            client.close()
    finally:
        door.close()
    assert reply.startswith(b"HTTP/1.1 403 Forbidden") and b"a loopback address" in reply
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "user alice" in logged and "127.0.0.1" in logged and "s3cr3t" not in logged


def test_a_loop_of_refused_requests_logs_a_bounded_number_of_lines(proxy, caplog):
    door = proxy.open_door(Reach(), uid=None, label="user mallory", max_connections=4)
    try:
        with caplog.at_level("WARNING", logger="services.worker.sandbox.egress"):
            for _ in range(30):
                ask(door, b"CONNECT 127.0.0.1:9 HTTP/1.1\r\n\r\n")[1].close()
    finally:
        door.close()
    lines = [r.getMessage() for r in caplog.records if "mallory" in r.getMessage()]
    assert len(lines) == 21 and "not logged" in lines[-1]


def test_a_huge_head_is_refused_without_being_kept(proxy, echo_port):
    door = proxy.open_door(Reach(Allowlist.parse("127.0.0.1")), uid=None, label="test", max_connections=4)
    try:
        head = f"CONNECT 127.0.0.1:{echo_port} HTTP/1.1\r\nX-Pad: {'a' * (4 * HEAD_LIMIT)}\r\n\r\n".encode()
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.settimeout(10)
        client.connect(door.path)
        try:
            client.sendall(head)
        except OSError:
            pass  # the proxy may close before taking all of it
        reply = client.recv(4096)
        client.close()
    finally:
        door.close()
    assert reply.startswith(b"HTTP/1.1 431 ")


def test_a_silent_client_is_dropped_after_the_head_timeout(proxy):
    door = proxy.open_door(Reach(), uid=None, label="test", max_connections=4)
    try:
        reply, client = ask(door, b"CONNECT 127.0.0.1:1 HTTP/1.1\r\n")
        client.close()
    finally:
        door.close()
    assert reply.startswith(b"HTTP/1.1 408 ")


@pytest.mark.parametrize("request_line", [b"CONNECT 127.0.0.1 HTTP/1.1", b"GET / HTTP/1.1",
                                          b"GET https://example.test/ HTTP/1.1", b"CONNECT ::1:80 HTTP/1.1",
                                          b"CONNECT a\x00b:80 HTTP/1.1", b"GET http://a%00b/ HTTP/1.1",
                                          b"CONNECT " + b"a" * 300 + b":80 HTTP/1.1"])
def test_requests_it_does_not_serve_answer_400(proxy, request_line):
    door = proxy.open_door(Reach(), uid=None, label="test", max_connections=4)
    try:
        reply, client = ask(door, request_line + b"\r\n\r\n")
        client.close()
    finally:
        door.close()
    assert reply.startswith(b"HTTP/1.1 400 ")


def test_a_door_holds_at_most_its_connections_and_frees_them(proxy, echo_port):
    """Many tunnels at once: past the door's limit the proxy answers 503 at once; a closed tunnel frees its place."""
    door = proxy.open_door(Reach(Allowlist.parse("127.0.0.1")), uid=None, label="test", max_connections=3)
    tunnels = []
    try:
        for _ in range(3):
            reply, client = ask(door, f"CONNECT 127.0.0.1:{echo_port} HTTP/1.1\r\n\r\n".encode(), read_all=False)
            assert reply == b"HTTP/1.1 200 Connection established\r\n\r\n"
            tunnels.append(client)
        tunnels[0].sendall(b"ping")
        assert tunnels[0].recv(4) == b"ping"
        reply, extra = ask(door, f"CONNECT 127.0.0.1:{echo_port} HTTP/1.1\r\n\r\n".encode())
        extra.close()
        assert reply.startswith(b"HTTP/1.1 503 ") and b"TERMINAL_NETWORK_MAX_CONNECTIONS" in reply
        tunnels.pop().close()
        wait_until(lambda: door.open_connections < 3, timeout=10, what="the closed tunnel to free its place")
        reply, again = ask(door, f"CONNECT 127.0.0.1:{echo_port} HTTP/1.1\r\n\r\n".encode(), read_all=False)
        tunnels.append(again)
        assert reply.startswith(b"HTTP/1.1 200 ")
    finally:
        for client in tunnels:
            client.close()
        door.close()


def test_a_closed_door_leaves_no_socket(proxy):
    door = proxy.open_door(Reach(), uid=None, label="test", max_connections=1)
    door.close()
    with pytest.raises(OSError):
        socket.socket(socket.AF_UNIX).connect(door.path)
