"""A small real MCP server for the tests: stdio, with a text tool and an image tool."""

from __future__ import annotations

import io

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp.types import ToolAnnotations

server = MCPServer("demo")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))  # it changes nothing
def add(a: int, b: int) -> str:
    """Add two whole numbers."""
    return f"{a} + {b} = {a + b}"


@server.tool()
def swatch(color: str, size: int = 16) -> Image:
    """A square image of one colour."""
    from PIL import Image as Pillow

    out = io.BytesIO()
    Pillow.new("RGB", (size, size), color).save(out, "PNG")
    return Image(data=out.getvalue(), format="png")


@server.tool()
def fail(message: str) -> str:
    """Always fails, with the message."""
    raise ToolError(message)


if __name__ == "__main__":
    import sys

    if len(sys.argv) > 2 and sys.argv[1] == "--http":  # streamable HTTP on this port
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
