"""`hstack mcp list|add|remove|test`: MCP servers through the api, the owner's (admin key) or with --mine your own.

`list` shows each server's state, tool count and last error as the workers last saw them; `test` asks a
worker to connect now and waits (bounded) for its answer.
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable, TextIO

from services.cli.client import ApiClient, CliError

SERVERS = "/v1/mcp/servers"
TEST_WAIT_SECONDS = 60.0
POLL_SECONDS = 0.5


def add_parser(commands, client_options: list[argparse.ArgumentParser]) -> None:
    actions = commands.add_parser("mcp", help="MCP servers: list, add, remove, test (the owner's; --mine: yours)"
                                  ).add_subparsers(dest="action", required=True, metavar="ACTION")
    mine = argparse.ArgumentParser(add_help=False)
    mine.add_argument("--mine", action="store_true", help="your own servers (your key), not the owner's (admin key)")
    mine.add_argument("--key", help="your API key with --mine (default: HSTACK_API_KEY)")
    parents = [*client_options, mine]
    actions.add_parser("list", parents=parents, help="servers with state, tool count and last error")
    add = actions.add_parser("add", parents=parents, help="add a stdio server (--command …) or an HTTP one (--server-url)")
    add.add_argument("name")
    add.add_argument("--server-url", dest="server_url", help="a streamable-HTTP server's URL")
    add.add_argument("--header", action="append", default=[], help="NAME=VALUE sent to an HTTP server; repeatable")
    add.add_argument("--env", action="append", default=[], help="NAME=VALUE for a stdio server; repeatable")
    add.add_argument("--command", nargs=argparse.REMAINDER, dest="argv", default=[],
                     help="last: the stdio server's command and its arguments (run in the sandbox)")
    for action, text in (("remove", "forget a server"), ("test", "connect now and show what the server offers")):
        actions.add_parser(action, parents=parents, help=text).add_argument("name")


def run(client: ApiClient, args: argparse.Namespace, out: TextIO, clock: Callable[[], float] = time.monotonic,
        pause: Callable[[float], None] = time.sleep) -> int:
    if args.action == "list":
        servers = client.get(SERVERS)
        out.write("" if servers else "No MCP servers.\n")
        for server in servers:
            out.write(line(server))
    elif args.action == "add":
        out.write(line(client.post(SERVERS, body_of(args))))
    elif args.action == "remove":
        client.delete(f"{SERVERS}/{args.name}")
        out.write(f"removed {args.name}\n")
    else:
        return test(client, args.name, out, clock, pause)
    return 0


def body_of(args: argparse.Namespace) -> dict[str, Any]:
    argv = args.argv
    if bool(args.server_url) == bool(argv):
        raise CliError("give either --server-url URL or --command PROGRAM ARGS… (a stdio server), not both")
    body: dict[str, Any] = {"name": args.name}
    if args.server_url:
        body["url"] = args.server_url
        if args.header:
            body["headers"] = pairs(args.header)
    else:
        body["command"] = argv
        if args.env:
            body["env"] = pairs(args.env)
    return body


def pairs(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise CliError(f"expected NAME=VALUE, got {item!r}")
        out[name] = value
    return out


def test(client: ApiClient, name: str, out: TextIO, clock, pause) -> int:
    """Ask for a connection, then wait until a worker recorded a newer check than the one before."""
    before = client.post(f"{SERVERS}/{name}/test")
    deadline = clock() + TEST_WAIT_SECONDS
    while clock() < deadline:
        now = next((s for s in client.get(SERVERS) if s["name"] == name), None)
        if now is None:
            raise CliError(f"{name} was removed meanwhile")
        if now.get("checked_at") and now["checked_at"] != before.get("checked_at") and now["state"] != "starting":
            out.write(line(now))
            return 0 if now["state"] == "ready" else 1
        pause(POLL_SECONDS)
    out.write(line(before))
    raise CliError(f"no worker answered within {TEST_WAIT_SECONDS:g} s (is a worker running?)")


def line(server: dict[str, Any]) -> str:
    where = server.get("url") or " ".join(server.get("command") or [])
    text = f"{server['name']:<16} {server['state']:<8} {server['tools']:>3} tools  {server['scope']:<6} {where[:60]}"
    if server.get("last_error"):
        text += f"\n    last error: {server['last_error']}"
    return text + "\n"
