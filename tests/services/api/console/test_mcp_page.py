"""/mcp: the user's MCP servers and the owner's with state, tool count and last error; add, test, remove."""

from __future__ import annotations

from shared.files import mcp_servers
from shared.mcp import health
from shared.mcp.servers import McpServerIn
from shared.messaging.connections import get_redis
from shared.queue.names import PROBE_MCP_SERVER
from tests.services.api.console.conftest import Browser
from tests.support.factories import make_user


def test_the_page_adds_shows_health_tests_and_removes_a_server(signed_in: Browser, user, settings, enqueued):
    added = signed_in.post_form("/mcp", "/mcp/servers", {"name": "files", "command": "npx -y 'server fs' /workspace"})
    assert added.status_code == 303
    [(scope, server)] = mcp_servers.servers_for(settings.data_dir, user.id)
    assert (scope, server.command) == (user.id, ["npx", "-y", "server fs", "/workspace"])
    assert [p for n, p, _ in enqueued.calls if n == PROBE_MCP_SERVER] == [{"server": "files", "user_id": user.id}]

    health.record(get_redis(settings), user.id, "files", "failed", error="it said: <b>npx</b> not found")
    page = signed_in.get("/mcp").text
    assert "<strong>files</strong>" in page and "badge-failed" in page
    assert "Last error: it said: &lt;b&gt;npx&lt;/b&gt; not found" in page

    assert signed_in.post_form("/mcp", "/mcp/servers/files/test", {}).status_code == 303
    assert len([n for n, _, _ in enqueued.calls if n == PROBE_MCP_SERVER]) == 2
    assert signed_in.post_form("/mcp", "/mcp/servers/files/remove", {}).status_code == 303
    assert mcp_servers.servers_for(settings.data_dir, user.id) == []


def test_a_bad_server_is_said_on_the_page_and_another_users_server_cannot_be_touched(signed_in: Browser, db,
                                                                                       settings, user):
    answer = signed_in.post_form("/mcp", "/mcp/servers", {"name": "Bad Name", "command": "x"})
    assert answer.status_code == 303
    assert "Not accepted: name" in signed_in.get(answer.headers["location"]).text
    other = make_user(db)
    mcp_servers.add(settings.data_dir, other.id, McpServerIn(name="theirs", command=["x"]), max_servers=5)
    assert "theirs" not in signed_in.get("/mcp").text
    assert signed_in.post_form("/mcp", "/mcp/servers/theirs/remove", {}).status_code == 404
    assert signed_in.post_form("/mcp", "/mcp/servers/theirs/test", {}).status_code == 404
    assert [s.name for _, s in mcp_servers.servers_for(settings.data_dir, other.id)] == ["theirs"]
