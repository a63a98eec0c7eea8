"""A real local HTTP server that replays a backend's bytes exactly as scripted.

Each response is sent as HTTP/1.1 chunked transfer, one chunk per scripted piece with a
pause between, so the client sees the chunk boundaries the test chose (a UTF-8 character
or a JSON line split in two). It records every request and notices when a client hangs up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import ssl
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Canned:
    status: int = 200
    content_type: str = "text/event-stream"
    pieces: list[bytes] = field(default_factory=list)
    pause_s: float = 0.005
    cut: bool = False  # drop the connection after the pieces, without ending the body
    hang: bool = False  # after the pieces, keep the connection open until the client leaves
    reset: bool = False  # after the pieces, reset the connection (TCP RST, not a clean close)
    silent: bool = False  # close without a word: a kept-alive connection the server dropped

    @classmethod
    def json(cls, body: Any, status: int = 200) -> Canned:
        return cls(status, "application/json", [json.dumps(body).encode()])


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Route = Canned | Callable[[Received], Canned]

_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
            500: "Internal Server Error", 503: "Service Unavailable"}  # fmt: skip


class ReplayServer:
    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        """`tls`: serve HTTPS with this context (a test CA's certificate)."""
        self.tls = tls
        self.routes: dict[tuple[str, str], Route] = {}
        self.requests: list[Received] = []
        self.client_left = asyncio.Event()
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[Any]] = set()
        self.url = ""

    def route(self, method: str, path: str, answer: Route) -> None:
        self.routes[(method, path)] = answer

    async def __aenter__(self) -> ReplayServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        host, port = self._server.sockets[0].getsockname()[:2]
        self.url = f"{'https' if self.tls else 'http'}://{host}:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 2)
        # Answers still being sent (a client that stopped reading early): end them here,
        # not in whatever tears down the loop later.
        if self._handlers:
            _done, going = await asyncio.wait(self._handlers, timeout=2)
            for handler in going:
                handler.cancel()
            await asyncio.gather(*going, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if (me := asyncio.current_task()) is not None:
            self._handlers.add(me)
            me.add_done_callback(self._handlers.discard)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    key, value = line.split(":", 1)
                    headers[key.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            received = Received(method, path, headers, body)
            self.requests.append(received)
            answer = self.routes.get((method, path.split("?")[0]))
            if answer is None:
                canned = Canned(404, "text/plain", [b"404 page not found"])
            else:
                canned = answer(received) if callable(answer) else answer
            await self._reply(canned, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            self.client_left.set()
        finally:
            writer.close()

    async def _reply(
        self, canned: Canned, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        if canned.silent:
            return
        reason = _REASONS.get(canned.status, "Status")
        writer.write(
            f"HTTP/1.1 {canned.status} {reason}\r\nContent-Type: {canned.content_type}\r\n"
            "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n".encode()
        )
        for piece in canned.pieces:
            writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            await writer.drain()
            await asyncio.sleep(canned.pause_s)
        if canned.cut:
            return
        if canned.reset:
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            return
        if canned.hang:
            await reader.read()  # returns when the client closes its side
            self.client_left.set()
            return
        writer.write(b"0\r\n\r\n")
        await writer.drain()


def sse(*payloads: Any, done: bool = True) -> list[bytes]:
    """OpenAI-style SSE events, one piece each: `data: {json}\\n\\n`, then `data: [DONE]`."""
    out = [f"data: {json.dumps(p, ensure_ascii=False)}\n\n".encode() for p in payloads]
    if done:
        out.append(b"data: [DONE]\n\n")
    return out


def ndjson(*objects: Any) -> list[bytes]:
    """Ollama's stream: one JSON object per line, one piece each."""
    return [json.dumps(o, ensure_ascii=False).encode() + b"\n" for o in objects]


def resplit(pieces: list[bytes], sizes: list[int]) -> list[bytes]:
    """The same bytes cut at other places (sizes repeat), e.g. inside a UTF-8 character."""
    whole = b"".join(pieces)
    out, at, i = [], 0, 0
    while at < len(whole):
        size = sizes[i % len(sizes)]
        out.append(whole[at : at + size])
        at += size
        i += 1
    return out
