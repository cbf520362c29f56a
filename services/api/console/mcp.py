"""Console page for MCP servers: the user's own and the owner's, each with its state, tool count and last
error; add (a command line, or a URL), test now, remove. The same file store and health as /v1/mcp/servers."""

from __future__ import annotations

import shlex

from fastapi import APIRouter, Request
from pydantic import ValidationError

from services.api.console.actions import attempt, invalid
from services.api.console.deps import ConsoleForm, ConsoleUser, redirect
from services.api.console.render import render
from services.api.routes import mcp as servers
from shared.errors import NotFound
from shared.files import mcp_servers
from shared.mcp import health
from shared.messaging.connections import get_redis
from shared.mcp.servers import McpServerIn

router = APIRouter(include_in_schema=False)


@router.get("/mcp")
def mcp_page(request: Request, user: ConsoleUser):
    settings = request.app.state.settings
    return render(request, "mcp.html", active="mcp", servers=servers.listing(settings, get_redis(settings), user.id))


@router.post("/mcp/servers")
def add_server(request: Request, user: ConsoleUser, form: ConsoleForm):
    state = request.app.state
    try:
        body = McpServerIn.model_validate(_fields(form))
    except ValidationError as exc:
        return redirect(request, "/mcp", f"Not accepted: {invalid(exc)}", "alert")
    except ValueError as exc:
        return redirect(request, "/mcp", f"Not accepted: {exc}", "alert")

    def add() -> None:
        servers.add(state.settings, get_redis(state.settings), state.enqueue, user.id, body)

    return attempt(request, "/mcp", add, "Added: a worker is connecting to it.")


@router.post("/mcp/servers/{name}/{action}")
def act(request: Request, name: str, action: str, user: ConsoleUser, form: ConsoleForm):
    """test (connect now) any server the user may call, or remove one of their own."""
    state = request.app.state
    if action == "test":
        def test() -> None:
            mcp_servers.find(state.settings.data_dir, user.id, name)
            servers.ask_probe(state.enqueue, user.id, name)
        return attempt(request, "/mcp", test, "Testing: reload in a moment for the result.")
    if action == "remove":
        def remove() -> None:
            mcp_servers.remove(state.settings.data_dir, user.id, name)
            health.forget(get_redis(state.settings), user.id, name)
        return attempt(request, "/mcp", remove, "Removed.")
    raise NotFound("No such action.")


def _fields(form: dict[str, str]) -> dict:
    """The form as the API's body: a command line split like a shell would, or a URL."""
    data: dict = {"name": form.get("name", "").strip()}
    if form.get("command", "").strip():
        data["command"] = shlex.split(form["command"])
    if form.get("url", "").strip():
        data["url"] = form["url"].strip()
    return data
