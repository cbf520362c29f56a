"""`hstack curator log|restore|run`: what the curator did to your skills, undoing one change, a pass now.

`log` and `restore` act for the key's user through the api. `run` is an operator command like
`hstack migrate`: it runs here, against the database and DATA_DIR, for one user (--user) or every
user with agent-created skills, ignoring the schedule's gates; `--dry-run` only prints what a pass
would do now (no backup, no change, no ledger row); `--consolidate` then runs the model pass that stages
umbrella skills for overlapping agent skills (shared.curation.consolidation).
"""

from __future__ import annotations

import argparse
from typing import TextIO

from services.cli.client import ApiClient, CliError
from services.cli.local import open_local_database

ARROW = "→"


def add_parser(commands, client_options: list[argparse.ArgumentParser]) -> None:
    """The `curator` subcommand and its actions."""
    actions = commands.add_parser("curator", help="skill curation: its log, undoing a change, a pass now"
                                  ).add_subparsers(dest="action", required=True, metavar="ACTION")
    key = argparse.ArgumentParser(add_help=False)
    key.add_argument("--key", help="your API key (default: HSTACK_API_KEY)")
    log_cmd = actions.add_parser("log", parents=[*client_options, key],
                                 help="the curator's passes and what each changed, newest first")
    log_cmd.add_argument("--limit", type=int, default=20, help="at most this many runs (default 20)")
    actions.add_parser("restore", parents=[*client_options, key],
                       help="undo the curator's last change to a skill (stale or archived → active)"
                       ).add_argument("name")
    run_cmd = actions.add_parser("run", help="run a curation pass now (runs locally, like migrate)")
    run_cmd.add_argument("--dry-run", action="store_true", help="print what a pass would do; change nothing")
    run_cmd.add_argument("--user", help="the user (name or id); default: every user with agent-created skills")
    run_cmd.add_argument("--consolidate", action="store_true",
                         help="then ask the model to merge overlapping agent skills (staged for approval)")


def run_api(client: ApiClient, args: argparse.Namespace, out: TextIO) -> int:
    """`log` and `restore`, through the api."""
    if args.action == "log":
        return show_log(client.get("/v1/curator/runs", limit=args.limit), out)
    run = client.post(f"/v1/curator/skills/{args.name}/restore")
    for t in run["transitions"]:
        out.write(f"Restored {t['skill']}: {t['from_state']} {ARROW} {t['to_state']} ({t['reason']}).\n")
    return 0


def _time(value: str) -> str:
    return value[:16].replace("T", " ") + " UTC"


def show_log(body: dict, out: TextIO) -> int:
    state = body["state"]
    if state is None:
        out.write("The curator has not seen your skills yet (it looks at agent-created skills only).\n")
    else:
        out.write(f"Next pass after {_time(state['next_pass_after'])}; {state['pass_count']} pass(es) so far "
                  f"(last: {state['last_summary']}).\n")
    for run in body["data"]:
        backup = f"  backup {run['backup_path']}" if run["backup_path"] else ""
        out.write(f"{_time(run['started_at'])}  {run['kind']:<9} {run['id']}  {run['summary']}{backup}\n")
        for t in run["transitions"]:
            out.write(f"    {t['skill']}  {t['from_state']} {ARROW} {t['to_state']}  {t['reason']}\n")
    return 0


def run_local(args: argparse.Namespace, out: TextIO) -> int:
    """A pass now (or a dry run) for one user or all; the stores load only now, so `--help` stays quick."""
    from shared import clock
    from shared.curation.passes import plan, run_pass
    from shared.errors import NotFound
    from shared.stores import curator, users

    if args.dry_run and args.consolidate:
        raise CliError("--consolidate stages proposals for approval; it cannot be combined with --dry-run.")
    settings, db = open_local_database()
    try:
        chosen = [users.find_user(db, args.user)] if args.user else \
            [u for u in users.list_users(db) if u.id in set(curator.users_with_agent_skills(db))]
    except NotFound as exc:
        raise CliError(exc.message) from exc
    now = clock.utcnow()
    if args.dry_run:
        out.write("Dry run: nothing is changed.\n")
    if not chosen:
        out.write("No user has agent-created skills; there is nothing to curate.\n")
    for user in chosen:
        if args.dry_run:
            changes = plan(db, settings, user.id, now)
            out.write(f"{user.name} ({user.id}): {_schedule(db, settings, user.id, now)}; a pass now would make "
                      f"{len(changes)} change(s).\n")
        else:
            report = run_pass(db, settings, user.id, now)
            changes = report.transitions
            backup = f"; backup {report.backup_path}" if report.backup_path else ""
            out.write(f"{user.name} ({user.id}): pass {report.run_id}: {report.summary}{backup}.\n")
        for t in changes:
            out.write(f"    {t.skill}  {t.from_state.value} {ARROW} {t.to_state.value}  {t.reason}\n")
        if args.consolidate:
            _consolidate(settings, db, user, now, out)
    return 0


def _consolidate(settings, db, user, now, out: TextIO) -> None:
    """The model pass for one user, whatever CURATOR_CONSOLIDATE says (an operator asked for it)."""
    from shared.curation.consolidation import consolidate
    from shared.llm import get_llm

    report = consolidate(db, settings, user.id, get_llm(settings), now)
    out.write(f"{user.name} ({user.id}): {report.summary}.\n")
    for staged_id in report.staged:
        out.write(f"    staged {staged_id}: decide on the console's Skills page or POST /v1/skills/pending/{staged_id}\n")
    for declined in report.declined:
        out.write(f"    declined {declined}\n")


def _schedule(db, settings, user_id: str, now) -> str:
    """When the beat would run this user's pass."""
    from shared.curation.rules import Policy, wait_reason
    from shared.stores import curator

    state = curator.state(db, user_id)
    if state is None:
        return "not seen by the curator yet (its first check only starts the clock)"
    wait = wait_reason(state.last_pass_at, curator.last_turn_at(db, user_id, now), now, Policy.of(settings))
    return "a scheduled pass is due now" if wait is None else f"not due ({wait})"
