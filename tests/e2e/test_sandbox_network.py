"""The original exploit, replayed through a real worker: the model's terminal command tries the stack's Redis,
the api and a port the test listens on, directly and through the sandbox's proxy, in both network modes."""

from __future__ import annotations

import json
import os
import shutil
import socket
from urllib.parse import urlsplit

import pytest

from tests.fakes.model import text, tool_call
from tests.support.processes import Stack, wait_for_turn

pytestmark = [pytest.mark.e2e, pytest.mark.once,
              pytest.mark.skipif(shutil.which("bwrap") is None and not os.environ.get("CI"),
                                 reason="apt-get install bubblewrap")]

EXPLOIT = """python3 - <<'EOF'
import socket
for host, port in {targets!r}:
    try:
        s = socket.create_connection((host, port), timeout=3)
        s.sendall(b'KEYS *\\r\\n')  # read-only: a regression must not change the shared test Redis
        print(host, port, 'REACHED', s.recv(100))
    except OSError as exc:
        print(host, port, 'UNREACHABLE', exc.errno)
    try:
        p = socket.create_connection(('127.0.0.1', 3128), timeout=3)
        p.sendall(b'CONNECT %s:%d HTTP/1.1\\r\\n\\r\\n' % (host.encode(), port))
        print(host, port, 'PROXY', p.recv(200).split(b'\\r\\n')[0].decode())
    except OSError as exc:
        print(host, port, 'PROXY', 'NONE', exc.errno)
EOF"""


@pytest.fixture(scope="module")
def stack(fake_model):
    with Stack(model_url=fake_model.base_url, env_overrides={"RATE_LIMIT_PER_MINUTE": "0"}) as s:
        s.data_dir.chmod(0o711)  # a root worker hands commands to TERMINAL_SANDBOX_UID, which must pass
        s.start_api()
        yield s


def terminal_output(stack: Stack, model, key: str, prompt: str, command: str) -> str:
    model.on(prompt, tool_call([("terminal", {"command": command, "timeout": 60})]), text(f"done {prompt}"))
    with stack.client(key) as c:
        session = c.post("/v1/sessions", json={}).raise_for_status().json()
        turn = c.post(f"/v1/sessions/{session['id']}/turns", json={"input": prompt}).raise_for_status().json()
        assert wait_for_turn(c, turn["id"], timeout=90)["status"] == "completed", stack.logs()
        messages = c.get(f"/v1/sessions/{session['id']}/messages").raise_for_status().json()["data"]
    tool = next(m for m in messages if m["role"] == "tool")
    content = tool["content"]
    return json.loads(content)["output"] if content.lstrip().startswith("{") else content


@pytest.mark.parametrize("network", ["true", "false"])
def test_a_users_terminal_reaches_neither_redis_nor_the_api_nor_a_host_port(stack, model, network):
    """Reproduction: from a user's terminal, `socket.connect(('127.0.0.1', <redis port>))` then `KEYS *` listed
    every user's turn streams (seen failing: the old launcher's sandbox got the test Redis's keys and the api's
    400). Now nothing is reached directly, and the proxy (network on) refuses all three with a 403."""
    worker = stack.start_worker(f"worker-net-{network}", TERMINAL_NETWORK=network, APPROVAL_MODE="off")
    listener = socket.create_server(("127.0.0.1", 0))
    try:
        redis = urlsplit(stack.redis_url)
        targets = [(redis.hostname, redis.port or 6379), ("127.0.0.1", stack.api_port),
                   ("127.0.0.1", listener.getsockname()[1])]
        key = stack.create_user(f"e2e-net-{network}")
        output = terminal_output(stack, model, key, f"probe the house {network}", EXPLOIT.format(targets=targets))
    finally:
        listener.close()
        worker.stop()
    lines = output.strip().splitlines()
    direct = [line for line in lines if " REACHED " in line or " UNREACHABLE " in line]
    proxied = [line.split(" PROXY ", 1)[1] for line in lines if " PROXY " in line]
    assert len(direct) == 3 and all("UNREACHABLE" in line for line in direct), output
    expected = "HTTP/1.1 403 Forbidden" if network == "true" else "NONE 111"
    assert proxied == [expected] * 3, output
