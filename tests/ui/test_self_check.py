"""The app's self-check (what the installer test runs): the real app, in its own process,
reaches its window, connects to a server and gets an answer through the window."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from tests.core.test_cli import PATH, content
from tests.replay_server import Canned, ReplayServer


async def self_check(data: Path, url: str) -> tuple[int, dict[str, object]]:
    (data / "settings.json").write_text(json.dumps({"backend": "llamacpp", "url": url}))
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
    asked = [r.json() for r in server.requests if r.path == PATH]
    assert asked[0]["messages"][-1]["content"] == "Say hello"


async def test_the_self_check_fails_without_a_server(tmp_path: Path) -> None:
    from desktop.core.runtime import free_port

    code, report = await self_check(tmp_path, f"http://127.0.0.1:{free_port()}")
    assert code == 1 and report["connected"] is False and "answer" not in report
