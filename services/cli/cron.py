"""`hstack cron list|create|pause|resume|remove|run|runs`: your scheduled jobs, through the api."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from services.cli.client import ApiClient

OUTPUT_CHARS = 100
JOBS = "/v1/cron/jobs"


def add_parser(commands, client_options: list[argparse.ArgumentParser]) -> None:
    """The `cron` subcommand and its actions."""
    actions = commands.add_parser("cron", help="your scheduled jobs: list, create, pause, resume, remove, run, runs"
                                  ).add_subparsers(dest="action", required=True, metavar="ACTION")
    key = argparse.ArgumentParser(add_help=False)
    key.add_argument("--key", help="your API key (default: HSTACK_API_KEY)")
    parents = [*client_options, key]
    actions.add_parser("list", parents=parents, help="jobs with their next run and last status")
    create = actions.add_parser("create", parents=parents, help="schedule a prompt")
    create.add_argument("schedule", help="'0 7 * * 1-5', 'every 2h', 'in 20 minutes' or an ISO-8601 time")
    create.add_argument("prompt", help="what the agent does at each run")
    create.add_argument("--name")
    create.add_argument("--deliver", help="none (default), telegram:<chat id> or webhook:<route>")
    create.add_argument("--skill", help="a skill each run loads first")
    create.add_argument("--timezone", help="IANA zone of the schedule (default: yours, else the server's)")
    create.add_argument("--allow", action="append", help="a dangerous-command kind its unattended runs may run "
                        "(the approval gate's words, e.g. 'recursive delete'); repeatable")
    for action, text in (("pause", "stop a job's runs"), ("resume", "start a paused job again"),
                         ("remove", "forget a job and its runs"), ("run", "run a job once now"),
                         ("runs", "a job's runs, newest first, with their outcome")):
        actions.add_parser(action, parents=parents, help=text).add_argument("job_id")


def run(client: ApiClient, args: argparse.Namespace, out: TextIO) -> int:
    if args.action == "list":
        jobs = client.get(JOBS)
        out.write("" if jobs else "No scheduled jobs.\n")
        for job in jobs:
            out.write(_job_line(job))
    elif args.action == "create":
        body = {k: getattr(args, k) for k in ("schedule", "prompt", "name", "deliver", "skill", "timezone", "allow")
                if getattr(args, k) is not None}
        out.write(_job_line(client.post(JOBS, body)))
    elif args.action in ("pause", "resume"):
        status = "paused" if args.action == "pause" else "active"
        out.write(_job_line(client.patch(f"{JOBS}/{args.job_id}", {"status": status})))
    elif args.action == "remove":
        client.delete(f"{JOBS}/{args.job_id}")
        out.write(f"removed {args.job_id}\n")
    elif args.action == "run":
        started = client.post(f"{JOBS}/{args.job_id}/run")
        out.write(f"started run {started['id']} (turn {started['turn_id']})\n")
    else:
        runs = client.get(f"{JOBS}/{args.job_id}/runs")
        out.write("" if runs else "No runs yet.\n")
        for one in runs:
            out.write(_run_line(one))
    return 0


def _when(value: str | None) -> str:
    return value[:16].replace("T", " ") if value else "-"


def _job_line(job: dict[str, Any]) -> str:
    return (f"{job['id']}  {job['status']:<6}  next {_when(job['next_run_at'])}  last {job['last_status'] or '-':<9} "
            f"{job['schedule']!r} -> {job['deliver']}  {job['name']}\n")


def _run_line(one: dict[str, Any]) -> str:
    said = one["error"] or one["output"] or ""
    flat = " ".join(said.split())
    flat = flat if len(flat) <= OUTPUT_CHARS else flat[: OUTPUT_CHARS - 1] + "…"
    late = f" (late by {int(one['late_by_seconds'])} s)" if one["late_by_seconds"] >= 60 else ""
    return f"{one['id']}  {one['status']:<9} {_when(one['started_at'])}{late}  {flat}\n"
