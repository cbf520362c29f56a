"""docker-compose.yml and the Dockerfile describe a stack that can start: real modules, the right queues,
one shared data volume, healthchecks, documented variables, required secrets."""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from celery import Celery
from celery.app.utils import find_app

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
ENV_EXAMPLE = (ROOT / ".env.example").read_text()
DATA_SERVICES = ("api", "worker", "reviewer", "curator")
ONE_SHOT = {"migrate"}  # runs to completion before the others start; a healthcheck has nothing to watch
VARIABLE = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)([^}]*)\}")


def python_services() -> dict[str, dict]:
    """Services running the stack's own image."""
    return {name: s for name, s in SERVICES.items() if "build" in s}


def command(name: str) -> list[str]:
    cmd = SERVICES[name]["command"]
    return shlex.split(cmd) if isinstance(cmd, str) else list(cmd)


def option(cmd: list[str], flag: str) -> str:
    assert flag in cmd, f"{flag} missing from {cmd}"
    return cmd[cmd.index(flag) + 1]


def documented(variable: str) -> bool:
    return re.search(rf"^#?\s*{re.escape(variable)}=", ENV_EXAMPLE, re.MULTILINE) is not None


def test_the_stack_has_every_service():
    assert {"api", "worker", "reviewer", "curator", "redis", "postgres", "migrate"} <= set(SERVICES)


@pytest.mark.parametrize("name", sorted(python_services()))
def test_every_python_command_names_something_importable(name):
    cmd = command(name)
    if cmd[0] == "hstack":
        from services.cli.main import build_parser

        assert build_parser().parse_args(cmd[1:]).command == cmd[1]
        return
    assert cmd[:2] == ["python", "-m"], cmd
    module = cmd[2]
    if module == "celery":
        assert isinstance(find_app(option(cmd, "-A")), Celery)
    elif module == "uvicorn":
        assert "--factory" in cmd
        target_module, _, attr = option(cmd, "--factory").partition(":")
        assert callable(getattr(importlib.import_module(target_module), attr))
    else:
        assert importlib.util.find_spec(module) is not None, f"{name}: no module {module}"


def test_each_worker_consumes_its_queue():
    assert option(command("worker"), "-Q") == "turns"
    assert option(command("reviewer"), "-Q") == "review"
    curator = command("curator")
    assert "-B" in curator and option(curator, "-Q") == "curator"
    assert option(curator, "--schedule").startswith("/data/")


def test_the_reviewer_can_scale_out():
    reviewer = SERVICES["reviewer"]
    assert "container_name" not in reviewer and "ports" not in reviewer


def test_one_data_volume_is_shared_by_the_services_that_need_it():
    assert "hstack-data" in COMPOSE["volumes"]
    for name in DATA_SERVICES:
        assert "hstack-data:/data" in SERVICES[name]["volumes"], name
        assert SERVICES[name]["environment"]["DATA_DIR"] == "/data", name


def test_every_long_running_service_has_a_healthcheck():
    missing = [name for name, s in SERVICES.items() if name not in ONE_SHOT and not s.get("healthcheck", {}).get("test")]
    assert missing == []


def test_every_long_running_service_restarts_unless_stopped():
    """A crashed service stayed down until a person restarted it."""
    wrong = {name: s.get("restart") for name, s in SERVICES.items()
             if name not in ONE_SHOT and s.get("restart") != "unless-stopped"}
    assert wrong == {}


def health_test(name: str) -> list[str]:
    test = SERVICES[name]["healthcheck"]["test"]
    return shlex.split(test) if isinstance(test, str) else list(test)


def test_the_api_healthcheck_asks_its_own_healthz():
    test = health_test("api")
    assert test[0] == "CMD" and "http://127.0.0.1:8642/healthz" in " ".join(test)
    assert "8642" in option(command("api"), "--port")


@pytest.mark.parametrize("name", ["worker", "reviewer", "curator"])
def test_a_worker_healthcheck_reads_its_own_heartbeat(name):
    """The workers' healthchecks must call something that exists and checks THIS service on THIS container:
    `hstack health SERVICE` (tested in tests/services/cli/test_logs_and_health.py)."""
    from services.cli.main import build_parser

    test = health_test(name)
    assert test[:2] == ["CMD", "hstack"]
    args = build_parser().parse_args(test[2:])
    assert (args.command, args.service, args.host) == ("health", name, None)
    assert SERVICES[name]["environment"]["HSTACK_SERVICE"] == name, "the name the service announces itself under"


def test_the_demo_model_healthcheck_asks_its_port():
    port = option(command("demo-model"), "--port")
    assert f"http://127.0.0.1:{port}/v1/models" in " ".join(health_test("demo-model"))


def seconds(duration: str) -> float:
    match = re.fullmatch(r"(\d+)(s|m)", str(duration))
    assert match, duration
    return int(match.group(1)) * (60 if match.group(2) == "m" else 1)


def worker_grace_seconds() -> float:
    """The graceful stop a worker takes on SIGTERM (WORKER_SHUTDOWN_GRACE_SECONDS, 8 s by default)."""
    from shared.config import Settings

    field = next((f for f in Settings.model_fields.values() if f.alias == "WORKER_SHUTDOWN_GRACE_SECONDS"), None)
    return float(field.default) if field is not None else 8.0


def test_compose_waits_out_a_graceful_stop_before_killing():
    """Compose's default 10 s stop turned a graceful worker stop under load into a kill."""
    for name in ("api", "worker", "reviewer", "curator"):
        assert seconds(SERVICES[name]["stop_grace_period"]) >= 10, name
    for name in ("worker", "reviewer", "curator"):
        assert seconds(SERVICES[name]["stop_grace_period"]) >= worker_grace_seconds() + 2, name


def test_services_wait_for_healthy_dependencies():
    for name in DATA_SERVICES:
        depends = SERVICES[name]["depends_on"]
        assert depends["redis"]["condition"] == "service_healthy", name
        assert depends["migrate"]["condition"] == "service_completed_successfully", name


def test_every_variable_is_documented_in_env_example():
    used = {m.group(1) for m in VARIABLE.finditer((ROOT / "docker-compose.yml").read_text())}
    assert sorted(v for v in used if not documented(v)) == []


def test_the_admin_key_is_required_and_no_secret_gets_a_real_default():
    text = (ROOT / "docker-compose.yml").read_text()
    uses = [(m.group(1), m.group(2)) for m in VARIABLE.finditer(text)]
    admin = [rest for name, rest in uses if name == "ADMIN_API_KEY"]
    assert admin and all(rest.startswith(":?") for rest in admin)
    for name, rest in uses:
        if re.search(r"KEY|SECRET|TOKEN|PASSWORD", name) and rest.startswith(":-") and rest[2:]:
            # The one exception: the optional Postgres on the internal network, never published.
            assert name == "POSTGRES_PASSWORD" and "ports" not in SERVICES["postgres"], name


def test_postgres_is_optional_behind_a_profile():
    assert SERVICES["postgres"]["profiles"] == ["postgres"]
    assert SERVICES["migrate"]["depends_on"]["postgres"]["required"] is False


def test_every_setting_is_documented_in_env_example():
    from shared.config import Settings

    names = [field.alias or name for name, field in Settings.model_fields.items()]
    assert [n for n in names if not documented(n)] == []


def test_only_the_worker_gets_what_bubblewrap_needs_and_no_capability():
    """The terminal's sandbox needs namespaces and a fresh /proc inside the worker's container."""
    needs = {"seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"}
    assert needs <= set(SERVICES["worker"].get("security_opt", []))
    relaxed = [name for name, s in SERVICES.items() if name != "worker" and s.get("security_opt")]
    assert relaxed == []
    assert all("cap_add" not in s and not s.get("privileged") for s in SERVICES.values())
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"apt-get install[^\n]*bubblewrap", dockerfile)
    assert "TERMINAL_SANDBOX" not in COMPOSE["x-env"]  # the default, bwrap, holds in containers


def test_the_dockerfile_copies_what_exists_and_runs_unprivileged():
    lines = [line.split() for line in (ROOT / "Dockerfile").read_text().splitlines() if line.strip()]
    copies = [words[1:-1] for words in lines if words[0] == "COPY"]
    assert copies, "the Dockerfile copies nothing"
    for sources in copies:
        for source in sources:
            assert (ROOT / source).exists(), f"COPY source {source} does not exist"
    assert any(words[0] == "USER" and words[1] != "root" for words in lines)
    assert any(words[0] == "FROM" and words[1] == "python:3.11-slim" for words in lines)


@pytest.mark.skipif(not shutil.which("docker"), reason="no docker client")
def test_docker_compose_accepts_the_file(tmp_path):
    probe = subprocess.run([shutil.which("docker"), "compose", "version"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip("the docker compose plugin is not installed")
    result = subprocess.run(
        [shutil.which("docker"), "compose", "-f", str(ROOT / "docker-compose.yml"), "--profile", "postgres", "config", "--quiet"],
        capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "ADMIN_API_KEY": "x" * 32},
    )
    assert result.returncode == 0, result.stderr


def test_the_image_installs_runtime_pins_only_and_leaves_tests_out():
    """The image installed pytest and `openai` and shipped tests/ because the demo model lived there."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    installs = re.findall(r"pip install ([^\n&]+)", dockerfile)
    assert installs and all("requirements-test" not in line and "[test]" not in line for line in installs)
    assert "-r requirements.txt" in dockerfile
    runtime = {line.split("==")[0].lower() for line in (ROOT / "requirements.txt").read_text().splitlines()
               if "==" in line and not line.startswith("#")}
    assert not runtime & {"pytest", "openai", "schemathesis", "pytest-timeout"}
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()}
    assert {"tests", "bench"} <= ignored


def test_the_gateway_is_an_api_client_on_its_own_port():
    """The gateway reaches the api over HTTP with its own key, serves webhooks on 8644, and has no
    database, Redis or data volume of its own."""
    gateway = SERVICES["gateway"]
    assert command("gateway") == ["python", "-m", "services.gateway"]
    env = gateway["environment"]
    assert env["GATEWAY_API_URL"] == "http://api:8642" and env["GATEWAY_PORT"] == "8644"
    assert "http://127.0.0.1:8644/healthz" in " ".join(health_test("gateway"))
    assert gateway["depends_on"] == {"api": {"condition": "service_healthy"}}
    assert "volumes" not in gateway
    key = [rest for name, rest in (
        (m.group(1), m.group(2)) for m in VARIABLE.finditer((ROOT / "docker-compose.yml").read_text()))
        if name == "GATEWAY_API_KEY"]
    assert key and all(rest.startswith(":?") for rest in key), "the gateway key is required, never defaulted"
