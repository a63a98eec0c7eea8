"""Hostile MCP servers: schemas whose references point outside themselves (a web address,
`/dev/zero`, a local file), names that clean to one name, descriptions of megabytes, a
tool that breaks its schema, a 100 MB answer, helpers left behind. Nothing is fetched,
nothing hangs or eats memory, the server's other tools go on, nothing outlives the app."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from desktop.core.messages import ToolCall
from desktop.core.tool_spec import MAX_DESCRIPTION_CHARS, ToolSpec
from desktop.core.tools.mcp import McpServerConfig, McpServers
from desktop.core.tools.toolbox import Toolbox
from tests.faults.test_mcp_servers import running

RAW = str(Path(__file__).resolve().parents[1] / "support" / "mcp_raw_server.py")


def raw_server(tmp_path: Path, name: str = "raw", **spec: Any) -> McpServerConfig:
    path = tmp_path / f"{name}-spec.json"
    path.write_text(json.dumps(spec))
    return McpServerConfig(name, command=sys.executable, args=(RAW, str(path)), trusted=True)


def tool(name: str, schema: dict[str, Any], description: str = "A tool.") -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": schema}


def with_ref(ref: str) -> dict[str, Any]:
    return {"type": "object", "properties": {"thing": {"$ref": ref}}}


class Listener:
    """A socket that counts who connects to it (and answers nothing)."""

    def __init__(self) -> None:
        self.connections = 0
        self.url = ""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        writer.close()


@pytest.fixture
async def listener() -> AsyncIterator[Listener]:
    found = Listener()
    server = await asyncio.start_server(found.handle, "127.0.0.1", 0)
    found.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    yield found
    server.close()


async def test_references_outside_a_schema_are_never_followed(
    tmp_path: Path, listener: Listener
) -> None:
    refs = {
        "remote": f"{listener.url}/s.json",
        "zeros": "file:///dev/zero",
        "hostname": "file:///etc/hostname",
        "missing": "#/$defs/nowhere",
    }
    tools = [tool(name, with_ref(ref)) for name, ref in refs.items()]
    fine = tool("fine", {"type": "object", "properties": {"a": {"type": "integer"}}})
    servers = McpServers([raw_server(tmp_path, tools=[*tools, fine])])
    try:
        started = time.monotonic()
        problems = await servers.start()
        assert time.monotonic() - started < 10
        assert [t.name for t in servers.tools] == ["raw__fine"]  # the others go on (#20)
        for name, ref in refs.items():
            said = [p for p in problems if f"tool '{name}' was left out" in p]
            assert len(said) == 1 and f"refers to '{ref}', which is not inside it" in said[0]
        outcome = await Toolbox(servers.tools).run(ToolCall("c1", "raw__fine", {"a": 1}))
        assert outcome.content == "called fine"
    finally:
        await servers.close()
    assert listener.connections == 0


async def test_validation_resolves_only_inside_the_schema(listener: Listener) -> None:
    local = {
        "type": "object",
        "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}},
                            "required": ["x"]}},
        "properties": {"at": {"$ref": "#/$defs/Point"}},
        "required": ["at"],
    }  # fmt: skip
    spec = ToolSpec("place", "Place a point.", local)
    box = Toolbox([_tool_from(spec)])
    assert box.validate("place", {"at": {"x": 1.5}}) is None
    assert "missing required argument 'x'" in (box.validate("place", {"at": {}}) or "")
    for ref in (f"{listener.url}/s.json", "file:///dev/zero"):
        with pytest.raises(ValueError, match=r"which is not inside it"):
            ToolSpec("remote", "Fetches.", with_ref(ref))
    nested_remote = {"type": "object", "$id": f"{listener.url}/root.json",
                     "properties": {"a": {"$ref": "other.json"}}}  # fmt: skip
    with pytest.raises(ValueError, match=r"root\.json|other\.json"):
        ToolSpec("relative", "Relative to a remote id.", nested_remote)
    with pytest.raises(ValueError, match="loop without end"):
        ToolSpec("loop", "Refers to itself.", {"type": "object", "$ref": "#"})
    assert listener.connections == 0


def _tool_from(spec: ToolSpec) -> Any:
    from desktop.core.tools.toolbox import Tool

    async def handler(arguments: dict[str, Any]) -> str:
        return "ok"

    return Tool(spec.name, spec.description, spec.parameters, handler)


async def test_names_that_clean_to_one_name_stay_apart(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {}}
    first = raw_server(
        tmp_path,
        "my server",
        tools=[
            tool("get item", schema),
            tool("get_item", schema),
            tool("café", schema),
            tool("cafè", schema),
        ],
    )
    second = raw_server(tmp_path, "my_server", tools=[tool("get item", schema)])
    servers = McpServers([first, second])
    try:
        assert await servers.start() == []
        names = [t.name for t in servers.tools]
        assert names == ["my_server__get_item", "my_server__get_item_2", "my_server__caf_",
                         "my_server__caf__2", "my_server_2__get_item"]  # fmt: skip
        box = Toolbox(servers.tools)  # raised ValueError: two tools are named ...
        outcome = await box.run(ToolCall("c1", "my_server__get_item_2", {}))
        assert outcome.content == "called get_item"
    finally:
        await servers.close()


async def test_a_description_of_megabytes_is_cut_when_the_tool_is_made(tmp_path: Path) -> None:
    huge = "weather forecast " * 600_000  # 10 MB of keywords
    servers = McpServers([raw_server(tmp_path, tools=[tool("stuffed", {"type": "object"}, huge)])])
    try:
        assert await servers.start() == []
        (stuffed,) = servers.tools
        assert len(stuffed.description) <= MAX_DESCRIPTION_CHARS + 2
        assert stuffed.description.startswith("[raw] weather forecast")
    finally:
        await servers.close()


async def test_a_tool_that_breaks_its_schema_leaves_the_others(tmp_path: Path) -> None:
    broken = tool("broken", {"type": "object", "properties": {"a": {"type": "no such type"}}})
    named = {"name": "", "description": "no name", "inputSchema": {"type": "object"}}
    fine = tool("fine", {"type": "object"})
    servers = McpServers([raw_server(tmp_path, tools=[broken, named, fine])])
    try:
        problems = await servers.start()
        assert [t.name for t in servers.tools] == ["raw__fine"]
        assert any("tool 'broken' was left out" in p for p in problems)
    finally:
        await servers.close()


@pytest.mark.parametrize("id_last", [False, True])
async def test_a_100_mb_answer_is_refused_at_the_transport_in_seconds(
    tmp_path: Path, id_last: bool
) -> None:
    schema = {"type": "object"}
    config = raw_server(tmp_path, tools=[tool("flood", schema), tool("ping", schema)],
                        huge={"flood": 100 * 1024 * 1024}, id_last=id_last)  # fmt: skip
    servers = McpServers([config])
    try:
        assert await servers.start() == []
        box = Toolbox(servers.tools)
        ticks = 0

        async def tick() -> None:  # the event loop stays free meanwhile
            nonlocal ticks
            while True:
                await asyncio.sleep(0.05)
                ticks += 1

        ticking = asyncio.ensure_future(tick())
        started = time.monotonic()
        outcome = await box.run(ToolCall("c1", "raw__flood", {}))
        took = time.monotonic() - started
        ticking.cancel()
        assert outcome.error is not None and "over the 16 MB Loomchat reads" in outcome.error
        # At least half the ticks that fell due: a refusal faster than one tick owes none.
        assert took < 30 and ticks >= int(took / 0.05 / 2)
        assert (await box.run(ToolCall("c2", "raw__ping", {}))).content == "called ping"
    finally:
        await servers.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("exit_on_eof", [False, True])
async def test_a_servers_helpers_end_with_it(tmp_path: Path, exit_on_eof: bool) -> None:
    marker = f"loomchat-helper-{tmp_path.name}-{exit_on_eof}"
    config = raw_server(tmp_path, tools=[tool("t", {"type": "object"})], helper=marker,
                        exit_on_eof=exit_on_eof)  # fmt: skip
    servers = McpServers([config])
    assert await servers.start() == []
    await asyncio.sleep(0.3)
    assert running(marker) != []
    await servers.close()
    for _ in range(50):
        if not running(marker):
            break
        await asyncio.sleep(0.1)
    assert running(marker) == []
