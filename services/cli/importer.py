"""`hstack import hermes PATH --user NAME`: a Hermes Agent home's history, memory and skills, for one user.

An operator command like `hstack migrate`: it runs here, against the database and DATA_DIR, through
the stores. Idempotent: a ledger keyed by the source's own ids makes a second run add nothing (and a
later run add only what is new). Memory entries go through the memory tool's rules and limits; what
does not fit is printed in full, never dropped silently.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from services.cli.client import CliError
from services.cli.local import open_local_database


def add_parser(commands) -> None:
    """`hstack import hermes PATH --user NAME`."""
    sources = commands.add_parser("import", help="import another agent's data for a user (runs locally, like "
                                  "migrate)").add_subparsers(dest="source", required=True, metavar="SOURCE")
    hermes_cmd = sources.add_parser("hermes", help="a Hermes Agent home: sessions, MEMORY.md and USER.md, "
                                    "agent-created skills")
    hermes_cmd.add_argument("path", type=Path, help="the Hermes Agent home directory (usually ~/.hermes)")
    hermes_cmd.add_argument("--user", required=True, help="the user (name or id) who receives the data")


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Migrate, find the user, then import; the stores load only now, so `hstack --help` stays quick."""
    from shared.errors import NotFound
    from shared.stores import users
    from services.cli import hermes_home as hermes
    from services.cli.hermes_import import HermesImport

    settings, db = open_local_database()
    try:
        user = users.find_user(db, args.user)
    except NotFound as exc:
        raise CliError(f"{exc.message} Create it first with `hstack users create NAME`.") from exc
    home = hermes.check_home(args.path.expanduser())
    out.write(f"Importing {home} for user {user.name} ({user.id}).\n")
    HermesImport(db, settings, user.id, home, out).run()
    return 0
