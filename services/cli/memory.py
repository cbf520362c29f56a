"""`hstack memory show|add|remove`: a user's MEMORY.md and USER.md, through the api."""

from __future__ import annotations

import argparse
from typing import TextIO

from services.cli.client import ApiClient

HEADERS = {"memory": "MEMORY (your personal notes)", "user": "USER PROFILE (who the user is)"}


def add_parser(commands, client_options: list[argparse.ArgumentParser]) -> None:
    """The `memory` subcommand and its actions."""
    actions = commands.add_parser("memory", help="show and edit your memory (MEMORY.md, USER.md)").add_subparsers(
        dest="action", required=True, metavar="ACTION")
    key = argparse.ArgumentParser(add_help=False)
    key.add_argument("--key", help="your API key (default: HSTACK_API_KEY)")
    target = argparse.ArgumentParser(add_help=False)
    target.add_argument("--target", choices=("memory", "user"), default="memory",
                        help="memory (the agent's notes, default) or user (your profile)")
    show = actions.add_parser("show", parents=[*client_options, key], help="print the entries and their usage")
    show.add_argument("--target", choices=("memory", "user"), help="only this store (default: both)")
    add = actions.add_parser("add", parents=[*client_options, key, target], help="add an entry")
    add.add_argument("text")
    remove = actions.add_parser("remove", parents=[*client_options, key, target],
                                help="remove the one entry containing this text")
    remove.add_argument("old_text", metavar="TEXT")


def run(client: ApiClient, args: argparse.Namespace, out: TextIO) -> int:
    if args.action == "show":
        return show(client, args.target, out)
    body = {"action": args.action, "target": args.target}
    body.update({"content": args.text} if args.action == "add" else {"old_text": args.old_text})
    result = client.post("/v1/memory", body)
    count = result["entry_count"]
    out.write(f"{result['message']} {HEADERS[args.target]}: {result['usage']}, "
              f"{count} {'entry' if count == 1 else 'entries'}.\n")
    return 0


def show(client: ApiClient, only: str | None, out: TextIO) -> int:
    """Each store's header with its usage, then its entries numbered."""
    view = client.get("/v1/memory")
    for target in (only,) if only else ("memory", "user"):
        store = view[target]
        out.write(f"{HEADERS[target]} [{store['percent']}% — {store['chars']:,}/{store['limit']:,} chars]\n")
        if not store["entries"]:
            out.write("  (empty)\n")
        for number, entry in enumerate(store["entries"], start=1):
            out.write(f"{number:>3}. " + entry.replace("\n", "\n     ") + "\n")
    return 0
