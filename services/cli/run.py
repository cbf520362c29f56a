"""`hstack run`: the foreground supervisor behind `make run` — the whole stack on a machine with only Python."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from pathlib import Path

import httpx
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from services.cli import stack
from services.cli.children import Child, Console, stop_all
from services.cli.redis_embedded import EmbeddedRedis, answers_ping, free_port, port_is_free
from shared.config import Settings, dotenv_path, load_settings
from shared.ids import new_api_key
from shared.migrate import upgrade

READY_TIMEOUT_SECONDS = 60.0
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


def migrate(settings: Settings) -> None:
    """Bring the database to the latest schema; an unreachable database is a StartupError."""
    try:
        upgrade(settings.sqlalchemy_url)
    except OperationalError as exc:
        raise StartupError(f"cannot open the database {make_url_safe(settings.sqlalchemy_url)}: {exc.orig}") from exc


def local_url(settings: Settings) -> str:
    host = settings.api_host if settings.api_host not in {"0.0.0.0", "::", ""} else "127.0.0.1"
    return f"http://{host}:{settings.api_port}"


class Supervisor:
    """Starts Redis, the model, api, worker, reviewer and curator; stops them all on a signal or a death."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.stop_requested = threading.Event()
        self.redis: EmbeddedRedis | None = None
        self.model: Child | None = None
        self.children: list[Child] = []

    def request_stop(self, signum, _frame) -> None:
        if not self.stop_requested.is_set():
            self.console.say(f"\n{signal.Signals(signum).name} received: stopping the stack…")
        self.stop_requested.set()

    def run(self) -> int:
        previous = {sig: signal.signal(sig, self.request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
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
        settings = load_settings()
        try:
            settings.check_secrets()
        except RuntimeError as exc:
            raise StartupError(str(exc)) from exc
        data_dir = settings.data_dir.resolve()
        data_dir.mkdir(parents=True, exist_ok=True)
        migrate(settings)
        self.console.say(f"database {make_url_safe(settings.sqlalchemy_url)} is migrated")
        if not port_is_free(settings.api_port, settings.api_host):
            raise StartupError(f"port {settings.api_port} is in use: stop what runs there or set API_PORT in .env")
        env = stack.base_env(settings, data_dir, self.start_redis(settings, data_dir))
        if not settings.llm_configured:
            env.update(self.start_demo_model(env))
        for service in stack.services(settings, data_dir):
            self.checkpoint()
            self.children.append(Child(service.name, service.argv, {**env, **service.env}, self.console).start())
        self.wait_ready(local_url(settings))
        key = settings.admin_api_key.get_secret_value() if settings.admin_api_key else ""
        self.console.say(stack.ready_banner(local_url(settings), key))

    def checkpoint(self) -> None:
        """Abort startup when a signal arrived or a process already died."""
        if self.stop_requested.is_set():
            raise Stopped()
        dead = self.dead_child()
        if dead is not None:
            raise StartupError(f"{dead.name} exited with code {dead.returncode()} while the stack was starting")

    def start_redis(self, settings: Settings, data_dir: Path) -> str:
        if settings.redis_url:
            if answers_ping(settings.redis_url):
                self.console.say(f"using the Redis at REDIS_URL ({make_url_safe(settings.redis_url)})")
                return settings.redis_url
            self.console.say(f"REDIS_URL ({make_url_safe(settings.redis_url)}) does not answer: "
                             "starting the embedded Redis instead")
        self.redis = EmbeddedRedis(data_dir, dict(os.environ), self.console)
        try:
            url = self.redis.start()
        except RuntimeError as exc:
            raise StartupError(str(exc)) from exc
        self.console.say(f"embedded Redis on {url}, data in {self.redis.dir}")
        return url

    def start_demo_model(self, env: dict[str, str]) -> dict[str, str]:
        port = free_port()
        self.console.say(stack.DEMO_BANNER)
        self.model = Child("model", stack.demo_model(port).argv, env, self.console).start()
        deadline = time.monotonic() + MODEL_START_TIMEOUT_SECONDS
        while not _listening(port):
            self.checkpoint()
            if time.monotonic() > deadline:
                raise StartupError("the scripted demo model did not start")
            time.sleep(0.05)
        return stack.demo_env(port)

    def wait_ready(self, url: str) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while True:
            self.checkpoint()
            try:
                if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise StartupError(f"the api at {url} was not ready within {READY_TIMEOUT_SECONDS:.0f}s")
            self.stop_requested.wait(0.25)

    def all_children(self) -> list[Child]:
        extra = [c for c in (self.model, self.redis.child if self.redis else None) if c is not None]
        return self.children + extra

    def dead_child(self) -> Child | None:
        return next((c for c in self.all_children() if c.popen is not None and not c.alive() and not c.stopping), None)

    def watch(self) -> int:
        """Block until a signal (exit 0) or an unexpected death (exit 1)."""
        while not self.stop_requested.wait(0.25):
            dead = self.dead_child()
            if dead is not None:
                self.console.say(f"{dead.name} exited unexpectedly with code {dead.returncode()}: stopping the stack")
                return 1
        return 0

    def shutdown(self) -> None:
        """Services first, then the model, then Redis last so workers can finish talking to it."""
        stop_all(self.children, self.console)
        if self.model is not None:
            stop_all([self.model], self.console)
        if self.redis is not None:
            self.redis.stop()
        self.console.say("stopped.")


def make_url_safe(url: str) -> str:
    """A URL without its password, for printing."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return url.split("@")[-1]


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def run(console: Console | None = None) -> int:
    """`hstack run`: 0 after a clean stop on SIGINT/SIGTERM, 1 when the stack failed."""
    return Supervisor(console or Console()).run()
