"""A tiny MCP server written with the official SDK, for the MCP client's tests (stdio or streamable HTTP).

    python mcp_server.py stdio [--extra N]
    python mcp_server.py http PORT [--extra N]

Tools: `echo` and `read_path` (read-only), `write_note` (a write: appends to notes.txt in its folder);
`--extra N` adds N more read-only tools (`extra_0` …) to show a server too large to load whole.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

READ_ONLY = ToolAnnotations(read_only_hint=True)


def build(extra: int) -> MCPServer:
    server = MCPServer("hstack-test")

    @server.tool(annotations=READ_ONLY, description="Echo the text back, with the server's process id.")
    def echo(text: str) -> str:
        return f"echo:{text} (pid {os.getpid()})"

    @server.tool(annotations=READ_ONLY, description="Read a file and return its text.")
    def read_path(path: str) -> str:
        try:
            return Path(path).read_text()[:2000]
        except OSError as exc:
            return f"cannot read: {type(exc).__name__}"

    @server.tool(description="Append a note to notes.txt.")
    def write_note(text: str) -> str:
        with open("notes.txt", "a") as fh:
            fh.write(text + "\n")
        return f"noted: {text}"

    for n in range(extra):
        server.add_tool(lambda n=n: f"extra {n}", name=f"extra_{n}", description=f"Extra tool {n}.",
                        annotations=READ_ONLY)
    return server


def main(argv: list[str]) -> None:
    extra = int(argv[argv.index("--extra") + 1]) if "--extra" in argv else 0
    server = build(extra)
    if argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(argv[2]))


if __name__ == "__main__":
    main(sys.argv)
