"""`hstack run`: the foreground supervisor behind `make run` — the whole stack on a machine with only Python."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from services.cli import stack
from services.cli.children import Child, Console, RotatingLog, stop_all
from services.cli.readiness import Probe, api_probe, heartbeat_probe, port_probe, redis_probe
from services.cli.redis_embedded import EmbeddedRedis, answers_ping, free_port, port_is_free
from services.cli.supervision import RestartPolicy, exit_reason
from services.cli.undertaker import Undertaker
from shared.config import Settings, dotenv_path, load_settings
from shared.ids import new_api_key
from shared.migrate import upgrade

READY_TIMEOUT_SECONDS = 90.0
MODEL_START_TIMEOUT_SECONDS = 15.0


class StartupError(Exception):
    """The stack cannot start; the message says why and what to do."""


class Stopped(Exception):
    """SIGINT or SIGTERM arrived while the stack was starting."""


def append_env_line(path: Path, name: str, value: str) -> None:
    """Append `NAME=value` to a dotenv file, creating it readable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    needs_newline = path.exists() and path.stat().st_size > 0 and not path.read_bytes().endswith(b"\n")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a") as f:
        f.write(("\n" if needs_newline else "") + f"{name}={value}\n")


def ensure_admin_key(console: Console) -> None:
    """Generate ADMIN_API_KEY into `.env` when neither the environment nor `.env` has one."""
    key = load_settings().admin_api_key
    if key is not None and key.get_secret_value().strip():
        return
    path = dotenv_path()
    append_env_line(path, "ADMIN_API_KEY", new_api_key())
    console.say(f"Generated an admin key and saved it as ADMIN_API_KEY in {path} (mode 0600).")


def ensure_gateway_key(console: Console) -> None:
    """Generate GATEWAY_API_KEY into `.env` when neither the environment nor `.env` has one."""
    key = load_settings().gateway_api_key
    if key is not None and key.get_secret_value().strip():
        return
    path = dotenv_path()
    append_env_line(path, "GATEWAY_API_KEY", new_api_key())
    console.say(f"Generated the gateway's own key and saved it as GATEWAY_API_KEY in {path} (mode 0600).")


def ensure_redis_password(console: Console) -> str:
    """REDIS_PASSWORD, generated into `.env` when neither the environment nor `.env` has one."""
    password = load_settings().redis_password
    if password is not None and password.get_secret_value().strip():
        return password.get_secret_value()
    path = dotenv_path()
    value = secrets.token_urlsafe(32)
    append_env_line(path, "REDIS_PASSWORD", value)
    console.say(f"Generated the embedded Redis's password and saved it as REDIS_PASSWORD in {path} (mode 0600).")
    return value


def check_sandbox(settings: Settings, console: Console) -> bool:
    """Say how to install bubblewrap when the terminal needs it and it is missing; the stack still starts."""
    if settings.terminal_sandbox != "bwrap" or shutil.which("bwrap"):
        return True
    sudo = "" if os.geteuid() == 0 else "sudo "  # a root install may have no sudo at all
    console.say(f"warning: the terminal tool refuses every command until bubblewrap is installed: {sudo}apt-get "
                f"install bubblewrap (Fedora: {sudo}dnf install bubblewrap), then restart; or TERMINAL_SANDBOX=none "
                "on a single-user box only.")
    return False


def migrate(settings: Settings) -> None:
    """Bring the database to the latest schema; an unreachable database is a StartupError."""
    try:
        upgrade(settings.sqlalchemy_url)
    except OperationalError as exc:
        raise StartupError(f"cannot open the database {make_url_safe(settings.sqlalchemy_url)}: {exc.orig}") from exc


def local_url(settings: Settings) -> str:
    host = settings.api_host if settings.api_host not in {"0.0.0.0", "::", ""} else "127.0.0.1"
    return f"http://{host}:{settings.api_port}"


@dataclass
class Supervised:
    """One child under supervision: how to tell it is ready, and when it may start again after a crash."""

    child: Child
    probe: Probe
    detail: str
    policy: RestartPolicy = field(default_factory=RestartPolicy)
    ready: bool = False
    restart_at: float | None = None

    @property
    def name(self) -> str:
        return self.child.name


class Supervisor:
    """Starts Redis, the model, api, worker, reviewer and curator; restarts a crashed one with backoff.

    It stops everything on SIGINT/SIGTERM (exit 0) or when a service crash-loops past its policy's limit (exit 1).
    Each child's output goes to DATA_DIR/logs/<name>.log; the console gets one line per service as it becomes
    ready, the ready block last, and then only restarts and errors.
    """

    def __init__(self, console: Console, policy: Callable[[], RestartPolicy] = RestartPolicy) -> None:
        self.console = console
        self.new_policy = policy
        self.stop_requested = threading.Event()
        self.redis: EmbeddedRedis | None = None
        self.supervised: list[Supervised] = []
        self.logs_dir: Path | None = None
        self.undertaker = Undertaker()

    def request_stop(self, signum, _frame) -> None:
        if not self.stop_requested.is_set():
            self.console.say(f"\n{signal.Signals(signum).name} received: stopping the stack…")
        self.stop_requested.set()

    def run(self) -> int:
        previous = {sig: signal.signal(sig, self.request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.undertaker.start()
            self.start()
            return self.watch()
        except Stopped:
            return 0
        except StartupError as exc:
            self.console.say(f"error: {exc}")
            return 1
        finally:
            self.shutdown()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def start(self) -> None:
        ensure_admin_key(self.console)
        ensure_gateway_key(self.console)
        settings = load_settings()
        try:
            settings.check_secrets()
        except RuntimeError as exc:
            raise StartupError(str(exc)) from exc
        data_dir = settings.data_dir.resolve()
        data_dir.mkdir(parents=True, exist_ok=True)
        self.logs_dir = data_dir / "logs"
        check_sandbox(settings, self.console)
        migrate(settings)
        self.console.say(f"database {make_url_safe(settings.sqlalchemy_url)} is migrated; "
                         f"service logs in {self.logs_dir} (hstack logs SERVICE)")
        if not port_is_free(settings.api_port, settings.api_host):
            raise StartupError(f"port {settings.api_port} is in use: stop what runs there or set API_PORT in .env")
        if not port_is_free(settings.gateway_port, settings.gateway_host):
            raise StartupError(f"port {settings.gateway_port} is in use: stop what runs there or set GATEWAY_PORT "
                               "in .env")
        redis_url = self.start_redis(settings, data_dir)
        env = stack.base_env(settings, data_dir, redis_url)
        if not settings.llm_configured:
            env.update(self.start_demo_model(env))
        url = local_url(settings)
        probes = {"api": (api_probe(url), url)}
        gateway = stack.gateway_detail(settings)
        probes["gateway"] = (port_probe(settings.gateway_port), gateway)
        started = []
        for service in stack.services(settings, data_dir):
            self.checkpoint()
            probe, detail = probes.get(service.name, (heartbeat_probe(redis_url, service.announces), service.detail))
            started.append(self.launch(service.name, service.argv, {**env, **service.env}, probe, detail))
        self.wait_ready(started, READY_TIMEOUT_SECONDS)
        key = settings.admin_api_key.get_secret_value() if settings.admin_api_key else ""
        self.console.say(stack.ready_banner(url, key, demo=not settings.llm_configured))

    def launch(self, name: str, argv: list[str], env: dict[str, str], probe: Probe, detail: str) -> Supervised:
        child = Child(name, argv, env, self.console, self.log_for(name)).start()
        return self.supervise(child, probe, detail)

    def supervise(self, child: Child, probe: Probe, detail: str) -> Supervised:
        entry = Supervised(child, probe, detail, self.new_policy())
        self.supervised.append(entry)
        child.undertaker = self.undertaker
        self.undertaker.watch(child.pid)
        return entry

    def log_for(self, name: str) -> RotatingLog:
        return RotatingLog(self.logs_dir / f"{name}.log")

    def checkpoint(self) -> None:
        """Abort startup when a signal arrived or a process already died (with the end of its log)."""
        if self.stop_requested.is_set():
            raise Stopped()
        dead = next((s for s in self.supervised if not s.child.alive() and not s.child.stopping), None)
        if dead is not None:
            tail = log_tail(self.logs_dir / f"{dead.name}.log", 15)
            raise StartupError(f"{dead.name} {exit_reason(dead.child.returncode())} while the stack was starting"
                               + (f"; the end of its log:\n{tail}" if tail else ""))

    def wait_ready(self, entries: list[Supervised], timeout: float) -> None:
        """Print one line per service as it becomes ready; StartupError past `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            self.checkpoint()
            for entry in entries:
                if not entry.ready and entry.probe(entry.child):
                    self.mark_ready(entry, "ready")
            waiting = [e.name for e in entries if not e.ready]
            if not waiting:
                return
            if time.monotonic() > deadline:
                raise StartupError(f"not ready within {timeout:.0f}s: {', '.join(waiting)} "
                                   f"(see {self.logs_dir}/<service>.log)")
            self.stop_requested.wait(0.2)

    def mark_ready(self, entry: Supervised, word: str) -> None:
        entry.ready = True
        entry.policy.healthy(time.monotonic())
        self.console.say(f"  {entry.name:<9} {word:<6} {entry.detail}")

    def start_redis(self, settings: Settings, data_dir: Path) -> str:
        if settings.redis_url:
            if answers_ping(settings.redis_url):
                self.console.say(f"using the Redis at REDIS_URL ({make_url_safe(settings.redis_url)})")
                return settings.redis_url
            self.console.say(f"REDIS_URL ({make_url_safe(settings.redis_url)}) does not answer: "
                             "starting the embedded Redis instead")
        self.redis = EmbeddedRedis(data_dir, dict(os.environ), self.console, self.log_for("redis"),
                                   password=ensure_redis_password(self.console),
                                   sandbox_uid=settings.terminal_sandbox_uid)
        try:
            url = self.redis.start()
        except RuntimeError as exc:
            raise StartupError(str(exc)) from exc
        self.mark_ready(self.supervise(self.redis.child, redis_probe(url), f"embedded, {make_url_safe(url)}"), "ready")
        return url

    def start_demo_model(self, env: dict[str, str]) -> dict[str, str]:
        port = free_port()
        service = stack.demo_model(port)
        entry = self.launch(service.name, service.argv, env, port_probe(port), service.detail)
        self.wait_ready([entry], MODEL_START_TIMEOUT_SECONDS)
        return stack.demo_env(port)

    def watch(self) -> int:
        """Restart what crashes until a signal (exit 0) or a crash loop past the limit (exit 1)."""
        while not self.stop_requested.wait(0.25):
            for entry in self.supervised:
                if not self.tend(entry, time.monotonic()):
                    return 1
        return 0

    def tend(self, entry: Supervised, now: float) -> bool:
        """Restart a crashed service when its backoff is over, note when it is back; False to give up."""
        child = entry.child
        if entry.restart_at is not None:
            if now >= entry.restart_at and not self.stop_requested.is_set():
                entry.restart_at = None
                child.start()
                self.console.say(f"{entry.name}: restarted (pid {child.pid})")
            return True
        if child.alive():
            if not entry.ready and entry.probe(child):
                self.mark_ready(entry, "back")
            return True
        if child.stopping:
            return True
        child.reap()
        entry.ready = False
        reason = exit_reason(child.returncode())
        delay = entry.policy.crashed(now)
        if delay is None:
            self.console.say(f"{entry.name} {reason} and has crashed {entry.policy.crashes} times in a row without "
                             f"staying healthy for {entry.policy.healthy_reset:.0f}s: stopping the stack. "
                             f"Its log: hstack logs {entry.name}")
            return False
        self.console.say(f"{entry.name} {reason}: restarting it in {delay:.0f}s "
                         f"(crash {entry.policy.crashes} in a row; hstack logs {entry.name})")
        entry.restart_at = now + delay
        return True

    def shutdown(self) -> None:
        """Services first, then the model, then Redis last so workers can finish talking to it."""
        for entry in self.supervised:
            entry.restart_at = None
        services = [e.child for e in self.supervised if e.name not in ("model", "redis")]
        stop_all(services, self.console)
        stop_all([e.child for e in self.supervised if e.name == "model"], self.console)
        if self.redis is not None:
            self.redis.stop()
        self.undertaker.dismiss()
        self.console.say("stopped.")


def log_tail(path: Path, lines: int) -> str:
    """The last `lines` lines of a log file ("" when there is none)."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 64 * 1024))
            return b"\n".join(f.read().splitlines()[-lines:]).decode("utf-8", "replace")
    except OSError:
        return ""


def make_url_safe(url: str) -> str:
    """A URL without its password, for printing."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url.split("@")[-1]


def run(console: Console | None = None) -> int:
    """`hstack run`: 0 after a clean stop on SIGINT/SIGTERM, 1 when the stack failed to start or crash-looped."""
    return Supervisor(console or Console()).run()
