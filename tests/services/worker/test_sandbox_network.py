"""The sandbox's network: its own namespace in both modes, the egress proxy its only way out, and a /proc
that shows neither the host's sockets nor its kernel command line nor the host paths bwrap was given.

Every destination is on loopback: the proxy's refusal of private and public addresses is proven on the
classifier (test_sandbox_reach.py), never by connecting.
"""

from __future__ import annotations

import hashlib
import http.server
import os
import shutil
import socket
import tempfile
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from services.worker.sandbox import Sandbox, run
from services.worker.sandbox.egress import egress_proxy
from services.worker.sandbox.reach import Reach
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.once, pytest.mark.skipif(shutil.which("bwrap") is None and not os.environ.get("CI"),
                                                   reason="apt-get install bubblewrap")]

PAYLOAD = os.urandom(3 * 1024 * 1024)
CONNECT_PROBE = """python3 - <<'EOF'
import socket
for host, port in {targets!r}:
    s = socket.socket(socket.AF_INET6 if ':' in host else socket.AF_INET)
    s.settimeout(3)
    print(host, port, 'CONNECTED' if s.connect_ex((host, port)) == 0 else 'REFUSED')
EOF"""
PROXY_REQUEST = """python3 - <<'EOF'
import socket
s = socket.create_connection(('127.0.0.1', 3128), timeout=10)
s.sendall({request!r})
data = b''
while chunk := s.recv(65536):
    data += chunk
print(data[:400].decode('latin-1'))
body = data
while body.startswith(b'HTTP/'):
    body = body.split(b'\\r\\n\\r\\n', 1)[1]
import hashlib; print('SHA', hashlib.sha256(body).hexdigest())
EOF"""


class Payload(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(PAYLOAD)))
        self.end_headers()
        self.wfile.write(PAYLOAD)

    def log_message(self, *args):
        pass


@pytest.fixture
def workspace():
    """A user's workspace whose parents the sandbox uid may pass (as a real DATA_DIR's are)."""
    base = Path(tempfile.mkdtemp(prefix="hstack-net-"))
    base.chmod(0o711)
    ws = base / "data" / "users" / "alice" / "workspace"
    ws.mkdir(parents=True)
    yield ws
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def server():
    """An HTTP server on the host's loopback, outside every sandbox."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Payload)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def sandbox_for(settings, workspace, *, network: bool, allow: str = "", api_port: int | None = None) -> Sandbox:
    update = {"terminal_network_allow": allow, **({"api_port": api_port} if api_port else {})}
    reach = Reach.from_settings(settings.model_copy(update=update))
    return Sandbox(network=network, reach=reach, hidden=(str(workspace.parents[2]),))


def stack_targets(settings, listening: int) -> list[tuple[str, int]]:
    redis = urlsplit(settings.redis_url)
    return [(redis.hostname, redis.port or 6379), ("127.0.0.1", 5432), ("127.0.0.1", listening),
            ("::1", listening), ("127.0.0.1", settings.api_port)]


@pytest.mark.parametrize("network", [False, True], ids=["network-off", "network-on"])
def test_no_direct_connection_reaches_the_host_in_either_mode(settings, workspace, server, network):
    """Reproduction (the exploit): with TERMINAL_NETWORK=true the sandbox shared the host's network, so
    `socket.connect(('127.0.0.1', <redis port>))` reached the stack's passwordless Redis. Now Redis, the
    database, the api's port and a port the test listens on are all unreachable, in both modes."""
    targets = stack_targets(settings, server)
    result = run(CONNECT_PROBE.format(targets=targets), workspace=workspace, timeout=60,
                 sandbox=sandbox_for(settings, workspace, network=network))
    lines = result.output.strip().splitlines()
    assert len(lines) == len(targets) and all(line.endswith("REFUSED") for line in lines), result.output


@pytest.mark.parametrize("network", [False, True], ids=["network-off", "network-on"])
def test_the_hosts_abstract_unix_sockets_are_out_of_reach(settings, workspace, network):
    """Abstract Unix sockets belong to the network namespace: with the host's, a sandbox reached every one
    the host's services listen on (no file, no permission check)."""
    name = f"hstack-test-{os.getpid()}-{network}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as outside:
        outside.bind("\0" + name)
        outside.listen(1)
        probe = (f"python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); "
                 f"print('REFUSED' if s.connect_ex('\\0{name}') else 'CONNECTED')\"")
        result = run(probe, workspace=workspace, timeout=60, sandbox=sandbox_for(settings, workspace, network=network))
    assert result.output.strip() == "REFUSED", result.output


def test_the_proxy_refuses_loopback_by_default_and_serves_it_when_allowed(settings, workspace, server):
    """Reproduction: there was no proxy, so `HTTP_PROXY` pointed nowhere and the only way out was the host's
    whole network. Now a request through 127.0.0.1:3128 to a loopback server is refused with its reason, and
    served byte for byte once TERMINAL_NETWORK_ALLOW lists 127.0.0.1."""
    request = f"GET http://127.0.0.1:{server}/file HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    command = "echo $HTTPS_PROXY; " + PROXY_REQUEST.format(request=request)
    refused = run(command, workspace=workspace, timeout=60, sandbox=sandbox_for(settings, workspace, network=True))
    assert refused.output.startswith("http://127.0.0.1:3128\nHTTP/1.1 403 Forbidden"), refused.output
    assert "127.0.0.1 resolves to 127.0.0.1, a loopback address" in refused.output

    allowed = run(command, workspace=workspace, timeout=60,
                  sandbox=sandbox_for(settings, workspace, network=True, allow="127.0.0.1"))
    assert "HTTP/1.0 200 OK" in allowed.output, allowed.output
    assert f"SHA {hashlib.sha256(PAYLOAD).hexdigest()}" in allowed.output


def test_allowing_loopback_still_refuses_the_stacks_own_ports(settings, workspace, server):
    """Listing 127.0.0.1 for a local server must not open the local Redis, database or api with it."""
    redis = urlsplit(settings.redis_url)
    lines = []
    for port in (redis.port or 6379, server):
        request = f"CONNECT {redis.hostname}:{port} HTTP/1.1\r\n\r\n".encode()
        result = run(PROXY_REQUEST.format(request=request), workspace=workspace, timeout=60,
                     sandbox=sandbox_for(settings, workspace, network=True, allow="127.0.0.1", api_port=server))
        lines.append(result.output.splitlines()[0])
    assert lines == ["HTTP/1.1 403 Forbidden"] * 2


@pytest.mark.parametrize("network", [False, True], ids=["network-off", "network-on"])
def test_the_sandboxs_own_loopback_is_up(settings, workspace, network):
    """A server the command starts is reachable from the same command (NO_PROXY sends such requests direct)."""
    command = ("python3 -c \"import socket; s = socket.create_server(('127.0.0.1', 0)); "
               "c = socket.create_connection(s.getsockname(), timeout=3); print('LOOPBACK', s.accept()[1][0])\"")
    result = run(command, workspace=workspace, timeout=60, sandbox=sandbox_for(settings, workspace, network=network))
    assert result.output.strip() == "LOOPBACK 127.0.0.1", result.output


def test_network_off_has_no_proxy_and_no_way_out(settings, workspace):
    result = run("env | grep -ci proxy; ls /run/hstack 2>&1 | head -1", workspace=workspace, timeout=60,
                 sandbox=sandbox_for(settings, workspace, network=False))
    assert result.output.splitlines()[0] == "0" and "No such file" in result.output


def test_proc_shows_no_host_socket_kernel_command_line_or_host_path(settings, workspace, server):
    """Reproduction: /proc/net/tcp listed the host's listening sockets (Redis's, the api's), /proc/cmdline
    the kernel's command line and /proc/1/cmdline bwrap's arguments with the host's DATA_DIR path."""
    command = "cat /proc/net/tcp /proc/net/tcp6; echo CMDLINE; cat /proc/cmdline; echo; tr '\\0' ' ' </proc/1/cmdline"
    for network in (False, True):
        result = run(command, workspace=workspace, timeout=60, sandbox=sandbox_for(settings, workspace, network=network))
        sockets, rest = result.output.split("CMDLINE\n", 1)
        kernel, init = rest.split("\n", 1)
        local_ports = {int(line.split()[1].rsplit(":", 1)[1], 16) for line in sockets.splitlines()[1:]
                       if line.split() and line.split()[0] != "sl"}
        assert local_ports <= {3128}, sockets  # at most the sandbox's own forwarder
        assert server not in local_ports and kernel == ""
        assert str(workspace.parents[2]) not in init and "--bind" not in init, init


def test_a_large_download_arrives_whole_and_the_socket_goes_with_the_command(settings, workspace, server):
    request = f"CONNECT 127.0.0.1:{server} HTTP/1.1\r\n\r\nGET /big HTTP/1.0\r\n\r\n".encode()
    result = run(PROXY_REQUEST.format(request=request), workspace=workspace, timeout=60,
                 sandbox=sandbox_for(settings, workspace, network=True, allow="127.0.0.1"))
    assert "200 Connection established" in result.output
    assert f"SHA {hashlib.sha256(PAYLOAD).hexdigest()}" in result.output
    root = Path(egress_proxy().root)
    wait_until(lambda: not list(root.rglob("*.sock")), timeout=15, what="the command's egress socket to go")

