"""The stdio transport to an MCP server, for POSIX: what the `mcp` library's does, with two
bounds it lacks.

- **A line's size.** A server's answer is one line of JSON; the library splits a growing
  buffer on every chunk, so a huge line costs minutes of the event loop. Here lines are
  split as bytes arrive, in linear time, and a line over `MAX_LINE_BYTES` is dropped as it
  comes: the request it answers (named at its start or end) gets an error that says so.
- **The server's helpers.** The server runs in a process group of its own, and the whole
  group is killed when the transport closes: a helper it started (or a server that forked
  and exited when its input closed) does not outlive the app. A helper that leaves the
  group on purpose (a daemon) is out of reach, as it is for any launcher.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
import mcp_types as types
from anyio.abc import Process
from mcp.client._transport import TransportStreams
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.shared.message import SessionMessage

log = logging.getLogger(__name__)

# An answer longer than this is not read (images come base64-encoded: a few MB at most).
MAX_LINE_BYTES = 16 * 1024 * 1024
# How much of a dropped line's start and end is kept to find the request it answers.
_EDGE_BYTES = 512
# After its input closes, how long the server has to exit before the group is signalled.
EXIT_GRACE_S = 2.0
KILL_GRACE_S = 2.0
# A JSON-RPC id: a number or a short string.
_ID = rb'(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")'
_ID_FIRST = re.compile(rb'^\s*\{(?:(?!"result"|"error").)*?"id"\s*:\s*' + _ID, re.S)
_ID_LAST = re.compile(rb'"id"\s*:\s*' + _ID + rb"\s*\}\s*$", re.S)


@dataclass(frozen=True)
class Oversized:
    """A line over the limit: its size, and its first and last bytes."""

    size: int
    head: bytes
    tail: bytes

    def request_id(self) -> int | str | None:
        """The id of the request it answers, where its start (before any result) or its end
        names one; None where it names none that can be trusted."""
        found = _ID_FIRST.search(self.head) or _ID_LAST.search(self.tail)
        if found is None:
            return None
        raw = found.group(1)
        if raw.startswith(b'"'):
            return raw[1:-1].decode("utf-8", "replace")
        return int(raw)


class LineSplitter:
    """Bytes in, whole lines out, each at most `limit` bytes: a longer one comes out as
    `Oversized`, its middle never kept. Linear in what it is fed."""

    def __init__(self, limit: int = MAX_LINE_BYTES) -> None:
        self.limit = limit
        self._parts: list[bytes] = []
        self._size = 0
        self._head = b""
        self._tail = b""
        self._dropping = False

    def feed(self, data: bytes) -> list[bytes | Oversized]:
        lines: list[bytes | Oversized] = []
        start = 0
        while True:
            end = data.find(b"\n", start)
            piece = data[start:] if end < 0 else data[start:end]
            self._take(piece)
            if end < 0:
                return lines
            lines.append(self._line())
            start = end + 1

    def _take(self, piece: bytes) -> None:
        if not self._dropping and self._size + len(piece) > self.limit:
            self._dropping = True
            self._head = b"".join([*self._parts, piece[:_EDGE_BYTES]])[:_EDGE_BYTES]
            self._parts = []
        self._size += len(piece)
        if self._dropping:
            self._tail = (self._tail + piece[-_EDGE_BYTES:])[-_EDGE_BYTES:]
        else:
            self._parts.append(piece)

    def _line(self) -> bytes | Oversized:
        line: bytes | Oversized = (
            Oversized(self._size, self._head, self._tail)
            if self._dropping
            else b"".join(self._parts)
        )
        self._parts, self._size, self._head, self._tail = [], 0, b"", b""
        self._dropping = False
        return line


def message_of(line: bytes | Oversized) -> SessionMessage | Exception | None:
    """What the session receives for a line: the message, its parse error, an error
    answer to the request an oversized line answered, or None (nothing to deliver)."""
    if isinstance(line, Oversized):
        request = line.request_id()
        log.warning("an MCP server sent a line of %d bytes; it was not read", line.size)
        if request is None:
            return None
        error = types.ErrorData(
            code=types.INTERNAL_ERROR,
            message=f"The server's answer was {line.size // (1024 * 1024)} MB, over the "
            f"{MAX_LINE_BYTES // (1024 * 1024)} MB Loomchat reads, so it was left out.",
        )
        return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request, error=error))
    if not line.strip():
        return None
    try:
        text = line.decode("utf-8", "replace")
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(text, by_name=False))
    except ValueError as exc:
        return exc


@asynccontextmanager
async def bounded_stdio(server: StdioServerParameters) -> AsyncIterator[TransportStreams]:
    """A transport (the read and write streams the `mcp` client takes) to the server
    `server` describes, started in a process group of its own."""
    process = await anyio.open_process(
        [server.command, *server.args],
        env=get_default_environment() | (server.env or {}),
        cwd=server.cwd,
        stderr=None,  # the app's own
        start_new_session=True,
    )
    reading, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, writing = anyio.create_memory_object_stream[SessionMessage](0)

    async def read() -> None:
        assert process.stdout is not None
        splitter = LineSplitter()
        garbled = 0
        async with reading:
            with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError,
                                     anyio.BrokenResourceError, OSError):  # fmt: skip
                async for chunk in process.stdout:
                    for line in splitter.feed(chunk):
                        message = message_of(line)
                        if isinstance(message, Exception) and not garbled:  # once, not per line
                            log.info("an MCP server printed a line that is not JSON-RPC: %s",
                                     str(message).splitlines()[0][:200])  # fmt: skip
                        garbled += isinstance(message, Exception)
                        if message is not None:
                            await reading.send(message)

    async def write() -> None:
        assert process.stdin is not None
        async with writing:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError,
                                     OSError):  # fmt: skip
                async for message in writing:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode("utf-8") + b"\n")

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read)
            tasks.start_soon(write)
            try:
                yield read_stream, write_stream
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(process)
                tasks.cancel_scope.cancel()
    finally:
        for stream in (read_stream, write_stream, reading, writing):
            await stream.aclose()


async def _stop(process: Process) -> None:
    """Close the server's input, give it a moment to leave, then end its whole group."""
    if process.stdin is not None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    if not await _exited(process, EXIT_GRACE_S):
        _signal_group(process.pid, signal.SIGTERM)
        await _exited(process, KILL_GRACE_S)
    # Whatever the server did, nothing it started in its group stays behind.
    _signal_group(process.pid, signal.SIGKILL)
    await _exited(process, KILL_GRACE_S)
    if process.stdout is not None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdout.aclose()


async def _exited(process: Process, timeout_s: float) -> bool:
    """Whether the server exited within `timeout_s`. Its return code is polled: waiting
    for the process also waits for its pipes, which a helper it started may hold open."""
    with anyio.move_on_after(timeout_s):
        while process.returncode is None:
            await anyio.sleep(0.01)
    return process.returncode is not None


def _signal_group(group: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)
