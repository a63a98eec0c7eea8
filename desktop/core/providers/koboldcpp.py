"""KoboldCPP, over two of its APIs.

Plain generation (the emulated track, and every answer without native tools) uses the
KoboldAI API, `/api/extra/generate/stream`: it streams real tokens, takes a GBNF `grammar`
and the images, and each request has a `genkey` so that a stop can abort exactly that
generation (`/api/extra/abort`; KoboldCPP does not always stop when the socket closes).
The prompt is rendered here with the model's own chat template from `/props`.

Native tools use the OpenAI-compatible endpoint, because that is where KoboldCPP runs its
own tool emulation; it fake-streams tool answers, which is why it is not our default.
The output-token limit is sent on both paths: KoboldCPP otherwise stops at 512 tokens.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import replace
from typing import Any

import httpx

from desktop.core.events import ProviderEvent, Reply, TextChunk
from desktop.core.messages import Message
from desktop.core.providers.base import Capabilities, ProviderError, RequestOptions
from desktop.core.providers.chat_template import CHATML_STOP, render_prompt
from desktop.core.providers.http import (
    DEFAULT_TIMEOUT,
    PROBE_TIMEOUT,
    HttpProvider,
    error_message,
    plain_failures,
    server_events,
    wire_object,
    wire_text,
)
from desktop.core.providers.openai_compat import OpenAICompatProvider
from desktop.core.providers.transport import DIRECT, Transport
from desktop.core.tool_spec import ToolSpec

DEFAULT_MAX_LENGTH = 1024
# One generation at a time: a second request gets 503 "busy" before it starts, so retrying
# is safe.
BUSY_RETRIES = (0.5, 1.0, 2.0)


class KoboldCppProvider(HttpProvider):
    name = "KoboldCPP"
    kind = "koboldcpp"

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:5001",
        model: str = "",
        *,
        api_key: str | None = None,
        capabilities: Capabilities | None = None,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        busy_retries: Sequence[float] = BUSY_RETRIES,
        transport: Transport = DIRECT,
    ) -> None:
        super().__init__(base_url, model, api_key=api_key, capabilities=capabilities,
                         timeout=timeout, transport=transport)  # fmt: skip
        self.busy_retries = tuple(busy_retries)
        # Native tools only: its OpenAI endpoint, where KoboldCPP emulates tools itself.
        self.openai = OpenAICompatProvider(
            self.base_url, model, name=self.name, api_key=api_key, timeout=timeout
        )
        self._template: tuple[str | None, str, str] | None = None

    async def aclose(self) -> None:
        await super().aclose()
        await self.openai.aclose()

    async def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: RequestOptions,
    ) -> AsyncGenerator[ProviderEvent, None]:
        if tools:
            limited = replace(options, max_tokens=options.max_tokens or DEFAULT_MAX_LENGTH)
            async with aclosing(self.openai.stream(messages, tools, limited)) as stream:
                async for event in stream:
                    yield event
            return
        body = await self.generate_body(messages, options)
        path = "/api/extra/generate/stream"
        async with (
            plain_failures(self.name, self.base_url),
            self.open_stream(path, body, self.busy_retries) as source,
        ):
            try:
                async with aclosing(
                    self._tokens(server_events(source.response, self.label))
                ) as stream:
                    async for event in stream:
                        yield event
            except asyncio.CancelledError:
                await self.abort(body["genkey"])  # it does not always stop when the socket closes
                raise

    async def _tokens(
        self, events: AsyncGenerator[Any, None]
    ) -> AsyncGenerator[ProviderEvent, None]:
        text: list[str] = []
        finish_reason: str | None = None
        async with aclosing(events) as stream:
            async for sse in stream:
                if not sse.data:
                    continue
                data = wire_object(sse.data, self.label)
                token = wire_text(data.get("token"), self.label)
                if token:
                    text.append(token)
                    yield TextChunk(token)
                if data.get("finish_reason"):
                    finish_reason = data["finish_reason"]
        if finish_reason is None:
            raise ProviderError(f"{self.label} stopped mid-answer (the stream ended early).")
        whole = "".join(text)
        yield Reply(whole, raw=whole, finish_reason=finish_reason)

    async def abort(self, genkey: str) -> None:
        """Ask KoboldCPP to stop this generation; best effort, it may have finished."""
        with contextlib.suppress(httpx.HTTPError):
            await self.client.post(
                f"{self.base_url}/api/extra/abort", json={"genkey": genkey}, timeout=PROBE_TIMEOUT
            )

    async def generate_body(
        self, messages: Sequence[Message], options: RequestOptions
    ) -> dict[str, Any]:
        template, bos, eos = await self._chat_template()
        prompt, own_template = render_prompt(messages, template, bos_token=bos, eos_token=eos)
        stops = [eos] if own_template and eos else []
        if not own_template:
            stops.append(CHATML_STOP)
        body: dict[str, Any] = {
            "prompt": prompt,
            "max_length": options.max_tokens or DEFAULT_MAX_LENGTH,
            "genkey": f"KCPP{uuid.uuid4().hex[:12]}",
            "stop_sequence": stops,
            "trim_stop": True,
        }
        if self.capabilities.context_size:
            body["max_context_length"] = self.capabilities.context_size
        if options.temperature is not None:
            body["temperature"] = options.temperature
        if options.seed is not None:
            body["sampler_seed"] = options.seed
        images = [image.base64() for m in messages for image in m.images]
        if images:
            body["images"] = images
        return body

    async def _chat_template(self) -> tuple[str | None, str, str]:
        """The model's chat template and special tokens from `/props`, read once."""
        if self._template is None:
            try:
                props = await self.get_json("/props")
                self._template = (
                    props.get("chat_template") or None,
                    str(props.get("bos_token") or ""),
                    str(props.get("eos_token") or ""),
                )
            except ProviderError:
                self._template = (None, "", "")
        return self._template

    def http_error(self, status: int, body: bytes) -> str:
        message = error_message(body)
        if status == 401:
            return f"{self.label} needs its password: set the API key in the settings ({message})"
        return f"{self.label} answered HTTP {status}: {message}"

    async def list_models(self) -> list[str]:
        result = str((await self.get_json("/api/v1/model")).get("result", ""))
        return [result.removeprefix("koboldcpp/")] if result else []

    async def probe(self) -> Capabilities:
        version = await self.get_json("/api/extra/version")
        context: int | None = None
        with contextlib.suppress(ProviderError):
            value = (await self.get_json("/api/extra/true_max_context_length")).get("value")
            context = int(value) if isinstance(value, int) else None
        # KoboldCPP's tools are its own prompt emulation: ours is better and streams.
        return Capabilities(
            native_tools=False, vision=bool(version.get("vision")), context_size=context
        )
