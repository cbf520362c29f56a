"""docker-compose.yml and the Dockerfile describe a stack that can start: real modules, the right queues,
one shared data volume, healthchecks, documented variables, required secrets."""

from __future__ import annotations

import importlib
import importlib.util
import json
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
from pydantic import SecretStr

from tests.support.compose import client_env

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
    """The service's command; for `sh -c SCRIPT`, the command the script ends by exec'ing."""
    cmd = SERVICES[name]["command"]
    cmd = shlex.split(cmd) if isinstance(cmd, str) else list(cmd)
    return shlex.split(cmd[2].rsplit("exec ", 1)[1]) if cmd[:2] == ["sh", "-c"] else cmd


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
    """A crashed service stayed down until a person restarted it. The demo model restarts on failure only: it
    exits 0 on purpose when a model is configured, and must then stay down."""
    wrong = {name: s.get("restart") for name, s in SERVICES.items()
             if name not in ONE_SHOT | {"demo-model"} and s.get("restart") != "unless-stopped"}
    assert wrong == {}
    assert SERVICES["demo-model"]["restart"] == "on-failure"


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
    assert COMPOSE["x-settings"].get("TERMINAL_SANDBOX") is None  # the default, bwrap, holds unless .env says


def test_the_dockerfile_copies_what_exists_and_runs_unprivileged():
    lines = [line.split() for line in (ROOT / "Dockerfile").read_text().splitlines() if line.strip()]
    copies = [words[1:-1] for words in lines if words[0] == "COPY" and not words[1].startswith("--from=")]
    assert copies, "the Dockerfile copies nothing"
    for sources in copies:
        for source in sources:
            assert (ROOT / source).exists(), f"COPY source {source} does not exist"
    assert any(words[0] == "USER" and words[1] != "root" for words in lines)
    assert any(words[0] == "FROM" and words[1] == "python:3.11-slim" for words in lines)


def compose_config(tmp_path: Path, env_lines: list[str], *args: str,
                   output: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """`docker compose config` of the file with a .env of these lines, and nothing from this process's own
    environment (the suite's GATEWAY_API_KEY once made a file missing it look valid)."""
    require_compose_client()
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "docker-compose.yml", project / "docker-compose.yml")
    (project / ".env").write_text("\n".join(env_lines) + "\n")
    return subprocess.run(["docker", "compose", *args, "config", *output], capture_output=True, text=True, cwd=project,
                          env=client_env())


def require_compose_client() -> None:
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, env=client_env()) \
        if shutil.which("docker") else None
    if probe is None or probe.returncode != 0:
        if os.environ.get("CI"):
            pytest.fail("CI=true and the docker compose plugin is not installed")
        pytest.skip("the docker compose plugin is not installed")


REQUIRED = ["ADMIN_API_KEY=" + "a" * 32, "GATEWAY_API_KEY=" + "g" * 32, "REDIS_PASSWORD=" + "r" * 32]


def test_docker_compose_accepts_the_file_with_the_documented_secrets(tmp_path):
    result = compose_config(tmp_path, REQUIRED, "--profile", "postgres")
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("missing", ["ADMIN_API_KEY", "GATEWAY_API_KEY", "REDIS_PASSWORD"])
def test_docker_compose_refuses_to_start_without_a_required_secret(tmp_path, missing):
    """The check passed only because the test's own environment carried GATEWAY_API_KEY into compose."""
    result = compose_config(tmp_path, [line for line in REQUIRED if not line.startswith(missing + "=")])
    assert result.returncode != 0 and missing in result.stderr


def test_a_bare_setting_passes_from_env_to_the_containers_and_an_unset_one_stays_unset(tmp_path):
    result = compose_config(tmp_path, [*REQUIRED, "LOG_LEVEL=DEBUG", "LLM_API_KEY=sk-test-key"],
                            output=("--format", "json"))
    assert result.returncode == 0, result.stderr
    services = json.loads(result.stdout)["services"]
    assert services["worker"]["environment"]["LOG_LEVEL"] == "DEBUG"
    assert services["worker"]["environment"]["LLM_API_KEY"] == "sk-test-key"
    assert services["worker"]["environment"].get("APPROVAL_MODE") is None  # the stack's own default holds
    assert "LLM_API_KEY" not in services["gateway"]["environment"]


def test_the_image_installs_runtime_pins_only_and_leaves_tests_out():
    """The image installed pytest and `openai` and shipped tests/ because the demo model lived there."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    installs = re.findall(r"pip install ([^\n&]+)", dockerfile)
    assert installs and all("requirements-test" not in line and "[test]" not in line for line in installs)
    assert re.search(r"pip install -r \S*requirements\.txt", dockerfile)
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


# Who may hold each secret: a setting typed SecretStr, or a URL that carries a password. A new secret
# setting fails the test below until it is given its holders here and in docker-compose.yml.
SECRET_HOLDERS = {
    "ADMIN_API_KEY": {"api"},
    "METRICS_TOKEN": {"api"},
    "CONSOLE_SECRET": {"api"},
    "GATEWAY_API_KEY": {"api", "gateway"},
    "LLM_API_KEY": {"worker", "reviewer"},
    "BRAVE_SEARCH_API_KEY": {"worker", "reviewer"},
    "VISION_API_KEY": {"worker", "reviewer"},
    "STT_API_KEY": {"worker"},
    "EMBEDDINGS_API_KEY": {"api", "worker", "reviewer"},
    "TTS_API_KEY": {"worker"},
    "TELEGRAM_BOT_TOKEN": {"gateway"},
    "DATABASE_URL": {"migrate", "api", "worker", "reviewer", "curator"},
    "REDIS_URL": {"api", "worker", "reviewer", "curator"},
    "REDIS_PASSWORD": {"redis"},
}
# Set per service, or left to the image: the gateway's own address, the skills the image bundles.
PINNED_PER_SERVICE = {"GATEWAY_HOST", "GATEWAY_PORT", "GATEWAY_API_URL", "BUNDLED_SKILLS_DIR"}


def setting_names() -> dict[str, object]:
    from shared.config import Settings

    return {field.alias or name: field for name, field in Settings.model_fields.items()}


def secret_names() -> set[str]:
    typed = {name for name, field in setting_names().items() if SecretStr in getattr(field.annotation, "__args__",
                                                                                   (field.annotation,))}
    return typed | {"DATABASE_URL", "REDIS_URL"}


def test_every_secret_has_named_holders():
    assert secret_names() == set(SECRET_HOLDERS)


def test_each_secret_reaches_only_the_services_that_need_it():
    """The gateway got ADMIN_API_KEY and LLM_API_KEY through one env_file shared by every service."""
    assert [name for name, s in SERVICES.items() if "env_file" in s] == []
    held = {secret: {name for name, s in SERVICES.items() if secret in (s.get("environment") or {})}
            for secret in SECRET_HOLDERS}
    assert held == SECRET_HOLDERS


def test_every_other_setting_passes_through_to_every_python_service():
    shared = set(COMPOSE["x-settings"])
    assert not shared & secret_names()
    assert set(setting_names()) - shared - secret_names() - PINNED_PER_SERVICE == set()
    for name in ("migrate", "api", "worker", "reviewer", "curator", "gateway"):
        assert shared <= set(SERVICES[name]["environment"]), name


def test_redis_demands_its_password_and_refuses_admin_commands():
    redis = SERVICES["redis"]
    assert redis["environment"]["REDIS_PASSWORD"].startswith("${REDIS_PASSWORD:?")
    shell, flag, script = SERVICES["redis"]["command"]
    assert (shell, flag) == ("sh", "-c") and '--user default on ">$$REDIS_PASSWORD"' in script
    for denied in ("-config", "-module", "-debug", "-shutdown", "-flushall", "-flushdb", "-save", "-bgsave",
                   "-bgrewriteaof", "-replicaof", "-slaveof", "-monitor", "-acl", "-failover", "-sync", "-psync"):
        assert f" {denied}" in script, denied
    assert "REDISCLI_AUTH" in " ".join(health_test("redis"))
    for name in SECRET_HOLDERS["REDIS_URL"]:
        assert SERVICES[name]["environment"]["REDIS_URL"] == "redis://:${REDIS_PASSWORD:?set REDIS_PASSWORD in .env}@redis:6379/0"


def test_ports_are_published_on_loopback_unless_told_otherwise():
    for name in ("api", "gateway"):
        assert all(port.startswith("${PUBLISH_ADDRESS:-127.0.0.1}:") for port in SERVICES[name]["ports"]), name
    assert [name for name, s in SERVICES.items() if s.get("ports") and name not in ("api", "gateway")] == []


@pytest.mark.parametrize("configured, starts", [("http://127.0.0.1:1/v1", False), ("", True)])
def test_the_demo_model_starts_only_without_a_configured_model(configured, starts, tmp_path):
    """The demo model ran beside a configured provider."""
    script = SERVICES["demo-model"]["command"][-1].replace("$$", "$").replace("exec python", "echo would-exec python")
    result = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=10,
                            env={"PATH": os.environ["PATH"], "LLM_BASE_URL": configured})
    assert result.returncode == 0
    assert ("would-exec python -m services.demo_model" in result.stdout) is starts
    assert SERVICES["demo-model"]["environment"] == {"LLM_BASE_URL": "${LLM_BASE_URL:-}"}


def test_the_wheel_ships_the_product_and_its_bundled_skills_only():
    """The wheel packaged tests/ and bench/ as top-level packages and left the bundled skills out;
    the image installs only the wheel (tests/e2e/test_compose_stack.py checks `hstack` there)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert project["packages"]["find"]["include"] == ["shared*", "services*"]
    assert project["package-data"]["shared.bundled_skills"] == ["**/*.md"]
    from shared.config import Settings

    bundled = Settings.model_fields["bundled_skills_dir"].default
    assert bundled == ROOT / "shared" / "bundled_skills" and (bundled / "tidy-memory" / "SKILL.md").is_file()
    assert all(path.suffix == ".md" for path in bundled.rglob("*") if path.is_file())


@pytest.mark.parametrize("name", ["worker", "reviewer", "curator"])
def test_a_heartbeat_check_allows_for_a_slow_python_start(name):
    """`hstack health` took over 10 s on a loaded 2-core host (load 13), so a healthy reviewer was marked
    unhealthy and `--scale reviewer=2` never became healthy."""
    assert seconds(SERVICES[name]["healthcheck"]["timeout"]) >= 30


def test_the_gateway_shares_a_network_with_the_api_only():
    """The gateway, which holds no Redis or database secret, could still open connections to Redis and
    Postgres on the one network every service shared."""
    assert SERVICES["gateway"]["networks"] == ["edge"]
    on_edge = [name for name, s in SERVICES.items() if "edge" in s.get("networks", [])]
    assert sorted(on_edge) == ["api", "gateway"]
    assert "default" in SERVICES["api"]["networks"]
