"""Stage the test MCP server into a user's workspace: the script and the SDK's packages it imports.

Inside the sandbox only the system's Python (/usr/bin/python3) and the workspace are visible, so the
server's packages are copied next to it, as a user would install a server into their own workspace.
"""

from __future__ import annotations

import shutil
import sys
import sysconfig
from pathlib import Path

FAKES = Path(__file__).resolve().parent
PACKAGES = ("annotated_types", "anyio", "click", "httpx2", "httpcore2", "h11", "idna", "truststore", "mcp",
            "mcp_types", "opentelemetry", "pydantic", "pydantic_core", "python_multipart", "multipart",
            "sniffio", "sse_starlette", "starlette", "typing_inspection", "uvicorn", "jsonschema",
            "jsonschema_specifications", "referencing", "rpds", "attrs", "attr", "jwt", "certifi",
            "typing_extensions.py", "importlib_metadata", "zipp")
LIB = ".mcp-lib"
SYSTEM_PYTHON = "/usr/bin/python3"


def site_packages() -> Path:
    return Path(sysconfig.get_paths()["purelib"])


def stage(workspace: Path) -> list[str]:
    """Copy the server and its packages into `workspace`; returns the argv that starts it over stdio there."""
    lib = workspace / LIB
    if not lib.exists():
        source = site_packages()
        for name in PACKAGES:
            path = source / name
            if path.is_dir():
                shutil.copytree(path, lib / name, ignore=shutil.ignore_patterns("__pycache__"))
            elif path.exists():
                lib.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, lib / name)
        for info in source.glob("*.dist-info"):
            if info.name.split("-")[0].lower().replace("_", "") in {p.replace("_", "").split(".")[0] for p in PACKAGES}:
                shutil.copytree(info, lib / info.name)
    shutil.copy2(FAKES / "mcp_server.py", workspace / "mcp_server.py")
    return ["env", f"PYTHONPATH=/workspace/{LIB}", SYSTEM_PYTHON, "/workspace/mcp_server.py", "stdio"]


if __name__ == "__main__":
    print(stage(Path(sys.argv[1])))
