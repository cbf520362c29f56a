"""Your data from the command line: `hstack sessions`, `hstack export`, `hstack backup`, `hstack restore`.

`sessions` acts for one user through the api (their key); `export`, `backup` and `restore` are operator
commands that work on this machine's database and DATA_DIR, like `hstack migrate`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from services.cli.client import ApiClient, CliError


def add_parsers(commands, client_options: list[argparse.ArgumentParser]) -> None:
    """The `sessions`, `export`, `backup` and `restore` subcommands."""
    sessions = commands.add_parser("sessions", help="list, export or delete your conversations").add_subparsers(
        dest="action", required=True, metavar="ACTION")
    for name, text in (("list", "your sessions, newest first"), ("delete", "forget a session everywhere it is kept"),
                       ("export", "one session as JSON, Markdown or HTML")):
        action = sessions.add_parser(name, parents=client_options, help=text)
        action.add_argument("--key", help="your API key (default: HSTACK_API_KEY)")
        if name != "list":
            action.add_argument("session_id")
    sessions.choices["delete"].add_argument("--yes", action="store_true", help="do not ask for confirmation")
    sessions.choices["export"].add_argument("--format", choices=("json", "md", "html"), default="md")
    sessions.choices["export"].add_argument("--out", type=Path, help="write here instead of standard output")

    export = commands.add_parser("export", help="one archive of a user's sessions, memory, skills and workspace "
                                 "(runs locally)")
    export.add_argument("--user", required=True, help="the user's name or id")
    export.add_argument("--out", type=Path, help="the archive to write (default: <user>-export.tar.gz)")
    backup = commands.add_parser("backup", help="a consistent archive of the whole server, taken while it runs "
                                 "(runs locally)")
    backup.add_argument("file", type=Path)
    restore = commands.add_parser("restore", help="restore a backup into an empty DATA_DIR, then migrate "
                                  "(runs locally; stop the stack first)")
    restore.add_argument("file", type=Path)
    restore.add_argument("--force", action="store_true", help="replace a DATA_DIR or database that is not empty")


def run_sessions(client: ApiClient, args: argparse.Namespace, out: TextIO, answer=input) -> int:
    if args.action == "list":
        for row in client.get("/v1/sessions", limit=100)["data"]:
            out.write(f"{row['id']}  {row['created_at'][:16].replace('T', ' ')}  {row['title'] or '(untitled)'}\n")
        return 0
    if args.action == "export":
        body = client.text(f"/v1/sessions/{args.session_id}/export?format={args.format}")
        if args.out:
            args.out.write_text(body, encoding="utf-8")
            out.write(f"wrote {args.out}\n")
        else:
            out.write(body)
        return 0
    if not args.yes and answer(f"Delete session {args.session_id} and everything kept of it? [y/N] ").strip().lower() \
            not in ("y", "yes"):
        out.write("Nothing deleted.\n")
        return 1
    done = client.delete(f"/v1/sessions/{args.session_id}")
    out.write(f"Deleted session {done['id']}: {done['messages']} messages, {done['turns']} turns. {done['kept']}\n")
    return 0


def run_export(args: argparse.Namespace, out: TextIO) -> int:
    from shared.backups.user_export import export_user
    from shared.errors import NotFound
    from shared.stores import users
    from services.cli.local import open_local_database

    settings, db = open_local_database()
    try:
        user = users.find_user(db, args.user)
    except NotFound as exc:
        raise CliError(exc.message) from exc
    target = args.out or Path(f"{user.name}-export.tar.gz")
    count = export_user(settings, db, user, target)
    out.write(f"wrote {target}: {count} sessions, memory, skills and workspace of {user.name}\n")
    return 0


def run_backup(args: argparse.Namespace, out: TextIO) -> int:
    from shared.backups.archive import create_backup
    from shared.errors import HermesError
    from services.cli.local import open_local_database

    settings, _ = open_local_database()
    try:
        manifest = create_backup(settings, args.file)
    except HermesError as exc:
        raise CliError(exc.message) from exc
    out.write(f"wrote {args.file}: {len(manifest['members'])} files, {manifest['database']} database at "
              f"schema {manifest['schema_revision']}\n")
    return 0


def run_restore(args: argparse.Namespace, out: TextIO) -> int:
    from shared.backups.restore import restore_backup
    from shared.config import load_settings
    from shared.errors import HermesError

    settings = load_settings()
    if not args.file.is_file():
        raise CliError(f"No such backup: {args.file}")
    try:
        manifest = restore_backup(settings, args.file, force=args.force)
    except HermesError as exc:
        raise CliError(exc.message) from exc
    out.write(f"restored {args.file} (taken {manifest['created_at']}) into {settings.data_dir}; "
              "the database is at the latest schema\n")
    return 0
