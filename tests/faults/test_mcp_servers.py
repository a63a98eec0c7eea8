"""Misbehaving MCP servers: one that exits, one that never answers `initialize`, one that
prints garbage, a tool that never returns, a server that dies mid-call. Each is reported
once, in one line; the others go on; nothing is left running."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from desktop.core.messages import ToolCall
from desktop.core.tools.mcp import McpServerConfig, McpServers
from desktop.core.tools.toolbox import Toolbox
from tests.core.tools.test_mcp import SERVER

FAULTY = str(Path(__file__).resolve().parents[1] / "support" / "mcp_faulty_server.py")


def faulty(name: str, mode: str, tag: str = "") -> McpServerConfig:
    """`tag`: an argument the server ignores, which finds its processes alone (under
    pytest-xdist another worker's test may have faulty servers of its own running)."""
    args = (FAULTY, mode, tag) if tag else (FAULTY, mode)
    return McpServerConfig(name, command=sys.executable, args=args, trusted=True)


def running(marker: str) -> list[int]:
    """Pids of live processes whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
                state = (entry / "stat").read_text().split(") ")[1][:1]
            except OSError:
                continue
            if marker in cmdline and state != "Z":
                found.append(int(entry.name))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_broken_servers_are_reported_once_and_the_rest_go_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tag = f"broken-servers-{os.getpid()}"
    configs = [faulty("hang", "hang", tag), faulty("garbage", "garbage", tag),
               faulty("gone", "exit", tag),
               McpServerConfig("demo", command=sys.executable, args=(SERVER,))]  # fmt: skip
    # Long enough for the working server to start on a loaded machine with a cold disk cache.
    servers = McpServers(configs, start_timeout_s=10)
    started = time.monotonic()
    with caplog.at_level(logging.INFO):
        problems = await servers.start()
    assert time.monotonic() - started < 20
    assert sorted(problems) == [
        "MCP server 'garbage' did not start within 10 s.",
        "MCP server 'gone' failed: Connection closed",
        "MCP server 'hang' did not start within 10 s.",
    ]
    assert [t.name for t in servers.tools] == ["demo__add", "demo__swatch", "demo__fail"]
    garbled = [r for r in caplog.records if "not JSON-RPC" in r.getMessage()]
    assert len(garbled) == 1  # not 200
    assert all(r.exc_info is None for r in caplog.records)  # no tracebacks
    await servers.close()
    await servers.close()  # twice: it raised CancelledError
    for server in servers.servers:
        await server.close()
    await asyncio.sleep(0.5)
    assert running(tag) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_a_hanging_tool_times_out_and_a_crashed_server_says_so() -> None:
    tag = f"hanging-tool-{os.getpid()}"
    servers = McpServers([faulty("faulty", "stuck", tag)])
    assert await servers.start() == []
    tools = {t.name: t for t in servers.tools}
    box = Toolbox([replace(tools["faulty__wait"], timeout_s=1), tools["faulty__ping"],
                   tools["faulty__die"]])  # fmt: skip
    outcome = await box.run(ToolCall("c1", "faulty__wait", {}))
    assert outcome.error == "Tool faulty__wait timed out after 1 s."
    assert (await box.run(ToolCall("c2", "faulty__ping", {}))).content == "pong"
    died = await asyncio.wait_for(box.run(ToolCall("c3", "faulty__die", {})), 30)
    assert died.error is not None
    after = await asyncio.wait_for(box.run(ToolCall("c4", "faulty__ping", {})), 30)
    assert after.error is not None
    await servers.close()
    await asyncio.sleep(0.5)
    assert running(tag) == []


@pytest.mark.slow
async def test_the_cli_with_broken_servers_answers_and_exits_cleanly(tmp_path: Path) -> None:
    """It finished the turn, then exited 1 with a CancelledError traceback 44 s later,
    after ~190 library tracebacks on stderr."""
    import json

    from tests.support.replay_server import Canned, ReplayServer
    from tests.test_cli import PATH, content, run_cli

    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "hang": {"command": sys.executable, "args": [FAULTY, "hang"]},
        "garbage": {"command": sys.executable, "args": [FAULTY, "garbage"]},
        "demo": {"command": sys.executable, "args": [SERVER], "trusted": True},
    }}))  # fmt: skip
    async with ReplayServer() as server:
        server.route("POST", PATH, Canned(pieces=content("Fine.")))
        started = time.monotonic()
        code, out, err = await run_cli(
            "--provider", "llamacpp", "--url", server.url, "--mcp-config", str(config),
            "--tools", "all", "Hi",
        )  # fmt: skip
    assert code == 0 and out.strip() == "Fine."
    assert err.splitlines() == [
        "warning: MCP server 'hang' did not start within 30 s.",
        "warning: MCP server 'garbage' did not start within 30 s.",
    ]
    assert time.monotonic() - started < 45
    await asyncio.sleep(0.5)
    assert running(FAULTY) == []
