"""`hstack search QUERY`: search your stored conversations through the api."""

from __future__ import annotations

import argparse
from typing import TextIO

from services.cli.client import ApiClient

SNIPPET_CHARS = 200


def add_parser(commands, client_options: list[argparse.ArgumentParser]) -> None:
    """The `search` subcommand."""
    search = commands.add_parser("search", parents=client_options, help="search your past conversations")
    search.add_argument("query", nargs="+", help='words or a question; "phrase", prefix*, AND, OR, NOT work')
    search.add_argument("--key", help="your API key (default: HSTACK_API_KEY)")
    search.add_argument("--limit", type=int, default=10, help="most hits to show (1-100, default 10)")
    search.add_argument("--session", help="only this session")


def run(client: ApiClient, args: argparse.Namespace, out: TextIO) -> int:
    """One line per hit, best first: when, who, session, and the start of the message."""
    params = {"q": " ".join(args.query), "limit": args.limit}
    if args.session:
        params["session_id"] = args.session
    hits = client.get("/v1/search", **params)["data"]
    if not hits:
        out.write("No matching messages.\n")
    for hit in hits:
        text = " ".join(hit["content"].split())
        if len(text) > SNIPPET_CHARS:
            text = text[: SNIPPET_CHARS - 1] + "…"
        out.write(f"{hit['created_at'][:16].replace('T', ' ')}  {hit['role']:<9} {hit['session_id']}  {text}\n")
    return 0
