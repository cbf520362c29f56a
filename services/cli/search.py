"""`hstack search QUERY`: search your stored conversations through the api.

`hstack search backfill-embeddings` works on this machine's database instead: it embeds every stored message
that has no provider embedding yet (EMBEDDINGS_MODEL), with a progress bar; new messages are embedded after
each turn by the reviewer, so this is for the history stored before, or after a change of model.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TextIO

from services.cli.client import ApiClient, CliError

SNIPPET_CHARS = 200
BACKFILL = "backfill-embeddings"
BAR_WIDTH = 30


def add_parser(commands, client_options: list[argparse.ArgumentParser]) -> None:
    """The `search` subcommand."""
    search = commands.add_parser("search", parents=client_options, help="search your past conversations",
                                 epilog=f"`hstack search {BACKFILL}` embeds the stored history for hybrid search "
                                        "(EMBEDDINGS_MODEL; on this machine's database)")
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


def is_backfill(args: argparse.Namespace) -> bool:
    """`hstack search backfill-embeddings`: the local backfill, not a search for those words."""
    return args.command == "search" and args.query == [BACKFILL]


def run_backfill(args: argparse.Namespace, out: TextIO, bar: TextIO | None = None) -> int:
    """Embed every message lacking a provider embedding, drawing a progress bar on `bar`; prints the total."""
    from services.cli.local import open_local_database
    from shared.errors import ModelError
    from shared.search import embeddings as search_embeddings

    settings, db = open_local_database()
    if not search_embeddings.configured(settings):
        raise CliError("EMBEDDINGS_MODEL is not set: there is no provider to embed with (see .env.example)")
    from shared.stores import message_embeddings

    total = message_embeddings.count_missing(db, settings.embeddings_model.strip())
    progress = Progress(total, bar or sys.stderr)
    try:
        done = search_embeddings.backfill(db, settings, progress.advance)
    except ModelError as exc:
        progress.end()
        raise CliError(f"{exc.message} (run it again to go on: what was stored stays)") from exc
    progress.end()
    out.write(f"embedded {done} message(s) with {settings.embeddings_model.strip()}\n")
    return 0


class Progress:
    """A one-line text bar: `[#####.....]  1,200/4,000 messages  30%  85/s`, redrawn at most 10 times a second."""

    def __init__(self, total: int, out: TextIO) -> None:
        self.total, self.out, self.done = total, out, 0
        self.started = self.drawn = time.monotonic()
        self._draw()

    def advance(self, count: int) -> None:
        self.done += count
        now = time.monotonic()
        if now - self.drawn >= 0.1 or self.done >= self.total:
            self.drawn = now
            self._draw()

    def end(self) -> None:
        self._draw()
        self.out.write("\n")
        self.out.flush()

    def _draw(self) -> None:
        share = min(1.0, self.done / self.total) if self.total else 1.0
        filled = int(share * BAR_WIDTH)
        rate = self.done / max(1e-9, time.monotonic() - self.started)
        self.out.write(f"\r[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {self.done:,}/{self.total:,} messages "
                       f"{share:4.0%}  {rate:,.0f}/s")
        self.out.flush()
