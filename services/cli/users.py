"""`hstack users create|list` and `hstack keys create|list|revoke`: admin operations over the api."""

from __future__ import annotations

import argparse
from typing import TextIO

from services.cli.client import ApiClient, CliError

KEY_WARNING = "Store this key now: it is shown once and cannot be recovered (issue another with `hstack keys create`)."


def _users(client: ApiClient) -> list[dict]:
    body = client.get("/v1/users")
    return body.get("data", []) if isinstance(body, dict) else body


def resolve_user(client: ApiClient, id_or_name: str) -> dict:
    """A user by id or by name, from GET /v1/users."""
    for user in _users(client):
        if id_or_name in (user.get("id"), user.get("name")):
            return user
    raise CliError(f"No user {id_or_name!r} (see `hstack users list`).")


def print_key(out: TextIO, user: dict, issued: dict) -> None:
    out.write(f"API key for {user['name']} ({user['id']}):\n  {issued['key']}\n{KEY_WARNING}\n")


def create_user(client: ApiClient, name: str, out: TextIO) -> int:
    """Create a user and issue its first key."""
    user = client.post("/v1/users", {"name": name})
    issued = client.post(f"/v1/users/{user['id']}/keys")
    out.write(f"Created user {user['name']} with id {user['id']}.\n")
    print_key(out, user, issued)
    return 0


def set_timezone(client: ApiClient, id_or_name: str, zone: str, out: TextIO) -> int:
    """Set the zone a user's scheduled jobs are read in ('server': the server's own)."""
    user = client.patch(f"/v1/users/{id_or_name}", {"timezone": None if zone == "server" else zone})
    out.write(f"{user['name']}: scheduled jobs read in {user['timezone'] or 'the server time zone'}.\n")
    return 0


def list_users(client: ApiClient, out: TextIO) -> int:
    users = _users(client)
    if not users:
        out.write("No users yet: create one with `hstack users create NAME`.\n")
        return 0
    width = max(len(u["id"]) for u in users)
    for user in users:
        out.write(f"{user['id'].ljust(width)}  {user['name']}  {str(user.get('created_at', ''))[:19]}\n")
    return 0


def create_key(client: ApiClient, id_or_name: str, out: TextIO) -> int:
    """Issue another key for a user named by id or name."""
    user = resolve_user(client, id_or_name)
    issued = client.post(f"/v1/users/{user['id']}/keys")
    print_key(out, user, issued)
    return 0


def _keys(client: ApiClient, user_id: str) -> list[dict]:
    return client.get(f"/v1/users/{user_id}/keys")["data"]


def list_keys(client: ApiClient, id_or_name: str, out: TextIO) -> int:
    """A user's keys: id, the prefix it starts with, when issued, and whether revoked (never the key)."""
    user = resolve_user(client, id_or_name)
    for key in _keys(client, user["id"]):
        state = f"revoked {key['revoked_at'][:19]}" if key.get("revoked_at") else "active"
        out.write(f"{key['id']}  {key['prefix']}...  {key['created_at'][:19]}  {state}\n")
    return 0


def _owner(client: ApiClient, key_id: str) -> dict:
    """The user holding a key: one lookup by the key's id, then its owner."""
    try:
        key = client.get(f"/v1/admin/keys/{key_id}")
    except CliError as exc:
        if "HTTP 404" not in str(exc):
            raise
        raise CliError(f"No key {key_id!r} (see `hstack keys list USER`).") from None
    return resolve_user(client, key["user_id"])


def revoke_key(client: ApiClient, key_id: str, id_or_name: str | None, out: TextIO) -> int:
    """Revoke a key by id; every api process refuses it from the next request on."""
    user = resolve_user(client, id_or_name) if id_or_name else _owner(client, key_id)
    key = client.delete(f"/v1/users/{user['id']}/keys/{key_id}")
    out.write(f"Revoked key {key['id']} ({key['prefix']}...) of {user['name']}: it no longer authenticates.\n")
    return 0


def run_keys(client: ApiClient, args: argparse.Namespace, out: TextIO) -> int:
    """`hstack keys ACTION`."""
    if args.action == "list":
        return list_keys(client, args.user, out)
    if args.action == "revoke":
        return revoke_key(client, args.key_id, args.user, out)
    return create_key(client, args.user, out)
