"""Serve the api over real HTTP from a background thread."""

from __future__ import annotations

import socket
import threading
import time
from contextlib import contextmanager
from typing import Iterator

import uvicorn

START_TIMEOUT_SECONDS = 15.0
STOP_TIMEOUT_SECONDS = 10.0


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@contextmanager
def serve_api(app_or_settings=None) -> Iterator[str]:
    """Run uvicorn on a free 127.0.0.1 port and yield the base URL.

    Pass an app, a Settings (an app is built from it) or nothing (an app from the process settings).
    """
    from fastapi import FastAPI

    from services.api.main import create_app

    app = app_or_settings if isinstance(app_or_settings, FastAPI) else create_app(app_or_settings)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_config=None, access_log=False, lifespan="on", timeout_graceful_shutdown=2, ws="none",
        proxy_headers=False,  # as every launcher: the app itself trusts only TRUSTED_PROXIES
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=f"api-{port}", daemon=True)
    thread.start()
    try:
        _wait_until_serving(server, thread, port)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(STOP_TIMEOUT_SECONDS)
        sock.close()


def _wait_until_serving(server: uvicorn.Server, thread: threading.Thread, port: int) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while not (server.started and _accepts(port)):
        if not thread.is_alive():
            raise RuntimeError("the api server thread exited during startup")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the api did not accept connections within {START_TIMEOUT_SECONDS} s")
        time.sleep(0.02)
