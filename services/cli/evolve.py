"""`hstack evolve skill NAME [--user U] [--budget N]`, and `list`, `cancel ID`, `restore ID`.

A run is queued for the reviewer pool and followed here with a progress bar until it ends; Ctrl-C stops
following, not the run (`hstack evolve cancel ID` stops it). Without --user everything goes through the api
with the user's key. With --user it is an operator command like `hstack curator run`: the run row is
written to this machine's database and its id sent to the broker, and it is followed from the database.
"""

from __future__ import annotations

import argparse
import time
from typing import Callable, TextIO

from services.cli.client import ApiClient, CliError
from services.cli.local import open_local_database

FOLLOW_EVERY_SECONDS = 0.5
BAR_WIDTH = 30
ENDED = ("proposed", "no_improvement", "cancelled", "failed")


def add_parser(commands, client_options: list[argparse.ArgumentParser]) -> None:
    actions = commands.add_parser("evolve", help="evolve a skill with GEPA over the sessions that used it"
                                  ).add_subparsers(dest="action", required=True, metavar="ACTION")
    key = argparse.ArgumentParser(add_help=False)
    key.add_argument("--key", help="your API key (default: HSTACK_API_KEY)")
    skill = actions.add_parser("skill", parents=[*client_options, key],
                               help="queue a run for one skill and follow it with a progress bar")
    skill.add_argument("name")
    skill.add_argument("--user", help="operator: run for this user (name or id) from this machine's database")
    skill.add_argument("--budget", type=int, help="at most this many metric calls (default EVOLVE_METRIC_CALLS)")
    skill.add_argument("--no-wait", action="store_true", help="queue it and return at once")
    actions.add_parser("list", parents=[*client_options, key], help="your runs, newest first")
    for name, what in (("cancel", "stop a queued or running run"), ("restore", "roll an approved proposal back")):
        actions.add_parser(name, parents=[*client_options, key], help=what).add_argument("run_id")


def run_api(client: ApiClient, args: argparse.Namespace, out: TextIO) -> int:
    if args.action == "list":
        for run in client.get("/v1/evolution/runs")["data"]:
            out.write(f"{run['created_at'][:16].replace('T', ' ')}  {run['id']}  {run['skill']}  {run['status']}"
                      f"{'  proposal ' + run['proposal'] if run['proposal'] else ''}  {run['summary']}\n")
        return 0
    if args.action in ("cancel", "restore"):
        run = client.post(f"/v1/evolution/runs/{args.run_id}/{args.action}")
        out.write(f"{run['id']} {run['skill']}: {'cancel requested' if args.action == 'cancel' else 'restored'} "
                  f"({run['status']}).\n")
        return 0
    body = {"skill": args.name, **({"budget": args.budget} if args.budget else {})}
    run = client.post("/v1/evolution/runs", body)
    return follow(run, lambda: client.get(f"/v1/evolution/runs/{run['id']}"), out, args.no_wait)


def run_local(args: argparse.Namespace, out: TextIO) -> int:
    """--user: start for that user here and send its id to the broker; follow from the database."""
    from shared.errors import HermesError
    from shared.queue.app import enqueue
    from shared.queue.names import EVOLVE_SKILL
    from shared.queue.payloads import EvolveSkill
    from shared.stores import evolution_runs, users

    settings, db = open_local_database()
    try:
        user = users.find_user(db, args.user)
        started = evolution_runs.start(db, settings, user.id, args.name, args.budget)
    except HermesError as exc:
        raise CliError(exc.message) from exc
    enqueue(EVOLVE_SKILL, EvolveSkill(run_id=started.id))

    def fetch() -> dict:
        return evolution_runs.public(db, [evolution_runs.get(db, user.id, started.id)])[0].model_dump(mode="json")

    return follow(fetch(), fetch, out, args.no_wait)


def bar(run: dict) -> str:
    done = int(round(run["progress"] * BAR_WIDTH))
    return (f"\r[{'#' * done}{'.' * (BAR_WIDTH - done)}] {run['progress'] * 100:3.0f}%  "
            f"{run['metric_calls']}/{run['budget_metric_calls']} metric calls  {run['stage'][:50]:<50}")


def follow(run: dict, fetch: Callable[[], dict], out: TextIO, no_wait: bool) -> int:
    """Draw the run's progress until it ends, then its outcome; 0 when it ended as proposed or no_improvement."""
    out.write(f"Run {run['id']} of {run['skill']} queued on the reviewer pool.\n")
    if no_wait:
        return 0
    started = time.monotonic()
    try:
        while run["status"] not in ENDED:
            out.write(bar(run))
            out.flush()
            time.sleep(FOLLOW_EVERY_SECONDS)
            run = fetch()
    except KeyboardInterrupt:
        out.write(f"\nStopped following; the run goes on. `hstack evolve cancel {run['id']}` stops it.\n")
        return 130
    out.write(bar({**run, "progress": 1.0 if run["status"] in ENDED[:2] else run["progress"]}) + "\n")
    return report(run, time.monotonic() - started, out)


def report(run: dict, seconds: float, out: TextIO) -> int:
    s = run["scores"]
    out.write(f"{run['status']}: {run['summary'] or run['error'] or ''}\n")
    if s.get("heldout_before") is not None:
        out.write(f"scores: held-out {s.get('heldout_before')} -> {s.get('heldout_after')}, "
                  f"train {s.get('train_before')} -> {s.get('train_after')} (margin {s.get('margin')})\n")
    out.write(f"cost: {run['model_calls']} model calls, {run['prompt_tokens'] + run['completion_tokens']} tokens "
              f"({run['prompt_tokens']} prompt, {run['completion_tokens']} completion), {run['metric_calls']} metric "
              f"calls, {seconds:.1f} s\n")
    if run["status"] == "proposed":
        out.write(f"Staged for your approval as {run['staged_id']}: the Learning page or "
                  f"`POST /v1/skills/pending/{run['staged_id']}`.\n")
    return 0 if run["status"] in ("proposed", "no_improvement") else 1
