"""The one-way data flow, enforced: shared/ never imports services/, no service imports another,
and only shared/stores/* commits to the database."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py

ROOT = Path(__file__).resolve().parent.parent
CODE_DIRS = ("shared", "services", "bench")
COMMIT_ALLOWED = ("shared/stores/", "shared/db.py", "shared/migrations/")
COMMIT_CALL = re.compile(r"\.commit\(|\bdb\.write\(")


def python_files(*dirs: str) -> list[Path]:
    return sorted(p for d in dirs for p in (ROOT / d).rglob("*.py") if "__pycache__" not in p.parts)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> list[str]:
    """Absolute names of every module a file imports, relative imports resolved."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names.append(base)
            names += [f"{base}.{alias.name}" for alias in node.names]
    return names


def service_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "services" else None


def test_the_import_rules_see_relative_imports():
    path = ROOT / "services" / "cli" / "main.py"
    assert "services.cli.chat" in imported_modules(path)
    assert service_of("services.worker.tasks") == "worker" and service_of("shared.db") is None


def test_shared_never_imports_services():
    offenders = [
        f"{p.relative_to(ROOT)} imports {m}"
        for p in python_files("shared")
        for m in imported_modules(p)
        if m == "services" or m.startswith("services.")
    ]
    assert offenders == [], "shared/ must not import services/:\n" + "\n".join(offenders)


def test_no_service_imports_another_service():
    offenders = []
    for path in python_files("services"):
        own = service_of(module_name(path))
        for module in imported_modules(path):
            other = service_of(module)
            if own and other and other != own:
                offenders.append(f"{path.relative_to(ROOT)} ({own}) imports {module}")
    assert offenders == [], "services talk through stores, Redis and task names only:\n" + "\n".join(offenders)


def test_only_the_stores_commit_to_the_database():
    offenders = []
    for path in python_files(*CODE_DIRS):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith(COMMIT_ALLOWED):
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if COMMIT_CALL.search(line):
                offenders.append(f"{relative}:{number}: {line.strip()}")
    assert offenders == [], "only shared/stores/* may commit:\n" + "\n".join(offenders)


def test_product_code_never_imports_tests():
    """The image shipped tests/ because `make run` served the demo model from tests/fakes/: product
    code (shared/, services/) must run without tests/ present, so it never imports it, not even by module name
    in a command line."""
    offenders = [
        f"{p.relative_to(ROOT)} imports {m}"
        for p in python_files("shared", "services")
        for m in imported_modules(p)
        if m == "tests" or m.startswith("tests.")
    ]
    offenders += [f"{p.relative_to(ROOT)} runs {m.group(0)}" for p in python_files("shared", "services")
                  for m in re.finditer(r"""["']tests\.[\w.]+["']""", p.read_text())]
    assert offenders == [], "product code must not depend on tests/:\n" + "\n".join(offenders)


def test_compose_runs_nothing_from_tests():
    """compose's demo-model service ran `python -m tests.fakes.model`: the image needs no tests/."""
    assert "tests." not in (ROOT / "docker-compose.yml").read_text()


GATEWAY_FORBIDDEN = ("shared.stores", "shared.db", "shared.queue", "shared.messaging", "shared.migrate", "sqlmodel",
                     "sqlalchemy", "redis", "celery")


def test_the_gateway_is_only_an_http_client_of_the_api():
    """The gateway never touches the database, the queue or Redis: the api is its only way in."""
    offenders = [
        f"{p.relative_to(ROOT)} imports {m}"
        for p in python_files("services/gateway")
        for m in imported_modules(p)
        if any(m == f or m.startswith(f + ".") for f in GATEWAY_FORBIDDEN)
    ]
    assert python_files("services/gateway"), "services/gateway exists"
    assert offenders == [], "the gateway talks to the api over HTTP only:\n" + "\n".join(offenders)
