"""`hstack reviews [--session ID]`: what background reviews decided and wrote, through the api."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from services.cli.client import ApiClient

TEXT_CHARS = 100


def add_parser(commands, client_options: list[argparse.ArgumentParser]) -> None:
    """The `reviews` subcommand."""
    reviews = commands.add_parser("reviews", parents=client_options,
                                  help="background reviews of your sessions and what they wrote")
    reviews.add_argument("--key", help="your API key (default: HSTACK_API_KEY)")
    reviews.add_argument("--session", help="only this session")
    reviews.add_argument("--limit", type=int, default=20, help="most reviews to show (1-100, default 20)")


def run(client: ApiClient, args: argparse.Namespace, out: TextIO) -> int:
    """One header line per review, newest first, then one line per write and the review's last word."""
    params: dict[str, Any] = {"limit": args.limit}
    if args.session:
        params["session_id"] = args.session
    found = client.get("/v1/reviews", **params)["data"]
    if not found:
        out.write("No reviews yet.\n")
    for review in found:
        tokens = review["prompt_tokens"] + review["completion_tokens"]
        out.write(f"{review['id']}  {review['session_id']}  {review['trigger']:<6} {review['status']:<9} "
                  f"{review['created_at'][:16].replace('T', ' ')}  {review['model_calls']} model call(s), "
                  f"{tokens:,} tokens\n")
        for write in review["writes"]:
            out.write(f"  {write['outcome']:<11} {describe(write)}\n")
        if review["error"]:
            out.write(f"  error: {review['error']['code']}: {review['error']['message']}\n")
        elif review["summary"]:
            out.write(f"  said: {_cut(review['summary'])}\n")
    return 0


def describe(write: dict[str, Any]) -> str:
    """A write in a few words: what the call asked for."""
    args = write["arguments"] if isinstance(write["arguments"], dict) else {}
    if write["tool"] == "memory":
        if args.get("operations"):
            return f"memory {len(args['operations'])} operation(s) on {args.get('target', 'memory')}"
        text = args.get("content") or args.get("old_text") or ""
        return f"memory {args.get('action', '?')} {args.get('target', 'memory')}: {_cut(text)}"
    return f"skill_manage {args.get('action', '?')} {args.get('name', '?')}"


def _cut(text: str) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= TEXT_CHARS else flat[: TEXT_CHARS - 1] + "…"
