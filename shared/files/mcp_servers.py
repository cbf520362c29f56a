"""The MCP servers' settings files: the owner's for everyone and each user's own, JSON, written atomically.

`DATA_DIR/mcp/servers.json` holds the owner's servers (every user may call them); a user's own are in
`DATA_DIR/users/<id>/mcp/servers.json`. No migration: a server is a handful of fields nobody queries.
Writes hold the file's exclusive lock (as memory files do) so two api processes adding at once keep both entries.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from shared.errors import Conflict, InvalidInput, NotFound
from shared.files.atomic import atomic_write
from shared.files.memory import locked
from shared.mcp.servers import GLOBAL, McpServerIn


def config_path(data_dir: Path, scope: str) -> Path:
    """Where the servers of `scope` ("global" or a user id) are kept."""
    if scope == GLOBAL:
        return Path(data_dir) / "mcp" / "servers.json"
    return Path(data_dir) / "users" / scope / "mcp" / "servers.json"


def load(data_dir: Path, scope: str) -> list[McpServerIn]:
    """The servers of `scope`, in the order they were added; an entry that no longer validates is skipped."""
    path = config_path(data_dir, scope)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # absent or unreadable: no servers
        return []
    servers = []
    for entry in raw.get("servers", []) if isinstance(raw, dict) else []:
        try:
            servers.append(McpServerIn.model_validate(entry))
        except ValidationError:
            continue
    return servers


def servers_for(data_dir: Path, user_id: str) -> list[tuple[str, McpServerIn]]:
    """(scope, server) a user may call: the owner's first, then their own (an own server of the same name is hidden).

    For `GLOBAL` itself (the admin key), the owner's servers only."""
    owned = [(GLOBAL, s) for s in load(data_dir, GLOBAL)]
    if user_id == GLOBAL:
        return owned
    names = {s.name for _, s in owned}
    return owned + [(user_id, s) for s in load(data_dir, user_id) if s.name not in names]


def find(data_dir: Path, user_id: str, name: str) -> tuple[str, McpServerIn]:
    for scope, server in servers_for(data_dir, user_id):
        if server.name == name:
            return scope, server
    raise NotFound(f"No MCP server named {name!r}.")


def add(data_dir: Path, scope: str, server: McpServerIn, *, max_servers: int) -> McpServerIn:
    """Add a server to `scope`; 409 when the name is taken there, 400 past the per-scope cap."""
    path = config_path(data_dir, scope)
    with locked(path):
        servers = load(data_dir, scope)
        if any(s.name == server.name for s in servers):
            raise Conflict(f"An MCP server named {server.name!r} already exists.")
        if len(servers) >= max_servers:
            raise InvalidInput(f"At most {max_servers} MCP servers may be configured here (MCP_MAX_SERVERS).")
        _write(path, [*servers, server])
    return server


def remove(data_dir: Path, scope: str, name: str) -> None:
    """Forget a server of `scope`; 404 when it has none of that name."""
    path = config_path(data_dir, scope)
    with locked(path):
        servers = load(data_dir, scope)
        kept = [s for s in servers if s.name != name]
        if len(kept) == len(servers):
            raise NotFound(f"No MCP server named {name!r}.")
        _write(path, kept)


def _write(path: Path, servers: list[McpServerIn]) -> None:
    body = {"servers": [s.model_dump(exclude_none=True) for s in servers]}
    atomic_write(path, json.dumps(body, indent=2, ensure_ascii=False) + "\n")
