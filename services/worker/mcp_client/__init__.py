"""The MCP client: servers the owner or a user configured, reached with the official `mcp` SDK.

stdio servers run in the calling user's sandbox (sandboxed.py), HTTP servers behind the address rules
(remote.py); one Pool per worker process keeps their sessions on an event loop of its own (pool.py);
tools.py turns their tools into the agent's `mcp_<server>_<tool>` tools and the `mcp_tools` loader.
"""
