"""MCP servers that misbehave, for the fault tests: `python mcp_faulty_server.py MODE`.

hang     reads its input and never answers `initialize`
garbage  prints lines that are not JSON-RPC, then waits
exit     exits at once with code 3
stuck    a real MCP server whose `wait` tool never returns (its `ping` tool answers)
stubborn the same, and it lives on when its input closes (only a kill ends it)
"""

from __future__ import annotations

import os
import sys
import time

mode = sys.argv[1]
if mode == "hang":
    sys.stdin.read()
elif mode == "garbage":
    for i in range(200):
        print(f"garbage line {i} {{not json", flush=True)
    time.sleep(600)
elif mode == "exit":
    sys.exit(3)
else:
    from mcp.server import MCPServer

    server = MCPServer("faulty")

    @server.tool()
    def ping() -> str:
        """Answers pong."""
        return "pong"

    @server.tool()
    def wait() -> str:
        """Never returns."""
        time.sleep(3600)
        return "never"

    @server.tool()
    def die() -> str:
        """Kills the server."""
        os._exit(9)

    server.run()
    if mode == "stubborn":
        if marker := os.environ.get("FAULTY_MCP_CLOSED_MARKER"):
            with open(marker, "w") as out:
                out.write("asked to close")
        time.sleep(600)
