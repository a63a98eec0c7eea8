"""Loomchat as an OpenAI-compatible server: `/v1/models` and `/v1/chat/completions`
(streamed or not), answered by the session's connected model on its track (the emulated
track's constrained, calibrated, validated calls, or the server's native ones where the
calibration chose them), returned as standard `tool_calls` for the caller to run.

Starlette serves the routes and uvicorn the socket. Every request needs the bearer token;
the model answers one request at a time (a local server has one slot to give), the others
wait their turn. A request's body is capped before it is read whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import time
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from typing import Any, assert_never

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from desktop.api.wire import (
    Answer,
    BadRequest,
    ChatRequest,
    answered_before,
    error_body,
    finish_reason,
    read_request,
)
from desktop.core.events import (
    Notice,
    ProviderEvent,
    Reply,
    TextChunk,
    ThinkingChunk,
    TokenOdds,
    UsageReport,
)
from desktop.core.messages import Message, ToolCall
from desktop.core.providers.base import Provider, ProviderError, RequestOptions
from desktop.core.tool_spec import ToolSpec
from desktop.core.tracing import TurnTrace

MAX_BODY_BYTES = 32 * 1024 * 1024  # images come as data URLs
log = logging.getLogger(__name__)


@dataclass
class Answering:
    """What answers one request: the model on its track, and where its requests are
    recorded (the inspector's trace), if they are."""

    provider: Provider
    trace: TurnTrace | None = None


@dataclass
class Exchange:
    """One request as the inspector lists it: what was asked, what went back, how long."""

    request: ChatRequest
    trace: TurnTrace | None = None
    started: float = field(default_factory=time.time)
    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0


@dataclass
class Backend:
    """Where answers come from, asked afresh for each request: the connected model (None:
    not connected) and its name."""

    answering: Callable[[], Answering | None]
    model: Callable[[], str]

    @classmethod
    def fixed(cls, provider: Provider | None, model: str) -> Backend:
        """One model that never changes (the CLI's, a bench's)."""
        return cls(lambda: Answering(provider) if provider is not None else None, lambda: model)


class ChatApi:
    def __init__(self, backend: Backend, token: str) -> None:
        self.backend = backend
        self.token = token
        self.exchanges: list[Exchange] = []  # the latest, for the inspector
        self._turn = asyncio.Lock()
        self.app = Starlette(routes=[
            Route("/v1/models", self.models, methods=["GET"]),
            Route("/v1/chat/completions", self.completions, methods=["POST"]),
        ])  # fmt: skip

    def _allowed(self, request: Request) -> bool:
        given = request.headers.get("authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode())

    async def models(self, request: Request) -> Response:
        if not self._allowed(request):
            return _refused()
        name = self.backend.model() or "loomchat"
        return JSONResponse({"object": "list", "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "loomchat"}]})  # fmt: skip

    async def completions(self, request: Request) -> Response:
        if not self._allowed(request):
            return _refused()
        try:
            raw = json.loads(await _body(request))
            chat = read_request(raw)
        except (ValueError, RecursionError, BadRequest) as exc:
            return JSONResponse(error_body(str(exc)[:500]), status_code=400)
        answering = self.backend.answering()
        if answering is None:
            message = "No model is connected: open Loomchat, or check its backend settings."
            return JSONResponse(error_body(message, "server_error"), status_code=503)
        provider = answering.provider
        answer = Answer(chat.model or self.backend.model())
        exchange = Exchange(chat, answering.trace)
        if chat.stream:
            return StreamingResponse(self._stream(provider, chat, answer, exchange),
                                     media_type="text/event-stream")  # fmt: skip
        try:
            text, calls, finish, usage = await self._complete(provider, chat, answer, exchange)
        except ProviderError as exc:
            return JSONResponse(error_body(str(exc), "server_error"), status_code=502)
        return JSONResponse(answer.completion(text, calls, finish, usage))

    async def _complete(self, provider: Provider, chat: ChatRequest, answer: Answer,
                        exchange: Exchange) -> tuple[str, list[ToolCall], str | None,
                                                     tuple[int, int] | None]:  # fmt: skip
        text, calls, finish, usage = "", [], None, None
        async for event in self._ask(provider, chat, answer, exchange):
            match event:
                case Reply():
                    text, calls, finish = event.text, event.tool_calls, event.finish_reason
                case UsageReport():
                    usage = _added(usage, event)
                case TextChunk() | ThinkingChunk() | Notice() | TokenOdds():
                    pass
                case _:
                    assert_never(event)
        self._done(exchange, text, calls, answer.dropped, None)
        return text, calls, finish, usage

    async def _stream(self, provider: Provider, chat: ChatRequest, answer: Answer,
                      exchange: Exchange) -> AsyncGenerator[str, None]:  # fmt: skip
        yield _sse(answer.chunk({"role": "assistant", "content": ""}))
        text, usage, calls, error = "", None, [], None
        try:
            async for event in self._ask(provider, chat, answer, exchange):
                match event:
                    case TextChunk():
                        text += event.text
                        yield _sse(answer.chunk({"content": event.text}))
                    case Reply():
                        calls = event.tool_calls
                        for chunk in answer.call_chunks(calls):
                            yield _sse(chunk)
                        yield _sse(answer.chunk({}, finish_reason(calls, event.finish_reason)))
                    case UsageReport():
                        usage = _added(usage, event)
                    case ThinkingChunk() | Notice() | TokenOdds():
                        pass
                    case _:
                        assert_never(event)
        except ProviderError as exc:
            error = str(exc)
            yield _sse(error_body(error, "server_error"))
        if chat.include_usage:  # asked for: always sent, as OpenAI does
            yield _sse(answer.usage_chunk(usage or (0, 0)))
        yield "data: [DONE]\n\n"
        self._done(exchange, text, calls, answer.dropped, error)

    async def _ask(self, provider: Provider, chat: ChatRequest, answer: Answer,
                   exchange: Exchange) -> AsyncGenerator[ProviderEvent, None]:  # fmt: skip
        """The model's answer, its Reply holding only the calls the caller may run. A call
        made before in this conversation (its result is in the messages) is not returned
        again: as in the app's own turns, the model is asked once more with the tools
        withdrawn, for an answer in words."""
        async with self._turn:  # one at a time: the others wait here
            started = time.perf_counter()
            try:
                reply = None
                async for event in _streamed(provider, chat.messages, chat.tools, chat.options):
                    if isinstance(event, Reply):
                        reply = replace(event, tool_calls=answer.calls(event, chat.tools),
                                        broken_calls=[])  # fmt: skip
                    else:
                        yield event
                if (
                    reply is not None
                    and reply.tool_calls
                    and all(answered_before(call, chat.messages) for call in reply.tool_calls)
                ):
                    answer.dropped += [
                        f"{c.name}: made before, its result given" for c in reply.tool_calls
                    ]
                    plain = replace(
                        chat.options, withdrawn_tools=tuple(chat.tools), tool_choice=None
                    )
                    reply = None
                    async for event in _streamed(provider, chat.messages, [], plain):
                        if isinstance(event, Reply):
                            reply = replace(event, tool_calls=[], broken_calls=[])
                        else:
                            yield event
                if reply is not None:
                    yield reply
            finally:
                exchange.seconds = time.perf_counter() - started

    def _done(self, exchange: Exchange, text: str, calls: list[ToolCall],
              dropped: list[str], error: str | None) -> None:  # fmt: skip
        exchange.text, exchange.calls, exchange.dropped, exchange.error = (
            text,
            calls,
            dropped,
            error,
        )
        self.exchanges = [*self.exchanges[-99:], exchange]
        if dropped:
            log.info("API: calls not returned: %s", "; ".join(dropped)[:500])


async def _streamed(provider: Provider, messages: list[Message], tools: list[ToolSpec],
                    options: RequestOptions) -> AsyncGenerator[ProviderEvent, None]:  # fmt: skip
    async with aclosing(provider.stream(messages, tools, options)) as events:
        async for event in events:
            yield event


def _added(usage: tuple[int, int] | None, report: UsageReport) -> tuple[int, int]:
    prompt, completion = usage or (0, 0)
    return prompt + report.prompt_tokens, completion + report.completion_tokens


def _sse(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


def _refused() -> Response:
    body = error_body("A valid bearer token is needed (Authorization: Bearer ...).",
                      "authentication_error")  # fmt: skip
    return JSONResponse(body, status_code=401, headers={"WWW-Authenticate": "Bearer"})


async def _body(request: Request) -> bytes:
    """The body, or ValueError once it passes MAX_BODY_BYTES (never read further)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise ValueError(f"the request is larger than {MAX_BODY_BYTES // 2**20} MB")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise ValueError(f"the request is larger than {MAX_BODY_BYTES // 2**20} MB")
    return bytes(body)


class ApiServer:
    """The API on a socket (uvicorn), started and stopped from the running loop."""

    def __init__(self, api: ChatApi, host: str = "127.0.0.1", port: int = 0) -> None:
        import uvicorn

        config = uvicorn.Config(api.app, host=host, port=port, log_level="warning",
                                lifespan="off", access_log=False)  # fmt: skip
        self.server = uvicorn.Server(config)
        self.host = host
        self._task: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        return int(self.server.servers[0].sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    async def start(self, timeout_s: float = 10.0) -> None:
        """Listen; OSError (the port taken, say) if it cannot."""
        self._task = asyncio.ensure_future(self._serve())
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if self._task.done():  # it could not bind: uvicorn logged why and exited
                self._task = None
                raise OSError(f"cannot listen on {self.host}:{self.server.config.port}")
            if time.monotonic() > deadline:
                await self.stop()
                raise OSError(f"the API did not start within {timeout_s:g} s")
            await asyncio.sleep(0.02)

    async def _serve(self) -> None:
        # uvicorn exits when it cannot bind: here, a start that failed, never the app's end
        with contextlib.suppress(SystemExit):
            await self.server.serve()

    async def stop(self) -> None:
        """Stop listening and end the requests in flight; safe to call more than once."""
        task, self._task = self._task, None
        if task is None:
            return
        self.server.should_exit = True
        try:
            await asyncio.wait_for(task, 10)
        except (TimeoutError, asyncio.CancelledError, SystemExit):
            task.cancel()
