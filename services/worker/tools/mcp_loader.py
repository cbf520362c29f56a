"""The `mcp_tools` tool: list or load an MCP server's tools into the session (services/worker/mcp_client/).

Registered like every built-in tool; a turn offers it only to a user with servers, naming them
(mcp_client/tools.for_turn), so the first call of everyone else is unchanged.
"""

from __future__ import annotations

from services.worker.mcp_client.tools import NAME, mcp_tools
from services.worker.tools.registry import Tool

MCP_TOOLS = Tool(
    name=NAME,
    description=("Use tools of the MCP servers configured for you: action=load offers a server's tools as "
                 "mcp_<server>_<tool> from your next step on; action=list shows them first."),
    parameters={"type": "object", "properties": {
        "server": {"type": "string"},
        "action": {"type": "string", "enum": ["load", "list"]},
        "tools": {"type": "array", "items": {"type": "string"}, "description": "load only these"},
    }, "required": ["server"]},
    handler=mcp_tools,
)
