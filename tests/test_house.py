"""The house's rooms: search, file stores and database stores apart, a small shared/ root, and every
registry of the worker filled by one call list at start-up, never as a side effect of an import."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from tests.test_layout import ROOT, imported_modules, python_files

pytestmark = pytest.mark.once  # backend-independent: see tests/conftest.py

SHARED_ROOT = {"__init__", "backoff", "clock", "config", "db", "errors", "ids", "migrate"}
REGISTERING = ("register", "add_", "install")
CALL_LIST = "services/worker/registrations.py"


def test_shared_keeps_only_its_foundation_at_the_root():
    """shared/ held 18 loose modules; what serves one purpose lives in a package named for it."""
    loose = {p.stem for p in (ROOT / "shared").glob("*.py")}
    assert loose == SHARED_ROOT


def test_the_search_engine_is_a_package_of_its_own():
    """The 13 search modules sat in shared/stores/ among the database stores."""
    assert not list((ROOT / "shared" / "stores").glob("search*.py"))
    engine = {p.stem for p in (ROOT / "shared" / "search").glob("*.py")}
    assert {"engine", "query", "sqlite", "postgres", "vectors", "views"} <= engine


def test_file_stores_never_touch_the_database():
    """shared/files/ holds what lives on disk (memory files, skill folders, backups); it opens no transaction."""
    offenders = [f"{p.relative_to(ROOT)} imports {m}" for p in python_files("shared/files")
                 for m in imported_modules(p)
                 if m.split(".")[0] in {"sqlmodel", "sqlalchemy"} or m.startswith(("shared.db", "shared.stores",
                                                                                    "shared.models"))]
    assert offenders == []


def _name(node) -> str:
    node = node.func if isinstance(node, ast.Call) else node
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def module_level_registrations(path) -> list[str]:
    """Calls and decorators at a module's top level whose name registers, adds or installs something."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in tree.body:
        call = node.value if isinstance(node, (ast.Expr, ast.Assign)) else None
        decorators = getattr(node, "decorator_list", [])
        if (isinstance(call, ast.Call) and _name(call).startswith(REGISTERING)) or any(
                _name(d).startswith(REGISTERING) for d in decorators):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node).splitlines()[0][:80]}")
    return found


def test_no_module_fills_a_registry_when_imported():
    """Importing services/worker/features/ registered prompt parts and hooks, services/worker/tools/ the tools
    (each module calling register_…() at its top level; tests then patched the module lists), and importing
    shared.providers registered the `recall` provider class (@register)."""
    offenders = [found for p in python_files("shared", "services") if p.relative_to(ROOT).as_posix() != CALL_LIST
                 for found in module_level_registrations(p)]
    assert offenders == [], "fill registries from services/worker/registrations.py:\n" + "\n".join(offenders)


def test_importing_every_worker_module_installs_no_hooks():
    """A fresh interpreter imports the tools, the features and the call list itself: nothing is installed
    until start-up asks for it."""
    script = ("import services.worker.tools, services.worker.features, services.worker.registrations\n"
              "import pkgutil, importlib, services.worker.tools as t, services.worker.features as f\n"
              "for pkg in (t, f):\n"
              "    for m in pkgutil.iter_modules(pkg.__path__):\n"
              "        importlib.import_module(f'{pkg.__name__}.{m.name}')\n"
              "from services.worker import hooks\n"
              "print(hooks._installed is None)\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "True", out.stderr[-2000:]


def test_the_call_list_registers_every_tool_module():
    """Every Tool any tool module defines reaches the registry the worker runs with, in a toolset."""
    import importlib
    import pkgutil

    from services.worker import tools as package
    from services.worker.registrations import register_tools
    from services.worker.tools.registry import Tool

    modules = [importlib.import_module(f"{package.__name__}.{m.name}") for m in pkgutil.iter_modules(package.__path__)]
    defined = {v.name for m in modules for v in vars(m).values() if isinstance(v, Tool)}
    registry = register_tools()
    assert defined == set(registry.names())
    assert all(tool.toolset for tool in registry)


def test_one_module_puts_turns_on_the_queue():
    """RUN_TURN was sent from the api, the worker and the curator, RESUME_TURN from the api and the
    curator, each with its own try/except and log line; now every sender calls shared/queue/turns.py."""
    senders = sorted({p.relative_to(ROOT).as_posix() for p in python_files("shared", "services")
                      if any(m.endswith((".RunTurn", ".ResumeTurn")) for m in imported_modules(p))})
    assert senders == ["services/worker/tasks.py", "shared/queue/turns.py"]


def test_a_broker_failure_is_logged_and_left_to_the_sweep(caplog):
    """The row is committed before the send, so a send that fails must not fail the request."""
    from shared.queue.turns import send_turn

    def broken(name, payload):
        raise ConnectionError("broker down")

    assert send_turn(broken, "trn_1", "ses_1", approval_id="apr_1") is False
    assert "could not enqueue resume_turn of turn trn_1 (ConnectionError)" in caplog.text
    sent = []
    assert send_turn(lambda name, payload: sent.append((name, payload.turn_id)), "trn_2", "ses_1")
    assert sent == [("run_turn", "trn_2")]
