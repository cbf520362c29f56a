"""The web console: server-rendered pages served by the api at `/` (same port, same keys).

Every page reads and writes through the same stores and shared rules as the JSON API; see deps.py for
sign-in, CSRF and the redirect-with-message helper, render.py for templates. `install(app)` adds the
router, the static files, the HTML error pages and the security headers.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.staticfiles import StaticFiles

from services.api.console import chat, conversation_data, cron, learning, mcp, memory, owner, search, signin, skills
from services.api.console import sent_files, uploads
from services.api.console import errors
from services.api.console.headers import SecurityHeaders
from services.api.console.paths import STATIC_PREFIX

STATIC = Path(__file__).parent / "static" / "console"

router = APIRouter(include_in_schema=False)
for _module in (signin, conversation_data, uploads, sent_files, chat, search, memory, skills, learning, cron, mcp,
                owner):
    router.include_router(_module.router)


def install(app: FastAPI) -> None:
    """Serve the console on this app (call after the API's error handlers are installed)."""
    errors.install(app)
    app.include_router(router)
    app.mount(STATIC_PREFIX, StaticFiles(directory=STATIC), name="console-static")
    app.add_middleware(SecurityHeaders)
