"""`hstack`: run the stack, migrate, manage users and keys, chat, show status, logs and health."""

from __future__ import annotations

import argparse
import os
import sys

from pydantic import ValidationError

from services.cli import chat, data, gateway_admin, health, importer, logs, status, users
from services.cli import memory as memory_cmd
from services.cli import skills as skills_cmd
from services.cli import curator as curator_cmd
from services.cli import search as search_cmd
from services.cli import reviews as reviews_cmd
from services.cli import cron as cron_cmd
from services.cli import evolve as evolve_cmd
from services.cli import mcp as mcp_cmd
from services.cli.client import ApiClient, CliError, admin_key, base_url, user_key

# Commands that act for one user through the api with that user's key: name -> run(client, args, out).
USER_COMMANDS = {
    "memory": memory_cmd.run,
    "skills": skills_cmd.run,
    "search": search_cmd.run,
    "curator": curator_cmd.run_api,
    "reviews": reviews_cmd.run,
    "sessions": data.run_sessions,
    "cron": cron_cmd.run,
    "evolve": evolve_cmd.run_api,
}

# Commands that act on this machine directly (its database, DATA_DIR, Redis): name -> run(args, out).
LOCAL_COMMANDS = {
    "import": importer.run,
    "logs": logs.run,
    "health": health.run,
    "export": data.run_export,
    "backup": data.run_backup,
    "restore": data.run_restore,
}


def connection_options(suppress: bool) -> argparse.ArgumentParser:
    """--url and --admin-key, accepted before the command and after it."""
    default = argparse.SUPPRESS if suppress else None
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--url", default=default,
                         help="the api's base URL (default: HSTACK_URL, else http://127.0.0.1:$API_PORT)")
    options.add_argument("--admin-key", default=default,
                         help="admin commands: default ADMIN_API_KEY from the environment or .env")
    return options


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hstack", description="Hermes Stack: a self-hosted AI agent service.",
                                     parents=[connection_options(suppress=False)])
    client = [connection_options(suppress=True)]
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    commands.add_parser("run", help="run the whole stack in the foreground (what `make run` does)")
    commands.add_parser("migrate", help="bring the database to the latest schema")

    user_sub = commands.add_parser("users", help="create and list users (admin)").add_subparsers(
        dest="action", required=True, metavar="ACTION")
    create = user_sub.add_parser("create", parents=client, help="create a user and print its first API key once")
    create.add_argument("name")
    user_sub.add_parser("list", parents=client, help="list users")
    zone = user_sub.add_parser("timezone", parents=client, help="the time zone a user's scheduled jobs are read in")
    zone.add_argument("user", help="the user's id or name")
    zone.add_argument("zone", help="an IANA name such as Europe/Paris, or 'server' for the server's")

    key_sub = commands.add_parser("keys", help="issue, list and revoke API keys (admin)").add_subparsers(
        dest="action", required=True, metavar="ACTION")
    key_create = key_sub.add_parser("create", parents=client, help="issue another key for a user")
    key_create.add_argument("user", help="the user's id or name")
    key_list = key_sub.add_parser("list", parents=client, help="a user's keys (ids and prefixes, never the keys)")
    key_list.add_argument("user", help="the user's id or name")
    key_revoke = key_sub.add_parser("revoke", parents=client, help="revoke a key at once, in every api process")
    key_revoke.add_argument("key_id", help="the key's id (see `hstack keys list USER`)")
    key_revoke.add_argument("--user", help="the owner's id or name (default: found by the key id)")

    commands.add_parser("status", parents=client, help="services, queue depths and recent turns (admin)")

    chat_cmd = commands.add_parser("chat", parents=client, help="talk to the agent in this terminal (one turn per line)")
    chat_cmd.add_argument("--key", help="your API key (default: HSTACK_API_KEY)")
    chat_cmd.add_argument("--session", help="continue this session instead of starting a new one")
    memory_cmd.add_parser(commands, client)
    skills_cmd.add_parser(commands, client)
    curator_cmd.add_parser(commands, client)
    search_cmd.add_parser(commands, client)
    reviews_cmd.add_parser(commands, client)
    cron_cmd.add_parser(commands, client)
    mcp_cmd.add_parser(commands, client)
    evolve_cmd.add_parser(commands, client)
    gateway_admin.add_parsers(commands, client)
    importer.add_parser(commands)
    logs.add_parser(commands)
    health.add_parser(commands)
    data.add_parsers(commands, client)
    return parser


def dispatch(args: argparse.Namespace) -> int:
    if args.command == "run":
        from services.cli.run import run

        return run()
    if args.command == "migrate":
        return migrate()
    if args.command in LOCAL_COMMANDS:
        return LOCAL_COMMANDS[args.command](args, sys.stdout)
    if search_cmd.is_backfill(args):
        return search_cmd.run_backfill(args, sys.stdout)
    url = args.url or base_url()
    if args.command == "curator" and args.action == "run":
        return curator_cmd.run_local(args, sys.stdout)
    if args.command == "evolve" and args.action == "skill" and args.user:
        return evolve_cmd.run_local(args, sys.stdout)
    if args.command in USER_COMMANDS:
        with ApiClient(url, user_key(args.key)) as client:
            return USER_COMMANDS[args.command](client, args, sys.stdout)
    if args.command == "mcp":
        key = user_key(args.key) if args.mine else admin_key(args.admin_key)
        with ApiClient(url, key) as client:
            return mcp_cmd.run(client, args, sys.stdout)
    if args.command == "chat":
        with ApiClient(url, user_key(args.key)) as client:
            return chat.chat(client, sys.stdin, sys.stdout, session_id=args.session)
    with ApiClient(url, admin_key(args.admin_key)) as client:
        if args.command == "status":
            return status.status(client, sys.stdout)
        if args.command == "pairing":
            return gateway_admin.run_pairing(client, args, sys.stdout)
        if args.command == "webhooks":
            return gateway_admin.run_webhooks(client, args, sys.stdout)
        if args.command == "users" and args.action == "create":
            return users.create_user(client, args.name, sys.stdout)
        if args.command == "users" and args.action == "timezone":
            return users.set_timezone(client, args.user, args.zone, sys.stdout)
        if args.command == "users":
            return users.list_users(client, sys.stdout)
        return users.run_keys(client, args, sys.stdout)


def migrate() -> int:
    from services.cli.local import open_local_database
    from services.cli.run import make_url_safe

    settings, _ = open_local_database()
    print(f"database {make_url_safe(settings.sqlalchemy_url)} is at the latest schema")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `hstack` console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return dispatch(args)
    except CliError as exc:
        print(f"hstack: {exc}", file=sys.stderr)
        return 1
    except ValidationError as exc:
        print(f"hstack: invalid configuration (environment or .env):\n{exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`hstack status | head`); silence the flush at exit as Python's docs advise.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
