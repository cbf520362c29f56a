"""`hstack pairing list|approve|deny|clear|revoke` and `hstack webhooks create|list|delete`: the operator's gateway commands."""

from __future__ import annotations

import argparse
from typing import TextIO

from services.cli.client import ApiClient

SECRET_WARNING = "Store this secret now: it is shown once (sign requests with it; delete and create to rotate)."


def add_parsers(commands, client: list[argparse.ArgumentParser]) -> None:
    pairing = commands.add_parser("pairing", help="who may talk to the agent on chat platforms (admin)")
    sub = pairing.add_subparsers(dest="action", required=True, metavar="ACTION")
    sub.add_parser("list", parents=client, help="pending pairing requests and bound identities")
    approve = sub.add_parser("approve", parents=client, help="bind the holder of a pairing code to a user")
    approve.add_argument("platform", help="e.g. telegram")
    approve.add_argument("code", help="the code the bot gave them (any case)")
    approve.add_argument("--user", help="an existing user (default: a new user named after them)")
    deny = sub.add_parser("deny", parents=client, help="refuse a pending request: by code, request id or user id")
    deny.add_argument("platform", help="e.g. telegram")
    named = deny.add_mutually_exclusive_group(required=True)
    named.add_argument("code", nargs="?", help="the code the bot gave them")
    named.add_argument("--id", dest="request_id", help="the request's id (from `hstack pairing list`)")
    named.add_argument("--platform-user", dest="platform_user_id", help="their id on the platform")
    clear = sub.add_parser("clear", parents=client, help="refuse every pending request (of one platform)")
    clear.add_argument("platform", nargs="?", help="only this platform (default: all)")
    revoke = sub.add_parser("revoke", parents=client, help="unbind a platform identity")
    revoke.add_argument("platform")
    revoke.add_argument("platform_user_id")

    hooks = commands.add_parser("webhooks", help="signed inbound webhook routes of the gateway (admin)")
    sub = hooks.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = sub.add_parser("create", parents=client, help="a route acting for a user; prints its secret once")
    create.add_argument("name")
    create.add_argument("--user", required=True, help="the user the route's turns belong to (id or name)")
    create.add_argument("--callback", help="URL the reply is POSTed to, signed like the request")
    create.add_argument("--deliver", help="also send the reply to a chat: telegram:CHAT_ID")
    create.add_argument("--toolsets", default="", help="toolsets its turns get beyond the read-only tools "
                                                       "(comma list: terminal, memory, files, skills, ...)")
    sub.add_parser("list", parents=client, help="the routes (never their secrets)")
    delete = sub.add_parser("delete", parents=client, help="delete a route")
    delete.add_argument("name")


def run_pairing(client: ApiClient, args: argparse.Namespace, out: TextIO) -> int:
    if args.action == "approve":
        body = {"platform": args.platform, "code": args.code, **({"user": args.user} if args.user else {})}
        bound = client.post("/v1/admin/pairing/approve", body)
        out.write(f"Approved: {bound['platform']} user {bound['platform_user_id']} ({bound['display_name'] or '-'}) "
                  f"is now {bound['user_name']} ({bound['user_id']}).\n")
        return 0
    if args.action == "deny":
        named = {k: getattr(args, k) for k in ("code", "request_id", "platform_user_id") if getattr(args, k)}
        gone = client.post("/v1/admin/pairing/deny", {"platform": args.platform, **named})
        out.write(f"Denied: {gone['platform']} user {gone['platform_user_id']} ({gone['display_name'] or '-'}).\n")
        return 0
    if args.action == "clear":
        pending = [p for p in client.get("/v1/admin/pairing")["pending"]
                   if args.platform in (None, p["platform"])]
        for p in pending:
            client.post("/v1/admin/pairing/deny", {"platform": p["platform"], "request_id": p["id"]})
        out.write(f"Denied {len(pending)} pending request(s).\n")
        return 0
    if args.action == "revoke":
        gone = client.post("/v1/admin/pairing/revoke",
                           {"platform": args.platform, "platform_user_id": args.platform_user_id})
        out.write(f"Revoked: {gone['platform']} user {gone['platform_user_id']} no longer reaches {gone['user_name']}.\n")
        return 0
    listing = client.get("/v1/admin/pairing")
    out.write("Pending codes:\n" if listing["pending"] else "No pending pairing codes.\n")
    for p in listing["pending"]:
        out.write(f"  {p['id']:<24} {p['platform']:<9} {p['platform_user_id']:<14} {p['display_name'] or '-':<20} "
                  f"expires {p['expires_at'][:19]}\n")
    out.write("Bound:\n" if listing["bound"] else "Nobody is bound yet.\n")
    for b in listing["bound"]:
        out.write(f"  {b['platform']:<9} {b['platform_user_id']:<14} {b['display_name'] or '-':<20} "
                  f"→ {b['user_name']}\n")
    return 0


def run_webhooks(client: ApiClient, args: argparse.Namespace, out: TextIO) -> int:
    if args.action == "create":
        body = {"name": args.name, "user": args.user, "callback_url": args.callback, "deliver": args.deliver,
                "toolsets": args.toolsets}
        route = client.post("/v1/admin/webhooks", body)
        out.write(f"Created webhook route {route['name']}: POST /webhooks/{route['name']} on the gateway port.\n"
                  f"Secret:\n  {route['secret']}\n{SECRET_WARNING}\n")
        if route.get("warning"):
            out.write(f"Warning: {route['warning']}\n")
        return 0
    if args.action == "delete":
        client.delete(f"/v1/admin/webhooks/{args.name}")
        out.write(f"Deleted webhook route {args.name}.\n")
        return 0
    routes = client.get("/v1/admin/webhooks")
    if not routes:
        out.write("No webhook routes: create one with `hstack webhooks create NAME --user USER`.\n")
    for r in routes:
        out.write(f"{r['name']:<20} user {r['user_id']}  callback {r['callback_url'] or '-'}  "
                  f"deliver {r['deliver'] or '-'}  tools {route_tools(r['toolsets'])}\n")
    return 0


def route_tools(toolsets: str) -> str:
    """What a route's turns may use: the read-only tools, plus the toolsets it adds (WEBHOOK_TOOLSETS adds more)."""
    return "read-only" + "".join(f"+{name}" for name in toolsets.split(",") if name)
