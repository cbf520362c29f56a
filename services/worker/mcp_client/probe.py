"""`hstack mcp test`: connect to one server now and record what happened in its health."""

from __future__ import annotations

import logging
from pathlib import Path

from shared.config import Settings
from shared.errors import HermesError
from shared.files import mcp_servers
from shared.mcp import health
from shared.messaging.connections import get_redis

from .pool import Target, pool_for
from .schemas import describe

log = logging.getLogger(__name__)
PROBE_USER = "mcp-probe"  # the owner's stdio server is tried in a workspace of its own, never a user's


def probe(settings: Settings, server: str, user_id: str | None) -> bool:
    """Connect (or reuse the live session) and store the tools; False when the server is down or unknown."""
    r = get_redis(settings)
    try:
        scope, config = mcp_servers.find(settings.data_dir, user_id or mcp_servers.GLOBAL, server)
        runner = user_id or PROBE_USER
        workspace = Path(settings.data_dir) / "users" / runner / "workspace"
        workspace.mkdir(parents=True, exist_ok=True)
        target = Target(scope, config, runner, workspace)
        tools = pool_for(settings, r).check(target)
    except HermesError as exc:
        log.info("mcp probe of %s: %s", server, exc.message)
        return False
    health.store_tools(r, scope, server, [describe(server, t, settings.mcp_schema_max_bytes) for t in tools])
    return True
