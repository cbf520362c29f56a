"""Bench-only probe, loaded into the api and worker processes through PYTHONPATH by `bench.turns`.

Counts SQL statements (an SQLAlchemy `before_cursor_execute` listener on every engine) and Redis round
trips (each packed send to the server, so a pipeline counts once), per statement/command kind. On
SIGUSR2 the process writes its counters as JSON to `$HSTACK_PROBE_DIR/<pid>.json`. Never used by the
product: it exists only when a benchmark puts this directory on PYTHONPATH.

With `HSTACK_PROFILE=1` as well (`HSTACK_PROFILE=cpu`: timed by each thread's CPU clock, so waiting
for a lock, a socket or the GIL is not counted), every thread of the process runs under cProfile (enabled as the
thread starts, and on the main thread at import), and SIGUSR2 also writes the merged profile to
`$HSTACK_PROBE_DIR/<pid>.prof` (read it with `pstats`; cumulative since start, so a dump before
and one after a stretch of work subtract to that work's profile).

`HSTACK_PROBE_CPU="pkg.module:func,pkg.module:Class.method,…"` times the CPU of the calling thread
(`time.thread_time`, so waiting for I/O or a lock is not counted and no profiler skews it) inside each
named function, callees included; the totals (ms) and call counts are written with the counters as
`cpu <name>` and `calls <name>`, beside `wall <name>`, the wall time inside it (CPU plus waiting: the
database server, a lock, the GIL). The functions are wrapped once the worker is ready (every module loaded; the
api at its first dump, after the bench's warm-up), in every module that imported them by name (a function an
object holds, such as the api's `app.state.enqueue`, stays unwrapped).
"""

import collections
import json
import os
import signal
import threading
import time

_DIR = os.environ.get("HSTACK_PROBE_DIR")
_LOCK = threading.Lock()
COUNTS: collections.Counter = collections.Counter()


def _count(key: str) -> None:
    with _LOCK:
        COUNTS[key] += 1


_SITES = bool(os.environ.get("HSTACK_PROBE_SITES"))
_CPU = bool(os.environ.get("HSTACK_PROBE_CPU"))  # also: the thread CPU inside the database driver, per statement
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
        name = f"sql {kind} {table}".strip() + (f" @ {_site()}" if _SITES else "")
        _count(name)
        if _CPU:
            conn.info["probe_cpu"] = (name, time.thread_time())

    def after(conn, cursor, statement, parameters, context, executemany):
        name, start = conn.info.pop("probe_cpu", (None, 0.0))
        if name is not None:
            with _LOCK:
                COUNTS[f"cpu driver {name}"] += (time.thread_time() - start) * 1000
                COUNTS[f"calls driver {name}"] += 1

    event.listen(Engine, "before_cursor_execute", before)
    event.listen(Engine, "after_cursor_execute", after)

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


_PROFILES: list = []


def _install_profiler() -> None:
    """cProfile in every thread: the main thread now, each new thread on its first profiled event."""
    import cProfile
    import sys

    cpu_clock = os.environ.get("HSTACK_PROFILE") == "cpu"  # thread CPU, not wall time: waiting is not counted

    def start(*_):
        sys.setprofile(None)
        profile = cProfile.Profile(time.thread_time) if cpu_clock else cProfile.Profile()
        with _LOCK:
            _PROFILES.append(profile)
        profile.enable()

    start()
    threading.setprofile(start)


def _dump_profile() -> None:
    import pstats

    with _LOCK:
        profiles = list(_PROFILES)
    for profile in profiles:
        profile.snapshot_stats()  # without disabling: a later dump covers the same threads, so two dumps subtract
    stats = pstats.Stats(*profiles)
    stats.dump_stats(os.path.join(_DIR, f"{os.getpid()}.prof"))


def _timed(name: str, fn):
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        start, wall = time.thread_time(), time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent = (time.thread_time() - start) * 1000
            waited = (time.perf_counter() - wall) * 1000
            with _LOCK:
                COUNTS[f"cpu {name}"] += spent
                COUNTS[f"wall {name}"] += waited
                COUNTS[f"calls {name}"] += 1

    return wrapper


def _install_cpu_timers(spec: str) -> None:
    """Wrap each named function where it is defined and wherever a module imported it by name."""
    import importlib
    import sys

    for name in filter(None, (part.strip() for part in spec.split(","))):
        module_name, _, attr = name.partition(":")
        owner = importlib.import_module(module_name)
        *path, leaf = attr.split(".")
        for part in path:
            owner = getattr(owner, part)
        original = getattr(owner, leaf)
        wrapped = _timed(name, original)
        setattr(owner, leaf, wrapped)
        if not path:
            for module in list(sys.modules.values()):
                for key, value in list(getattr(module, "__dict__", {}).items()):
                    if value is original:
                        setattr(module, key, wrapped)


def _thread_cpu() -> dict:
    """CPU ms used so far by each live thread, summed by name with digits dropped (pool threads, …)."""
    import re

    out: dict = collections.Counter()
    for thread in threading.enumerate():
        try:
            spent = time.clock_gettime(time.pthread_getcpuclockid(thread.ident)) * 1000
        except (OSError, TypeError):
            continue
        out[f"thread {re.sub(r'[0-9]+', '#', thread.name)}"] += spent
    out["process"] = time.process_time() * 1000
    return dict(out)


_WRAPPED: list = []


def _wrap_once() -> None:
    """Install the CPU timers once: the worker when it is ready, the api at its first dump (after warm-up)."""
    if not _WRAPPED:
        _WRAPPED.append(True)
        _install_cpu_timers(os.environ["HSTACK_PROBE_CPU"])


def _dump(*_):
    if _CPU and not os.environ.get("HSTACK_SERVICE"):  # the api: no worker_ready signal to wait for
        _wrap_once()
    with _LOCK:
        data = dict(COUNTS)
    if _CPU:
        data.update(_thread_cpu())
    if _PROFILES:
        _dump_profile()
    path = os.path.join(_DIR, f"{os.getpid()}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(data, f)
    os.replace(path + ".tmp", path)


if _DIR:
    _install_sql()
    _install_redis()
    signal.signal(signal.SIGUSR2, _dump)
    if os.environ.get("HSTACK_PROFILE"):
        _install_profiler()
    if os.environ.get("HSTACK_PROBE_CPU"):
        from celery import signals

        @signals.worker_ready.connect(weak=False)
        def _wrap_when_ready(**_):
            _wrap_once()
