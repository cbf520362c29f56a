"""Bench-only probe, loaded into the api and worker processes through PYTHONPATH by `bench.turns`.

Counts SQL statements (an SQLAlchemy `before_cursor_execute` listener on every engine) and Redis round
trips (each packed send to the server, so a pipeline counts once), per statement/command kind. On
SIGUSR2 the process writes its counters as JSON to `$HSTACK_PROBE_DIR/<pid>.json`. Never used by the
product: it exists only when a benchmark puts this directory on PYTHONPATH.
"""

import collections
import json
import os
import signal
import threading

_DIR = os.environ.get("HSTACK_PROBE_DIR")
_LOCK = threading.Lock()
COUNTS: collections.Counter = collections.Counter()


def _count(key: str) -> None:
    with _LOCK:
        COUNTS[key] += 1


_SITES = bool(os.environ.get("HSTACK_PROBE_SITES"))
_ROOT = os.getcwd()


def _site() -> str:
    """The project functions that issued a statement: the store function and the caller outside stores."""
    import sys

    frame = sys._getframe(2)
    names = []
    while frame is not None and len(names) < 2:
        path = frame.f_code.co_filename
        if path.startswith(_ROOT) and "/bench/" not in path and "/.venv/" not in path:
            rel = path[len(_ROOT) + 1:].replace("/", ".").removesuffix(".py")
            if not names or not rel.startswith("shared.stores") or not names[-1].startswith("shared.stores"):
                names.append(f"{rel.rsplit('.', 1)[-1]}.{frame.f_code.co_name}")
        frame = frame.f_back
    return " < ".join(names)


def _install_sql() -> None:
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    def before(conn, cursor, statement, parameters, context, executemany):
        words = statement.split(None, 3)
        kind = words[0].upper() if words else "?"
        table = ""
        text = statement.upper()
        for marker in (" FROM ", "INTO ", "UPDATE "):
            at = text.find(marker)
            if at >= 0:
                table = text[at + len(marker):].split(None, 1)[0].strip('"') if text[at + len(marker):].split() else ""
                break
        _count(f"sql {kind} {table}".strip() + (f" @ {_site()}" if _SITES else ""))

    event.listen(Engine, "before_cursor_execute", before)

    def begin(conn):
        _count("sql BEGIN" + (f" @ {_site()}" if _SITES else ""))

    event.listen(Engine, "begin", begin)


def _install_redis() -> None:
    import redis.connection as sync_conn
    import redis.asyncio.connection as async_conn

    def name_of(command) -> str:
        try:
            first = command[0] if isinstance(command, (list, tuple)) else command
            head = bytes(first[:40]) if isinstance(first, (bytes, bytearray, memoryview)) else str(first).encode()
            parts = head.split(b"\r\n")
            return parts[2].decode(errors="replace").upper() if len(parts) > 2 else "?"
        except Exception:
            return "?"

    original = sync_conn.AbstractConnection.send_packed_command

    def send(self, command, check_health=True):
        _count(f"redis {name_of(command)}")
        return original(self, command, check_health)

    sync_conn.AbstractConnection.send_packed_command = send

    original_async = async_conn.AbstractConnection.send_packed_command

    async def send_async(self, command, check_health=True):
        _count(f"aredis {name_of(command)}")
        return await original_async(self, command, check_health)

    async_conn.AbstractConnection.send_packed_command = send_async


def _dump(*_):
    with _LOCK:
        data = dict(COUNTS)
    path = os.path.join(_DIR, f"{os.getpid()}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(data, f)
    os.replace(path + ".tmp", path)


if _DIR:
    _install_sql()
    _install_redis()
    signal.signal(signal.SIGUSR2, _dump)
