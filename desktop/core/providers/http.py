"""What every backend's HTTP shares: the client, and failures turned into plain messages."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from httpx_sse import EventSource

from desktop.core.backend_kind import BackendKind
from desktop.core.messages import without_surrogates
from desktop.core.providers.base import Capabilities, Features, ProviderError
from desktop.core.providers.transport import DIRECT, Transport
from desktop.core.providers.transport import make_client as client_with

DEFAULT_TIMEOUT = httpx.Timeout(connect=5.0, read=300.0, write=30.0, pool=5.0)
PROBE_TIMEOUT = httpx.Timeout(3.0)
# One line of a backend's stream (an SSE field, an NDJSON object) is one token or one
# tool call: a few KB. A longer one is a broken or hostile server; it is not buffered on.
MAX_LINE_CHARS = 16 * 1024 * 1024
_NEWLINE = re.compile(r"\r\n|\r|\n")


def make_client(
    api_key: str | None = None,
    timeout: httpx.Timeout = DEFAULT_TIMEOUT,
    transport: Transport = DIRECT,
) -> httpx.AsyncClient:
    """A client that goes only where configured: no proxy from the environment unless the
    transport asks for it (providers/transport.py)."""
    return client_with(api_key, timeout, transport)


_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def wire_json(text: str) -> Any:
    """A backend's JSON, with lone surrogates (`"\\ud83d"`, half an emoji) replaced: they
    could be neither stored nor shown. `ValueError` for what is not JSON."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    return without_surrogates(value) if _ESCAPED_SURROGATE.search(text) else value


def wire_object(text: str, label: str) -> dict[str, Any]:
    """One JSON object of a backend's stream; anything else is the backend's fault."""
    try:
        value = wire_json(text)
    except ValueError:
        raise ProviderError(f"{label} sent a line that is not JSON: {text[:200]}") from None
    if not isinstance(value, dict):
        raise ProviderError(f"{label} sent a line that is not a JSON object: {text[:200]}")
    return value


def wire_text(value: Any, label: str) -> str:
    """A text field of a backend's answer (a token, a delta): text, or "" when absent."""
    if value is None or isinstance(value, str):
        return value or ""
    raise ProviderError(f"{label} sent {type(value).__name__} where text belongs: {value!r:.200}")


def wire_mapping(value: Any, label: str) -> dict[str, Any]:
    """A nested object of a backend's answer (a message, a delta): {} when absent."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    raise ProviderError(f"{label} sent {type(value).__name__} where an object belongs.")


def error_message(body: bytes | str) -> str:
    """The human part of an error body, in each backend's shape:
    `{"error": {"message"}}` (OpenAI, llama.cpp), `{"error": "..."}` (Ollama, LM Studio),
    `{"detail": {"msg"}}` (KoboldCPP), or plain text."""
    text = (body.decode("utf-8", "replace") if isinstance(body, bytes) else body).strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:500] or "no details"
    if not isinstance(data, dict):
        return text[:500]
    error = data.get("error", data.get("detail", data))
    if isinstance(error, dict):
        return str(error.get("message") or error.get("msg") or error)
    return str(error)


async def bounded_lines(
    response: httpx.Response, label: str, limit: int = MAX_LINE_CHARS
) -> AsyncGenerator[str, None]:
    """The lines of a streamed body, split at CR LF, CR or LF only (as SSE says: JSON may
    hold a raw U+2028). A line longer than `limit` ends the stream with a message. Each
    piece of text is scanned once, however long the line it belongs to."""
    line: list[str] = []  # the unfinished line's pieces
    size = 0
    after_cr = False  # the last piece ended with CR: a LF starting this one belongs to it
    async for text in response.aiter_text():
        if after_cr and text.startswith("\n"):
            text = text[1:]
        after_cr = text.endswith("\r")
        parts = _NEWLINE.split(text)
        if len(parts) > 1:
            yield "".join(line) + parts[0]
            for whole in parts[1:-1]:
                yield whole
            line, size = [], 0
        line.append(parts[-1])
        size += len(parts[-1])
        if size > limit:
            raise ProviderError(f"{label} sent a line longer than {limit // 1_000_000} MB.")
    if rest := "".join(line):
        yield rest


@dataclass(frozen=True)
class ServerEvent:
    """One server-sent event: its type and its data lines, joined."""

    event: str
    data: str


async def server_events(response: httpx.Response, label: str) -> AsyncGenerator[ServerEvent, None]:
    """A `text/event-stream` body as events (comments and `id`/`retry` fields skipped)."""
    content_type = response.headers.get("content-type", "").partition(";")[0]
    if "text/event-stream" not in content_type:
        raise ProviderError(
            f"{label} did not answer with a stream (its content type is {content_type!r})."
        )
    event, data = "", list[str]()
    async for line in bounded_lines(response, label):
        if not line:
            if data:
                yield ServerEvent(event or "message", "\n".join(data))
            event, data = "", list[str]()
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
    if data:
        yield ServerEvent(event or "message", "\n".join(data))


@asynccontextmanager
async def plain_failures(name: str, base_url: str) -> AsyncIterator[None]:
    """Turn transport failures into `ProviderError`s a person can act on."""
    label = f"{name} at {base_url}"
    try:
        yield
    except httpx.ConnectError as exc:
        if "CERTIFICATE" in str(exc) or "SSL" in str(exc):  # it answered, and was not trusted
            raise ProviderError(
                f"{label}: its TLS certificate is not trusted ({exc}). If it is signed by an "
                "authority of your own, choose that authority's file in Settings."
            ) from None
        raise ProviderError(f"{name} is not running at {base_url} (connection refused).") from None
    except httpx.TimeoutException as exc:
        raise ProviderError(f"{label} did not answer in time ({type(exc).__name__}).") from None
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        raise ProviderError(f"The connection to {label} broke mid-answer ({exc}).") from None
    except httpx.HTTPError as exc:
        raise ProviderError(f"{label}: {exc}") from None


class HttpProvider:
    """What every backend over HTTP has: an address, a model, what the model can do (set
    by the probe), a client that goes nowhere but the address, and plain error messages."""

    name = "server"
    kind: BackendKind  # each backend's provider says which it is
    features = Features()  # plain chat; a backend's wire format says what more it can do

    def __init__(
        self,
        base_url: str,
        model: str = "",
        *,
        api_key: str | None = None,
        capabilities: Capabilities | None = None,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        transport: Transport = DIRECT,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.capabilities = capabilities or Capabilities()
        self.client = make_client(api_key, timeout, transport)

    @property
    def label(self) -> str:
        return f"{self.name} at {self.base_url}"

    async def aclose(self) -> None:
        await self.client.aclose()

    def http_error(self, status: int, body: bytes) -> str:
        return f"{self.label} answered HTTP {status}: {error_message(body)}"

    @asynccontextmanager
    async def open_stream(
        self, path: str, body: dict[str, Any], retries: Sequence[float]
    ) -> AsyncIterator[EventSource]:
        """POST `body` and open the SSE answer. A 503 comes before any output (a model still
        loading, a server busy with another answer), so it is retried after each delay;
        other HTTP errors raise with the server's own message."""
        for delay in (*retries, None):
            async with self._opened(path, body) as source:
                status = source.response.status_code
                if status != 503 or delay is None:
                    if status >= 400:
                        await source.response.aread()
                        raise ProviderError(self.http_error(status, source.response.content))
                    yield source  # read with server_events, which checks its content type
                    return
            await asyncio.sleep(delay)

    @asynccontextmanager
    async def _opened(self, path: str, body: dict[str, Any]) -> AsyncIterator[EventSource]:
        """The POST's answer as server-sent events (httpx-sse's request headers)."""
        sse = {"Accept": "text/event-stream", "Cache-Control": "no-store"}
        async with self.posted(path, body, sse) as response:
            yield EventSource(response)

    @asynccontextmanager
    async def posted(
        self, path: str, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> AsyncIterator[httpx.Response]:
        """A streamed POST's response. A kept-alive connection that the server closed just
        as the request went out ("Server disconnected without sending a response":
        llama.cpp closes idle ones after seconds) got no answer, so nothing was done: the
        request is sent once more, on a new connection."""
        url = f"{self.base_url}{path}"
        for attempt in range(2):
            stack = AsyncExitStack()
            try:
                response = await stack.enter_async_context(
                    self.client.stream("POST", url, json=body, headers=headers)
                )
            except httpx.RemoteProtocolError:
                await stack.aclose()
                if attempt:
                    raise
                continue
            async with stack:
                yield response
            return

    async def get_json(self, path: str) -> Any:
        """GET a JSON document for a probe; HTTP errors become `ProviderError`s."""
        async with plain_failures(self.name, self.base_url):
            response = await self.client.get(f"{self.base_url}{path}", timeout=PROBE_TIMEOUT)
        if response.status_code >= 400:
            message = error_message(response.content)
            raise ProviderError(
                f"{self.label} answered HTTP {response.status_code} for {path}: {message}"
            )
        try:
            return wire_json(response.text)
        except ValueError:
            raise ProviderError(f"{self.label} answered {path} with something not JSON") from None
