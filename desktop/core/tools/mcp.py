"""Tools from MCP servers, through the official `mcp` package.

The configuration has the shape other apps use: `{"mcpServers": {NAME: {...}}}`, each
server either `command` + `args` + `env` (stdio) or `url` (+ `headers`, streamable HTTP),
plus Loomchat's own `trusted` (its tools run without asking) and `cooldown_s`.

Each server lives in a task of its own from start to close, because the `mcp` client
(built on anyio) must be entered and left in the same task. A server that fails to start
(exits, never answers `initialize`, prints garbage) says why in one line and does not hold
the others back; closing is safe at any point and more than once.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import re
import shutil
import sys
from collections import Counter
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import jsonschema

from desktop.core.errors import ToolError, UsageError
from desktop.core.messages import Image
from desktop.core.storage.jsonfile import DamagedFile, read_json
from desktop.core.tools.toolbox import Tool, ToolOutput

CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "mcpServers": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "minLength": 1},
                    "args": {"type": "array", "items": {"type": "string"}},
                    "env": {"type": "object", "additionalProperties": {"type": "string"}},
                    "url": {"type": "string", "pattern": "^https?://"},
                    "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                    "trusted": {"type": "boolean"},
                    "cooldown_s": {"type": ["number", "null"], "minimum": 0},
                    "disabled": {"type": "boolean"},
                },
                "oneOf": [{"required": ["command"]}, {"required": ["url"]}],
            },
        }
    },
    "required": ["mcpServers"],
}
START_TIMEOUT_S = 30.0
# A tool's name as the model sees it (server prefix included); longer ones are cut.
MAX_NAME_CHARS = 64
# How long a running server may take to wind down when asked, before its task is cancelled.
CLOSE_TIMEOUT_S = 5.0
log = logging.getLogger(__name__)


class McpConfigError(UsageError):
    pass


class McpToolError(ToolError, RuntimeError):
    """The server ran the tool and it failed; the message is the server's."""


@dataclass(frozen=True)
class McpServerConfig:
    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    trusted: bool = False
    cooldown_s: float | None = None

    @property
    def prefix(self) -> str:
        return re.sub(r"[^A-Za-z0-9_-]", "_", self.name)


def parse_mcp_config(raw: Any, source: str = "the MCP configuration") -> list[McpServerConfig]:
    try:
        jsonschema.validate(raw, CONFIG_SCHEMA)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "top level"
        raise McpConfigError(f"{source}: {where}: {exc.message}") from None
    return [
        McpServerConfig(
            name=name,
            command=spec.get("command"),
            args=tuple(spec.get("args", [])),
            env=dict(spec.get("env", {})),
            url=spec.get("url"),
            headers=dict(spec.get("headers", {})),
            trusted=bool(spec.get("trusted", False)),
            cooldown_s=spec.get("cooldown_s"),
        )
        for name, spec in raw["mcpServers"].items()
        if not spec.get("disabled")
    ]


def load_mcp_config(path: Path) -> list[McpServerConfig]:
    try:
        raw = read_json(path)  # capped, and never a FIFO that would hang the read
    except (OSError, DamagedFile) as exc:
        raise McpConfigError(f"cannot read {path}: {exc}") from None
    return parse_mcp_config(raw, str(path))


@dataclass(frozen=True)
class ServerState:
    """Where a server is, as the Tools page shows it."""

    kind: Literal["starting", "running", "failed", "stopped"]
    tools: int = 0
    reason: str = ""


def result_output(result: Any) -> ToolOutput:
    """An MCP tool result as content and images; an error result raises, so the loop
    reports it as the tool's error."""
    texts: list[str] = []
    images: list[Image] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            texts.append(block.text)
        elif kind == "image":
            images.append(Image(base64.b64decode(block.data), block.mime_type))
        else:
            texts.append(f"[{kind} content not shown]")
    if not texts and getattr(result, "structured_content", None) is not None:
        texts.append(json.dumps(result.structured_content, ensure_ascii=False))
    text = "\n".join(texts)
    if getattr(result, "is_error", False):
        raise McpToolError(text or "the MCP tool reported an error")
    return ToolOutput(text, images)


class McpServer:
    """One running MCP server and the tools it offers."""

    def __init__(self, config: McpServerConfig) -> None:
        self.config = config
        self.tools: list[Tool] = []
        self.error: str | None = None
        self.warnings: list[str] = []  # tools left out, and why
        self.prefix = config.prefix  # made unique among the servers by `McpServers`
        self._client: Any = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        problem = self._precheck()
        if problem:
            self.error = problem
            return
        self._task = asyncio.create_task(self._serve(), name=f"mcp:{self.config.name}")
        try:
            await asyncio.wait_for(self._ready.wait(), timeout_s)
        except TimeoutError:
            self.error = f"MCP server '{self.config.name}' did not start within {timeout_s:g} s."
            await self.close()

    @property
    def state(self) -> ServerState:
        if self.error is not None:
            return ServerState("failed", reason=self.error)
        if self._task is None:
            return ServerState("stopped")
        if not self._ready.is_set():
            return ServerState("starting")
        return ServerState("running", tools=len(self.tools))

    def _precheck(self) -> str | None:
        if self.config.command and shutil.which(self.config.command) is None:
            return (
                f"MCP server '{self.config.name}': the command '{self.config.command}' "
                "was not found on PATH."
            )
        return None

    async def _serve(self) -> None:
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters

        from desktop.core.tools.mcp_stdio import bounded_stdio

        config = self.config
        target: Any
        try:
            async with AsyncExitStack() as stack:
                if config.command:
                    target = StdioServerParameters(
                        command=config.command, args=list(config.args), env=config.env or None
                    )
                    if sys.platform != "win32":  # bounded lines, the server's group killed
                        target = bounded_stdio(target)
                elif config.headers:
                    # headers (an API key, say) go on the HTTP client the transport uses
                    import httpx2
                    from mcp.client.streamable_http import streamable_http_client

                    http = await stack.enter_async_context(
                        httpx2.AsyncClient(headers=config.headers, timeout=30)
                    )
                    target = streamable_http_client(str(config.url), http_client=http)
                else:
                    target = config.url
                client = await stack.enter_async_context(Client(target, raise_exceptions=True))
                listing = await client.list_tools()
                self._client = client
                self.tools = self._tools(listing.tools)
                self._ready.set()
                await self._stop.wait()
        except Exception as exc:  # any failure of one server: reported, never fatal
            self.error = f"MCP server '{config.name}' failed: {_reason(exc)}"
        finally:
            self._client = None
            self._ready.set()

    def _tools(self, listed: list[Any]) -> list[Tool]:
        """The listed tools that can be offered: each one named apart from the others (a
        server's "get item" and "get_item" clean to one name: the second is
        "get_item_2"), and a tool whose name or schema cannot be used left out, with a
        warning naming it, not the server's other tools with it."""
        tools: list[Tool] = []
        taken: set[str] = set()
        for spec in listed:
            shown = str(getattr(spec, "name", "?"))[:80]
            try:
                tool = self._tool(spec, taken)
            except (ValueError, TypeError) as exc:
                reason = str(exc).split(": ", 1)[-1][:300]
                self.warnings.append(
                    f"MCP server '{self.config.name}': tool '{shown}' was left out: {reason}"
                )
                continue
            taken.add(tool.name)
            tools.append(tool)
        return tools

    def _tool(self, spec: Any, taken: set[str]) -> Tool:
        server_tool = spec.name
        if not isinstance(server_tool, str) or not server_tool:
            raise ValueError("it has no name")

        async def call(arguments: dict[str, Any]) -> ToolOutput:
            if self._client is None:
                raise RuntimeError(f"the MCP server '{self.config.name}' is not running")
            return result_output(await self._client.call_tool(server_tool, arguments))

        schema = dict(spec.input_schema or {"type": "object"})
        schema.setdefault("type", "object")
        name = unique_name(
            f"{self.prefix}__{re.sub(r'[^A-Za-z0-9_.-]', '_', server_tool)}"[:MAX_NAME_CHARS],
            taken,
        )
        return Tool(
            name=name,
            description=f"[{self.config.name}] {spec.description or server_tool}",
            parameters=schema,
            handler=call,
            # A tool the server marks read-only changes nothing: it runs without asking.
            needs_approval=not (self.config.trusted or _read_only(spec)),
            cooldown_s=self.config.cooldown_s,
        )

    async def close(self) -> None:
        """Stop the server; safe at any point (starting, running, failed) and repeated."""
        self._stop.set()
        task, self._task = self._task, None
        if task is None:
            return
        if not task.done() and self._ready.is_set():  # running: let it leave cleanly
            await asyncio.wait([task], timeout=CLOSE_TIMEOUT_S)
        if not task.done():  # still starting (a hung `initialize`), or not leaving
            task.cancel()
            await asyncio.wait([task], timeout=CLOSE_TIMEOUT_S)
        if task.done() and not task.cancelled():
            task.exception()  # _serve keeps its failures in `error`; nothing left to raise


def unique_name(name: str, taken: set[str]) -> str:
    """`name`, or `name_2`, `name_3`... the first that is not taken."""
    found, n = name, 2
    while found in taken:
        found, n = f"{name}_{n}", n + 1
    return found


def _reason(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_reason(e) for e in exc.exceptions)
    return str(exc) or type(exc).__name__


class LibraryLog(logging.Handler):
    """The `mcp` library's log while servers run: each distinct message once, in one line,
    into Loomchat's log. A server printing garbage on stdout made it print a traceback per
    line."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.seen: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.seen[message] += 1
        if self.seen[message] > 1:
            return
        problem = record.exc_info[1] if record.exc_info else None
        detail = f": {str(problem).splitlines()[0][:300]}" if problem else ""
        log.info("mcp library: %s%s", message, detail)


class McpServers:
    """All configured servers: started together, their tools in one list."""

    def __init__(
        self, configs: list[McpServerConfig], start_timeout_s: float = START_TIMEOUT_S
    ) -> None:
        self.servers = [McpServer(c) for c in configs]
        prefixes: set[str] = set()
        for server in self.servers:  # "my server" and "my_server" would share their tools' names
            server.prefix = unique_name(server.prefix, prefixes)
            prefixes.add(server.prefix)
        self.start_timeout_s = start_timeout_s
        self._library_log: LibraryLog | None = None

    async def update(self, configs: list[McpServerConfig]) -> list[str]:
        """Run the servers `configs` list: those running as configured go on untouched,
        the others stop, and new ones start. Returns the problems, as `start`."""
        kept = [s for s in self.servers if s.config in configs and s.error is None]
        await asyncio.gather(*(s.close() for s in self.servers if s not in kept))
        running = [s.config for s in kept]
        new = [McpServer(c) for c in configs if c not in running]
        prefixes = {s.prefix for s in kept}
        for server in new:
            server.prefix = unique_name(server.prefix, prefixes)
            prefixes.add(server.prefix)
        order = {c.name: n for n, c in enumerate(configs)}
        self.servers = sorted(kept + new, key=lambda s: order[s.config.name])
        await self._start(new)
        return self.problems

    @property
    def problems(self) -> list[str]:
        """One per server that failed, and one per tool a running server left out."""
        return [s.error or "" for s in self.servers if s.error] + [
            warning for s in self.servers if s.error is None for warning in s.warnings
        ]

    async def start(self) -> list[str]:
        """Start every server; returns the problems: one per server that failed, and one per
        tool a running server offers that was left out."""
        await self._start(self.servers)
        return self.problems

    async def _start(self, servers: list[McpServer]) -> None:
        if servers and self._library_log is None:
            self._library_log = LibraryLog()
            library = logging.getLogger("mcp")
            library.addHandler(self._library_log)
            library.propagate = False
        await asyncio.gather(*(s.start(self.start_timeout_s) for s in servers))

    @property
    def tools(self) -> list[Tool]:
        return [t for s in self.servers if s.error is None for t in s.tools]

    async def close(self) -> None:
        await asyncio.gather(*(s.close() for s in self.servers))
        if self._library_log is not None:
            library = logging.getLogger("mcp")
            library.removeHandler(self._library_log)
            library.propagate = not any(isinstance(h, LibraryLog) for h in library.handlers)
            self._library_log = None


def _read_only(spec: Any) -> bool:
    """Whether the server marks the tool read-only (MCP's `readOnlyHint`)."""
    annotations = getattr(spec, "annotations", None)
    return getattr(annotations, "read_only_hint", None) is True
