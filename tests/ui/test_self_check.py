"""The app's self-check (what the installer test runs): the real app, in its own process,
reaches its window, connects to a server and gets an answer through the window."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.replay_server import Canned, ReplayServer
from tests.test_cli import PATH, content


async def self_check(data: Path, url: str, **settings: object) -> tuple[int, dict[str, Any]]:
    settings = {"backend": "llamacpp", "url": url, **settings}
    (data / "settings.json").write_text(json.dumps(settings))
    env = {**os.environ, "LOOMCHAT_DATA_DIR": str(data), "LOOMCHAT_SELF_CHECK": "Say hello",
           "QT_QPA_PLATFORM": "offscreen"}  # fmt: skip
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "desktop", env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, _ = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode is not None
    return process.returncode, json.loads(out.decode().strip().splitlines()[-1])


async def test_the_self_check_asks_through_the_window(tmp_path: Path) -> None:
    async with ReplayServer() as server:
        server.route("GET", "/v1/models", Canned.json({"object": "list",
                                                       "data": [{"id": "m", "object": "model"}]}))  # fmt: skip
        server.route("POST", PATH, Canned(pieces=content("Hello from the server.")))
        code, report = await self_check(tmp_path, server.url)
    assert code == 0, report
    assert report["window_shown"] is True and report["connected"] is True
    assert report["answer"] == "Hello from the server."
    assert report["tools"] == {"calculator": "ok", "current_time": "ok", "create_chart": "ok"}
    assert report["tool_selection"] == "ok"
    asked = [r.json() for r in server.requests if r.path == PATH]
    # Once connected, the chat's prompt may be read ahead (up to an empty request) until
    # the message comes; the message is the first thing asked.
    said = [request["messages"][-1]["content"] for request in asked]
    first = said.index("Say hello")
    assert first <= 1 and set(said[:first]) <= {""}


async def test_the_self_check_fails_without_a_server(tmp_path: Path) -> None:
    from desktop.core.runtime import free_port

    code, report = await self_check(tmp_path, f"http://127.0.0.1:{free_port()}")
    assert code == 1 and report["connected"] is False and "answer" not in report


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_quitting_closes_the_mcp_servers(tmp_path: Path) -> None:
    """Quitting leaves no MCP server behind, and each was asked to close (its input
    closed) before it was ended. Before, Session.close() was never called and this held
    only because asyncio kills subprocesses when the loop is torn down; now the app
    closes the session itself, in order."""
    from tests.faults.test_mcp_servers import FAULTY, running

    # A copy of its own, so that no other test's server is counted.
    script = tmp_path / "own_mcp_server.py"
    script.write_text(Path(FAULTY).read_text())
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"faulty": {"command": sys.executable,
                                                            "args": [str(script), "stubborn"],
                                                            "env": {"FAULTY_MCP_CLOSED_MARKER": str(tmp_path / "closed")}}}}))  # fmt: skip
    async with ReplayServer() as server:
        server.route("GET", "/v1/models", Canned.json({"object": "list",
                                                       "data": [{"id": "m", "object": "model"}]}))  # fmt: skip
        server.route("POST", PATH, Canned(pieces=content("Hello.")))
        code, report = await self_check(tmp_path, server.url, mcp_config=str(config))
    assert code == 0, report
    assert "faulty__ping" in report["offered"]  # the server ran
    await asyncio.sleep(0.5)
    assert running(str(script)) == []
    assert (tmp_path / "closed").read_text() == "asked to close"
