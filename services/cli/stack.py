"""The processes `hstack run` starts: one command line and environment per service, as compose runs them."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from dotenv import dotenv_values

from shared.config import Settings, dotenv_path

DEMO_MODEL_NAME = "scripted-demo"


@dataclass(frozen=True)
class Service:
    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    detail: str = ""  # what the ready line says about it

    @property
    def announces(self) -> str:
        """The name its heartbeat in Redis carries (HSTACK_SERVICE): worker2 announces itself as `worker`."""
        return self.env.get("HSTACK_SERVICE", self.name)


def python(*args: str) -> list[str]:
    return [sys.executable, *args]


def cores() -> int:
    """The cores this process may run on (its CPU affinity, which a container's cpuset narrows)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def worker_layout(settings: Settings) -> tuple[int, int]:
    """(processes, threads each) of the turns worker under `hstack run`.

    A turn spends nearly all its time waiting on the model, so one process's threads carry many turns at once;
    what they cannot share is the GIL: the CPU part of each turn (building the request, parsing the stream,
    storing the answer) runs one thread at a time per process. One process per core (WORKER_PROCESSES=0) lets
    every core do that work, and WORKER_CONCURRENCY is split across them, so the machine still runs that many
    turns at once and, with a prefetch of one, no process takes more turns than its threads can start.
    """
    processes = settings.worker_processes or cores()
    return processes, max(1, -(-settings.worker_concurrency // processes))


def turn_workers(settings: Settings, celery_worker: list[str]) -> list[Service]:
    """worker, worker2, … : the turns worker's processes, each its own Celery node, all announcing `worker`."""
    processes, threads = worker_layout(settings)
    found = []
    for n in range(1, processes + 1):
        name = "worker" if n == 1 else f"worker{n}"
        found.append(Service(name, python(*celery_worker, "-Q", "turns", "--concurrency", str(threads),
                                          "-n", f"{name}@%h"), {"HSTACK_SERVICE": "worker"},
                             f"queue turns, {threads} threads" + (f" (process {n} of {processes})"
                                                                  if processes > 1 else "")))
    return found


def services(settings: Settings, data_dir: Path) -> list[Service]:
    """api, worker (queue turns; one process per core), reviewer (queue review), curator (beat + queue curator)
    and the gateway."""
    quiet = ["--without-gossip", "--without-mingle", "--loglevel", settings.log_level]
    celery_worker = ["-m", "celery", "-A", "services.worker.tasks", "worker", "--pool", "threads", *quiet]
    return [
        Service("api", python("-m", "uvicorn", "--factory", "services.api.main:create_app", "--host",
                              settings.api_host, "--port", str(settings.api_port), "--timeout-graceful-shutdown", "5",
                              "--no-proxy-headers")),  # the app trusts only TRUSTED_PROXIES
        *turn_workers(settings, celery_worker),
        Service("reviewer", python(*celery_worker, "-Q", "review", "--concurrency", str(settings.worker_concurrency),
                                   "-n", "reviewer@%h"), {"HSTACK_SERVICE": "reviewer"}, "queue review"),
        Service("curator", python("-m", "celery", "-A", "services.curator.tasks", "worker", "-B", "-Q", "curator",
                                   "--pool", "threads", "--concurrency", "2", "-n", "curator@%h", *quiet,
                                   "--schedule", str(data_dir / "celerybeat-schedule")),
                {"HSTACK_SERVICE": "curator"}, "beat and queue curator"),
        Service("gateway", python("-m", "services.gateway"), detail=gateway_detail(settings)),
    ]


def gateway_detail(settings: Settings) -> str:
    telegram = "Telegram and " if settings.telegram_bot_token and settings.telegram_bot_token.get_secret_value() else ""
    return f"{telegram}webhooks on http://{settings.gateway_host}:{settings.gateway_port}/webhooks/NAME"


def demo_model(port: int) -> Service:
    """The scripted demo model, served when no LLM_BASE_URL is configured."""
    return Service("model", python("-m", "services.demo_model", "--host", "127.0.0.1", "--port", str(port), "--demo"),
                   detail=f"scripted demo model on http://127.0.0.1:{port}/v1")


def configured(name: str) -> bool:
    """True when the environment or `.env` sets `name`."""
    return name in os.environ or dotenv_values(dotenv_path()).get(name) is not None


def base_env(settings: Settings, data_dir: Path, redis_url: str) -> dict[str, str]:
    """The environment every child shares: the same DATA_DIR, `.env`, Redis and admin key as the supervisor."""
    env = {
        **os.environ,
        "DATA_DIR": str(data_dir),
        "HSTACK_DOTENV": str(dotenv_path().resolve()),
        "REDIS_URL": redis_url,
        "API_HOST": settings.api_host,
        "API_PORT": str(settings.api_port),
        "PYTHONUNBUFFERED": "1",
    }
    if settings.admin_api_key is not None:
        env["ADMIN_API_KEY"] = settings.admin_api_key.get_secret_value()
    if settings.gateway_api_key is not None:
        env["GATEWAY_API_KEY"] = settings.gateway_api_key.get_secret_value()
    if not configured("LOG_FORMAT"):
        env["LOG_FORMAT"] = "text"  # a person reads these lines in a terminal
    return env


def demo_env(model_port: int) -> dict[str, str]:
    return {"LLM_BASE_URL": f"http://127.0.0.1:{model_port}/v1", "LLM_MODEL": DEMO_MODEL_NAME}


DEMO_NOTE = """\
DEMO MODE: no model is configured (LLM_BASE_URL is unset), so the scripted demo model answers.
  It only acknowledges what you write and can list your files; it does not think. For a real model
  put LLM_BASE_URL (OpenAI, OpenRouter, Ollama, vLLM, …), LLM_API_KEY and LLM_MODEL in .env and restart.
"""


def key_source() -> str:
    return "from the environment" if "ADMIN_API_KEY" in os.environ else f"in {dotenv_path()}"


def hstack_command() -> str:
    """How to call `hstack` from this shell: bare when on PATH, else the venv's script."""
    script = Path(sys.executable).parent / "hstack"
    if shutil.which("hstack") == str(script) or not script.exists():
        return "hstack"
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)


def ready_banner(url: str, admin_key: str, demo: bool = False) -> str:
    """The block printed last, once every service is ready."""
    cli = hstack_command()
    steps = [
        (f"{cli} users create alice", "creates a user and prints its API key once"),
        (f"{cli} chat --key <alice's key>", "talk to the agent in this terminal"),
        (f"{cli} status", "services, queue depths, recent turns"),
    ]
    width = max(len(command) for command, _ in steps)
    return (
        f"\nHermes Stack is ready at {url}\n"
        f"  admin key: {admin_key}   (ADMIN_API_KEY {key_source()})\n"
        "Next steps:\n"
        + "".join(f"  {command.ljust(width)}  # {why}\n" for command, why in steps)
        + (DEMO_NOTE if demo else "")
        + "Press Ctrl-C to stop.\n"
    )
