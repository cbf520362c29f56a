"""`hstack logs SERVICE [-n N] [-f]`: what a service of `hstack run` printed, from DATA_DIR/logs/<service>.log."""

from __future__ import annotations

import argparse
import os
import threading
from pathlib import Path
from typing import TextIO

from services.cli.client import CliError

TAIL_READ_BYTES = 1024 * 1024
FOLLOW_POLL_SECONDS = 0.25


def add_parser(commands) -> None:
    logs = commands.add_parser("logs", help="show a service's log from `hstack run` (api, worker, reviewer, "
                               "curator, redis, model)")
    logs.add_argument("service", help="the service whose log to show")
    logs.add_argument("-n", "--lines", type=int, default=50, help="how many last lines to show (default 50)")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing new lines until Ctrl-C")


def logs_dir() -> Path:
    from shared.config import load_settings

    return load_settings().data_dir.resolve() / "logs"


def log_path(directory: Path, service: str) -> Path:
    """The service's log; CliError naming the services that have one when it does not exist."""
    path = directory / f"{service}.log"
    if "/" in service or service.startswith(".") or not path.is_file():
        known = sorted(p.stem for p in directory.glob("*.log")) if directory.is_dir() else []
        hint = f"services with a log: {', '.join(known)}" if known else "start the stack with `hstack run` first"
        raise CliError(f"no log for {service!r} in {directory} ({hint})")
    return path


def last_lines(path: Path, count: int) -> list[str]:
    """The last `count` lines of a file, read from its end."""
    if count <= 0:
        return []
    with open(path, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - TAIL_READ_BYTES))
        lines = f.read().decode("utf-8", "replace").splitlines()
    return lines[-count:]


def follow(path: Path, out: TextIO, stop: threading.Event, start_at: int | None = None) -> None:
    """Print lines appended to `path` until `stop` is set, reopening it when `hstack run` rotates it."""
    f = open(path, "rb")
    f.seek(f.seek(0, os.SEEK_END) if start_at is None else start_at)
    try:
        while not stop.is_set():
            chunk = f.read()
            if chunk:
                out.write(chunk.decode("utf-8", "replace"))
                out.flush()
                continue
            if _rotated(path, f):
                f.close()
                f = open(path, "rb")
                continue
            stop.wait(FOLLOW_POLL_SECONDS)
    finally:
        f.close()


def _rotated(path: Path, f) -> bool:
    try:
        now = path.stat()
    except FileNotFoundError:
        return False
    return now.st_ino != os.fstat(f.fileno()).st_ino or now.st_size < f.tell()


def run(args: argparse.Namespace, out: TextIO) -> int:
    path = log_path(logs_dir(), args.service)
    with open(path, "rb") as f:
        end = f.seek(0, os.SEEK_END)
    for line in last_lines(path, args.lines):
        out.write(line + "\n")
    out.flush()
    if args.follow:
        follow(path, out, threading.Event(), start_at=end)
    return 0
