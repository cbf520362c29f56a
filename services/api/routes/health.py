"""Liveness and readiness; no auth (metrics are in routes/metrics.py, behind a key)."""

from __future__ import annotations

import asyncio

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from sqlalchemy import text

from services.api.deps import DbDep
from services.api.errors import error_response
from services.api.schemas import ErrorBody, Health, Readiness
from shared.db import Database

CHECK_TIMEOUT_SECONDS = 2.0

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health)
async def healthz() -> Health:
    """The process answers; touches nothing else."""
    return Health(status="ok")


def _select_one(db: Database) -> None:
    with db.read() as s:
        s.execute(text("SELECT 1"))


async def _check(name: str, probe) -> tuple[str, str]:
    try:
        await asyncio.wait_for(probe(), CHECK_TIMEOUT_SECONDS)
    except Exception as exc:  # any failure means not ready; the reason goes in the body
        return name, f"failed: {type(exc).__name__}"
    return name, "ok"


@router.get("/readyz", response_model=Readiness, responses={503: {"model": ErrorBody}})
async def readyz(request: Request, db: DbDep) -> Readiness | JSONResponse:
    """Ready when the database answers SELECT 1 and Redis answers PING, each within 2 s.

    PING goes over readiness' own connections, so no number of open streams or busy requests can
    make a healthy api look unready."""
    r = request.app.state.ready_redis
    results = await asyncio.gather(
        _check("database", lambda: anyio.to_thread.run_sync(_select_one, db, abandon_on_cancel=True)),
        _check("redis", r.ping),
    )
    checks = dict(results)
    failed = sorted(name for name, state in checks.items() if state != "ok")
    if failed:
        detail = ", ".join(f"{name} {checks[name]}" for name in failed)
        return error_response("/readyz", 503, "service_unavailable", f"Not ready: {detail}.")
    return Readiness(status="ready", checks=checks)
