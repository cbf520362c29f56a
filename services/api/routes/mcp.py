"""MCP servers: a user manages their own, the owner (admin key) those everyone may call; each with its health.

A user's listing shows the owner's servers too (read-only to them, `"scope": "global"`). Health is what a
worker last saw (shared/mcp/health.py); `POST …/{name}/test` asks a worker to connect now.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response

from services.api.deps import Credentials, Enqueue, EnqueueDep, SettingsDep, RedisDep, current_user, matches_secret
from services.api.schemas import error_responses
from shared.errors import Conflict, Forbidden
from shared.files import mcp_servers
from shared.mcp import health
from shared.mcp.servers import McpServerIn, McpServerPublic
from shared.queue.names import PROBE_MCP_SERVER
from shared.queue.payloads import ProbeMcpServer

router = APIRouter(prefix="/v1/mcp/servers", tags=["mcp"], responses=error_responses(401, 422))


async def scope_of(request: Request, settings: SettingsDep, credentials: Credentials) -> str:
    """"global" for the admin key, else the calling user's id (401 for anything else)."""
    if credentials is not None and matches_secret(credentials.credentials, settings.admin_api_key):
        return mcp_servers.GLOBAL
    user = await current_user(request, settings, request.app.state.db, credentials)
    return user.id


def listing(settings, r, scope: str) -> list[McpServerPublic]:
    """The servers `scope` may call, each with its health (the console's page shows the same)."""
    return [McpServerPublic.of(s, where, health.read(r, where, s.name))
            for where, s in mcp_servers.servers_for(settings.data_dir, scope)]


def add(settings, r, enqueue: Enqueue, scope: str, body: McpServerIn) -> None:
    """Add a server to `scope` (409 when the owner has one of that name) and ask a worker to connect to it."""
    if scope != mcp_servers.GLOBAL and any(s.name == body.name for s in mcp_servers.load(settings.data_dir,
                                                                                            mcp_servers.GLOBAL)):
        raise Conflict(f"The owner already configured an MCP server named {body.name!r}.")
    mcp_servers.add(settings.data_dir, scope, body, max_servers=settings.mcp_max_servers)
    health.forget(r, scope, body.name)
    health.record(r, scope, body.name, "starting")  # until the worker asked below records what it found
    ask_probe(enqueue, scope, body.name)


def ask_probe(enqueue: Enqueue, scope: str, name: str) -> None:
    """Ask a worker to connect to the server now and record its health."""
    enqueue(PROBE_MCP_SERVER, ProbeMcpServer(server=name, user_id=None if scope == mcp_servers.GLOBAL else scope))


@router.get("", response_model=list[McpServerPublic])
def list_servers(settings: SettingsDep, r: RedisDep, scope: str = Depends(scope_of)) -> list[McpServerPublic]:
    """The caller's servers with state, tool count and last error (a user sees the owner's too)."""
    return listing(settings, r, scope)


@router.post("", status_code=201, response_model=McpServerPublic, responses=error_responses(409))
def add_server(body: McpServerIn, settings: SettingsDep, r: RedisDep, enqueue: EnqueueDep,
               scope: str = Depends(scope_of)) -> McpServerPublic:
    """Add a server; a worker connects to it at once and records its health."""
    add(settings, r, enqueue, scope, body)
    return McpServerPublic.of(body, scope, health.read(r, scope, body.name))


@router.delete("/{name}", status_code=204, responses=error_responses(403, 404))
def remove_server(name: str, settings: SettingsDep, r: RedisDep, scope: str = Depends(scope_of)) -> Response:
    """Forget one of the caller's servers (the owner's are removed with the admin key only)."""
    if scope != mcp_servers.GLOBAL and name not in {s.name for s in mcp_servers.load(settings.data_dir, scope)} \
            and name in {s.name for s in mcp_servers.load(settings.data_dir, mcp_servers.GLOBAL)}:
        raise Forbidden("This MCP server is the owner's: only the admin key removes it.")
    mcp_servers.remove(settings.data_dir, scope, name)
    health.forget(r, scope, name)
    return Response(status_code=204)


@router.post("/{name}/test", status_code=202, response_model=McpServerPublic, responses=error_responses(404))
def test_server(name: str, settings: SettingsDep, r: RedisDep, enqueue: EnqueueDep,
                scope: str = Depends(scope_of)) -> McpServerPublic:
    """Ask a worker to connect now; the answer is the health before it, `checked_at` changes when it is done."""
    where, server = mcp_servers.find(settings.data_dir, scope, name)
    ask_probe(enqueue, scope, name)
    return McpServerPublic.of(server, where, health.read(r, where, name))
