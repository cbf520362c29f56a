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
    """The image installed pytest and `openai` and shipped tests/ because the demo model lived there (issue 9)."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    installs = re.findall(r"pip install ([^\n&]+)", dockerfile)
    assert installs and all("requirements-test" not in line and "[test]" not in line for line in installs)
    assert "-r requirements.txt" in dockerfile
    runtime = {line.split("==")[0].lower() for line in (ROOT / "requirements.txt").read_text().splitlines()
               if "==" in line and not line.startswith("#")}
    assert not runtime & {"pytest", "openai", "schemathesis", "pytest-timeout"}
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()}
    assert {"tests", "bench"} <= ignored
