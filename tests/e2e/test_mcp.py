"""MCP servers through the real api and worker, with a tiny server written with the official SDK.

The HTTP server runs on loopback, which MCP_ALLOW lets through; the stdio server is staged into its user's
workspace and started by the worker in that user's sandbox. The scripted model loads the server's tools,
calls one, and answers with what the tool returned.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.fakes.mcp_stage import stage
from tests.fakes.model import text, tool_call
from tests.support.mcp_servers import HttpServer
from tests.support.processes import ROOT, Stack, wait_for_turn

pytestmark = [pytest.mark.e2e, pytest.mark.once]


def answer_with_last_result(body: dict):
    """The model's answer quotes the latest tool result, so the answer shows what the server returned."""
    results = [m["content"] for m in body["messages"] if m.get("role") == "tool"]
    return text(f"The tool said: {results[-1]}")


@pytest.fixture(scope="module")
def stack(fake_model):
    s = Stack(model_url=fake_model.base_url, env_overrides={
        "MCP_ALLOW": "127.0.0.1", "MCP_RECONNECT_BASE_SECONDS": "0", "APPROVAL_MODE": "manual"})
    with s:
        s.start_api()
        s.start_worker()
        yield s


@pytest.fixture
def http_server():
    server = HttpServer().start()
    yield server
    server.kill()


def new_user(stack: Stack, name: str) -> tuple[str, str]:
    """(user id, key) of a new user."""
    with stack.client() as admin:
        user = admin.post("/v1/users", json={"name": name}).raise_for_status().json()
        key = admin.post(f"/v1/users/{user['id']}/keys").raise_for_status().json()["key"]
    return user["id"], key


def turn(stack: Stack, key: str, session_id: str, words: str, statuses=("completed", "failed", "cancelled")) -> dict:
    with stack.client(key) as c:
        posted = c.post(f"/v1/sessions/{session_id}/turns", json={"input": words}).raise_for_status().json()
        return wait_for_turn(c, posted["id"], timeout=90, statuses=statuses)


def tool_results(stack: Stack, key: str, session_id: str) -> list[str]:
    with stack.client(key) as c:
        messages = c.get(f"/v1/sessions/{session_id}/messages?limit=200").raise_for_status().json()["data"]
    return [m["content"] for m in messages if m["role"] == "tool"]


def hstack_mcp(stack: Stack, key: str, *args: str) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-m", "services.cli.main", "mcp", *args, "--mine", "--key", key,
                           "--url", stack.base_url], capture_output=True, text=True, cwd=ROOT, env=stack.env, timeout=120)
    return done.returncode, done.stdout + done.stderr


def hstack_mcp_list(stack: Stack, key: str) -> str:
    code, out = hstack_mcp(stack, key, "list")
    assert code == 0, out
    return out


def test_an_http_server_is_called_goes_down_is_shown_down_and_comes_back(stack, model, http_server):
    _, key = new_user(stack, "mcp-http")
    with stack.client(key) as c:
        added = c.post("/v1/mcp/servers", json={"name": "web", "url": http_server.url}).raise_for_status().json()
        assert (added["name"], added["scope"], added["transport"]) == ("web", "user", "http")
        session = c.post("/v1/sessions", json={}).raise_for_status().json()["id"]
    model.on("echo hello", tool_call([("mcp_tools", {"server": "web"})]),
             tool_call([("mcp_web_echo", {"text": "hello"})]), answer_with_last_result)

    done = turn(stack, key, session, "please echo hello")

    assert done["status"] == "completed"
    assert "echo:hello" in done["output"] and "untrusted-tool-result" in done["output"]
    loaded = json.loads(tool_results(stack, key, session)[0])
    assert loaded["loaded"] == ["mcp_web_echo", "mcp_web_read_path", "mcp_web_write_note"]
    with stack.client(key) as c:
        [web] = c.get("/v1/mcp/servers").raise_for_status().json()
    assert (web["state"], web["tools"], web["last_error"]) == ("ready", 3, None)

    http_server.kill()
    model.on("echo again", tool_call([("mcp_web_echo", {"text": "again"})]), answer_with_last_result)
    down = turn(stack, key, session, "echo again")

    assert "MCP server 'web' is down" in down["output"]
    listed = hstack_mcp_list(stack, key)
    assert "web" in listed and "failed" in listed and "last error:" in listed

    http_server.start()
    model.on("echo back", tool_call([("mcp_web_echo", {"text": "back"})]), answer_with_last_result)
    back = turn(stack, key, session, "echo back")

    assert "echo:back" in back["output"]
    assert " ready " in hstack_mcp_list(stack, key)

    http_server.kill()
    code, out = hstack_mcp(stack, key, "test", "web")  # a worker connects now: the server is down again
    assert code == 1 and "failed" in out and "last error:" in out


def test_a_stdio_server_runs_in_its_users_sandbox_and_a_write_parks_for_approval(stack, model):
    owner_id, key = new_user(stack, "mcp-stdio")
    other_id, _ = new_user(stack, "mcp-other")
    mine = stack.data_dir / "users" / owner_id / "workspace"
    theirs = stack.data_dir / "users" / other_id / "workspace"
    mine.mkdir(parents=True, exist_ok=True)
    theirs.mkdir(parents=True, exist_ok=True)
    (mine / "own.txt").write_text("my own words")
    (theirs / "secret.txt").write_text("the other user's secret")
    argv = stage(mine)
    with stack.client(key) as c:
        c.post("/v1/mcp/servers", json={"name": "local", "command": argv}).raise_for_status()
        session = c.post("/v1/sessions", json={}).raise_for_status().json()["id"]
    model.on("read both", tool_call([("mcp_tools", {"server": "local"})]),
             tool_call([("mcp_local_read_path", {"path": "/workspace/own.txt"}),
                        ("mcp_local_read_path", {"path": str(theirs / "secret.txt")}),
                        ("mcp_local_echo", {"text": "who"})]),
             text("read"))

    done = turn(stack, key, session, "read both files")

    assert done["status"] == "completed"
    own, other, echo = tool_results(stack, key, session)[1:4]
    assert "my own words" in own
    assert "cannot read" in other and "secret" not in other.replace("secret.txt", "")
    assert "(pid 2)" in echo or "(pid 3)" in echo  # a PID namespace of its own: the sandbox, not the worker's

    model.on("note it", tool_call([("mcp_local_write_note", {"text": "buy milk"})]), answer_with_last_result)
    parked = turn(stack, key, session, "note it down", statuses=("awaiting_approval", "completed", "failed"))

    assert parked["status"] == "awaiting_approval"
    assert not (mine / "notes.txt").exists()
    with stack.client(key) as c:
        [question] = c.get("/v1/approvals").raise_for_status().json()["data"]
        assert "a write by an MCP tool" in question["reason"]
        assert question["command"] == 'mcp_local_write_note {"text": "buy milk"}'
        c.post(f"/v1/approvals/{question['id']}", json={"decision": "approve", "scope": "once"}).raise_for_status()
        finished = wait_for_turn(c, parked["id"], timeout=90)

    assert "noted: buy milk" in finished["output"]
    assert (mine / "notes.txt").read_text() == "buy milk\n"
