"""MCP tools from a real stdio MCP server (tests/support/mcp_server.py), through the loop."""

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from desktop.core.events import ToolResult, TurnFinished
from desktop.core.loop import complete_turn
from desktop.core.messages import Message, ToolCall
from desktop.core.providers.base import Capabilities
from desktop.core.tools.mcp import (
    McpConfigError,
    McpServers,
    load_mcp_config,
    parse_mcp_config,
)
from desktop.core.tools.toolbox import Toolbox
from tests.support.fakes import ScriptedProvider, Step

SERVER = str(Path(__file__).resolve().parents[2] / "support" / "mcp_server.py")


def config(**extra: Any) -> dict[str, Any]:
    return {"mcpServers": {"demo": {"command": sys.executable, "args": [SERVER], **extra}}}


async def test_tools_from_a_real_stdio_server_drive_a_turn() -> None:
    servers = McpServers(parse_mcp_config(config(trusted=True, cooldown_s=5)))
    try:
        assert await servers.start() == []
        names = sorted(t.name for t in servers.tools)
        assert names == ["demo__add", "demo__fail", "demo__swatch"]
        add = next(t for t in servers.tools if t.name == "demo__add")
        assert add.description == "[demo] Add two whole numbers."
        assert add.parameters["required"] == ["a", "b"] and not add.needs_approval
        assert add.cooldown_s == 5

        provider = ScriptedProvider(
            [
                Step(tool_calls=[ToolCall("c1", "demo__add", {"a": 2, "b": 3}),
                                 ToolCall("c2", "demo__swatch", {"color": "red"})]),
                "2 + 3 = 5, and here is red.",
            ],
            capabilities=Capabilities(vision=True),
        )  # fmt: skip
        events = await complete_turn(
            provider, Toolbox(servers.tools), [Message.user("add and draw")]
        )
        results = {e.name: e for e in events if isinstance(e, ToolResult)}
        assert results["demo__add"].content == "2 + 3 = 5"
        assert results["demo__swatch"].images[0].mime == "image/png"
        sent = provider.requests[1].messages[-1]
        assert sent.role == "user" and sent.images[0].mime == "image/png"
        assert isinstance(events[-1], TurnFinished)
    finally:
        await servers.close()


async def test_an_error_result_is_the_tools_error() -> None:
    servers = McpServers(parse_mcp_config(config(trusted=True)))
    try:
        await servers.start()
        box = Toolbox(servers.tools)
        outcome = await box.run(ToolCall("c", "demo__fail", {"message": "disk full"}))
        assert outcome.error is not None and "disk full" in outcome.error
    finally:
        await servers.close()


async def test_untrusted_tools_ask_first() -> None:
    servers = McpServers(parse_mcp_config(config()))
    try:
        await servers.start()
        asks = {t.name: t.needs_approval for t in servers.tools}
        # add is marked read-only by its server: it runs without asking; the others ask.
        assert asks == {"demo__add": False, "demo__swatch": True, "demo__fail": True}
    finally:
        await servers.close()


async def test_a_server_that_cannot_start_says_why_and_does_not_block_the_others() -> None:
    raw = {"mcpServers": {
        "missing": {"command": "no-such-mcp-server-xyz"},
        "crashes": {"command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]},
        "demo": {"command": sys.executable, "args": [SERVER], "trusted": True},
        "off": {"command": "whatever", "disabled": True},
    }}  # fmt: skip
    servers = McpServers(parse_mcp_config(raw))
    try:
        problems = await servers.start()
        assert (
            problems[0]
            == "MCP server 'missing': the command 'no-such-mcp-server-xyz' was not found on PATH."
        )
        assert problems[1].startswith("MCP server 'crashes' failed:")
        assert len(problems) == 2
        assert sorted(t.name for t in servers.tools) == ["demo__add", "demo__fail", "demo__swatch"]
    finally:
        await servers.close()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"servers": {}}, "'mcpServers' is a required property"),
        ({"mcpServers": {"x": {"args": ["a"]}}}, "mcpServers/x"),
        ({"mcpServers": {"x": {"url": "ftp://x"}}}, "mcpServers/x/url"),
    ],
)
def test_bad_configurations_are_explained(raw: Any, message: str) -> None:
    with pytest.raises(McpConfigError, match=message):
        parse_mcp_config(raw)


def test_config_file_with_http_server(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {"mcpServers": {"remote": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "k"}}}}
        )
    )
    (server,) = load_mcp_config(path)
    assert (server.url, server.headers, server.command) == (
        "http://127.0.0.1:9/mcp",
        {"X-Key": "k"},
        None,
    )


async def test_tools_from_a_streamable_http_server() -> None:

    import httpx

    from desktop.core.runtime import free_port

    port = free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable, SERVER, "--http", str(port),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        async with httpx.AsyncClient() as client:
            for _ in range(100):
                try:
                    await client.get(f"http://127.0.0.1:{port}/mcp")
                    break
                except httpx.HTTPError:
                    await asyncio.sleep(0.1)
        web = {
            "url": f"http://127.0.0.1:{port}/mcp",
            "trusted": True,
            "headers": {"X-Api-Key": "k"},
        }
        raw = {"mcpServers": {"web": web}}
        servers = McpServers(parse_mcp_config(raw))
        try:
            assert await servers.start() == []
            box = Toolbox(servers.tools)
            assert "web__add" in box.names
            outcome = await box.run(ToolCall("c", "web__add", {"a": 4, "b": 5}))
            assert outcome.content == "4 + 5 = 9"
            drawn = await box.run(ToolCall("d", "web__swatch", {"color": "blue", "size": 4}))
            assert drawn.images[0].mime == "image/png"
        finally:
            await servers.close()
    finally:
        process.terminate()
        await process.wait()
