"""`make test`: the whole suite on SQLite, then again on the real Postgres server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys


def postgres_reachable(host: str = "127.0.0.1", port: int = 5432) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def run(label: str, env: dict[str, str], args: list[str]) -> int:
    print(f"\n=== test suite on {label} ===", flush=True)
    return subprocess.call([sys.executable, "-m", "pytest", *args], env=env)


def main() -> int:
    args = sys.argv[1:]
    code = run("SQLite", {**os.environ, "TEST_DATABASE": "sqlite"}, args)
    if postgres_reachable():
        code = run("Postgres", {**os.environ, "TEST_DATABASE": "postgres"}, [*args, "-m", "not sqlite_only"]) or code
    elif os.environ.get("CI"):
        print("Postgres is not reachable at 127.0.0.1:5432 and CI=true: failing.", flush=True)
        code = code or 1
    else:
        print("SKIPPED the Postgres pass: nothing listens on 127.0.0.1:5432.", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
