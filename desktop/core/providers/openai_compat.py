"""OpenAI-compatible chat completions over SSE: llama.cpp's llama-server, LM Studio, and
any server that speaks `/v1/chat/completions`.

Streams `delta.content` as text and `delta.reasoning_content` (llama.cpp) or
`delta.reasoning` (LM Studio) as thinking; assembles native tool calls from their
fragments by `index` (name first, arguments over many chunks, ids that may be null).
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

import httpx
from httpx_sse import EventSource

from desktop.core.backend_kind import BackendKind
from desktop.core.events import (
    BrokenCall,
    ProviderEvent,
    Reply,
    TextChunk,
    ThinkingChunk,
    TokenOdds,
    UsageReport,
)
from desktop.core.messages import Image, Message, ToolCall
from desktop.core.providers.base import (
    Capabilities,
    Features,
    ProviderError,
    RequestOptions,
    checked_call,
    split_calls,
)
from desktop.core.providers.http import (
    DEFAULT_TIMEOUT,
    HttpProvider,
    error_message,
    plain_failures,
    server_events,
    wire_json,
    wire_mapping,
    wire_object,
    wire_text,
)
from desktop.core.providers.transport import DIRECT, Transport
from desktop.core.tool_spec import ToolSpec

# llama.cpp answers 503 while it loads the model: nothing was generated, so waiting is safe.
LOADING_RETRIES = (1.0, 2.0, 4.0, 8.0)


def wire_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The conversation in the OpenAI chat format (images as data URLs, arguments as JSON)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        wire: dict[str, Any] = {"role": message.role}
        images = message.images
        if images and message.role == "user":
            content: list[dict[str, Any]] = []
            if message.text:
                content.append({"type": "text", "text": message.text})
            content.extend(_image_part(image) for image in images)
            wire["content"] = content
        else:
            wire["content"] = message.text
        if message.tool_calls:
            wire["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": json.dumps(call.arguments, ensure_ascii=False),
                    },
                }
                for call in message.tool_calls
            ]
        if message.role == "tool":
            wire["tool_call_id"] = message.tool_call_id
            if message.name:
                wire["name"] = message.name
        out.append(wire)
    return out


def _image_part(image: Image) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": image.data_url()}}


@dataclass
class _CallFragments:
    id: str | None = None
    name: str = ""
    arguments: str = ""


class OpenAICompatProvider(HttpProvider):
    kind: BackendKind = "openai"
    """A `/v1/chat/completions` backend. `name` is what people call it ("llama.cpp server")."""

    # response_format with a JSON Schema (llama.cpp, LM Studio); `logprobs` + `top_logprobs`
    # as OpenAI defines them.
    features = Features(constrains_json=True, reports_token_odds=True)

    def __init__(
        self,
        base_url: str,
        model: str = "",
        *,
        name: str = "OpenAI-compatible server",
        api_key: str | None = None,
        capabilities: Capabilities | None = None,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        loading_retries: Sequence[float] = LOADING_RETRIES,
        transport: Transport = DIRECT,
    ) -> None:
        base_url = base_url.rstrip("/")
        base_url = base_url.removesuffix("/v1")
        super().__init__(base_url, model, api_key=api_key, capabilities=capabilities,
                         timeout=timeout, transport=transport)  # fmt: skip
        self.name = name
        self.loading_retries = tuple(loading_retries)

    async def list_models(self) -> list[str]:
        data = await self.get_json("/v1/models")
        return [str(m["id"]) for m in data.get("data", []) if "id" in m]

    async def probe(self) -> Capabilities:
        """A generic server says nothing of its model: assume the least."""
        return Capabilities()

    def request_body(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], options: RequestOptions
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "messages": wire_messages(messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if self.model:
            body["model"] = self.model
        if tools:
            body["tools"] = [tool.wire_definition() for tool in tools]
            body["parallel_tool_calls"] = True
            if options.tool_choice:
                body["tool_choice"] = options.tool_choice
        if options.temperature is not None:
            body["temperature"] = options.temperature
        if options.seed is not None:
            body["seed"] = options.seed
        if options.max_tokens is not None:
            body["max_tokens"] = options.max_tokens
        if options.json_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "strict": True, "schema": options.json_schema},
            }
        if options.grammar is not None and self.features.takes_grammar:
            body["grammar"] = options.grammar
        if options.top_logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = options.top_logprobs
        return body

    async def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: RequestOptions,
    ) -> AsyncGenerator[ProviderEvent, None]:
        body = self.request_body(messages, tools, options)
        async with (
            plain_failures(self.name, self.base_url),
            self.open_stream("/v1/chat/completions", body, self.loading_retries) as source,
            aclosing(self._events(source)) as stream,
        ):
            async for event in stream:
                yield event

    async def _events(self, source: EventSource) -> AsyncGenerator[ProviderEvent, None]:
        text: list[str] = []
        fragments: dict[int, _CallFragments] = {}
        finish_reason: str | None = None
        done = False
        async with aclosing(server_events(source.response, self.label)) as stream:
            async for sse in stream:
                if sse.data == "[DONE]":
                    done = True
                    break
                if not sse.data:
                    continue
                chunk = wire_object(sse.data, self.label)
                if "error" in chunk:
                    message = error_message(sse.data.encode())
                    raise ProviderError(f"{self.label} failed mid-answer: {message}")
                usage = chunk.get("usage")
                if isinstance(usage, dict):
                    timings = chunk.get("timings") or {}
                    cached = timings.get("cache_n")
                    yield UsageReport(
                        int(usage.get("prompt_tokens") or 0),
                        int(usage.get("completion_tokens") or 0),
                        int(cached) if isinstance(cached, int) else None,
                    )
                choices = chunk.get("choices") or []
                if not isinstance(choices, list):
                    raise ProviderError(f"{self.label} sent choices that are not a list.")
                for choice in choices:
                    choice = wire_mapping(choice, self.label)
                    delta = wire_mapping(choice.get("delta"), self.label)
                    thought = delta.get("reasoning_content") or delta.get("reasoning")
                    if thought := wire_text(thought, self.label):
                        yield ThinkingChunk(thought)
                    content = wire_text(delta.get("content"), self.label)
                    if content:
                        text.append(content)
                        yield TextChunk(content)
                    for odds in token_odds(choice.get("logprobs")):
                        yield odds
                    for fragment in delta.get("tool_calls") or []:
                        slot = fragments.setdefault(int(fragment.get("index", 0)), _CallFragments())
                        slot.id = fragment.get("id") or slot.id
                        function = fragment.get("function") or {}
                        slot.name += function.get("name") or ""
                        slot.arguments += function.get("arguments") or ""
                    if choice.get("finish_reason"):
                        finish_reason = choice["finish_reason"]
        if not done and finish_reason is None:
            raise ProviderError(f"{self.label} stopped mid-answer (the stream ended early).")
        calls, broken = _assemble(fragments)
        whole = "".join(text)
        yield Reply(whole, calls, broken, raw=whole, finish_reason=finish_reason)


def token_odds(logprobs: Any) -> list[TokenOdds]:
    """`choices[].logprobs.content[]` as probabilities: each token's top alternatives, and
    the token generated; nothing if absent. Entries that are not numbers are left out."""
    if not isinstance(logprobs, dict):
        return []
    found = []
    for entry in logprobs.get("content") or []:
        top = entry.get("top_logprobs") if isinstance(entry, dict) else None
        if not isinstance(top, list):
            continue
        alternatives = tuple(
            (t["token"], p)
            for t in top
            if isinstance(t, dict)
            and isinstance(t.get("token"), str)
            and (p := _probability(t.get("logprob"))) is not None
        )
        chosen = None
        token, probability = entry.get("token"), _probability(entry.get("logprob"))
        if isinstance(token, str) and probability is not None:
            chosen = (token, probability)
        found.append(TokenOdds(alternatives, chosen))
    return found


def _probability(logprob: Any) -> float | None:
    """A log probability as a probability; None if it is not a number (a log probability
    is never above 0: a larger one is taken as 0, not left to overflow)."""
    if isinstance(logprob, bool) or not isinstance(logprob, int | float):
        return None
    if math.isnan(logprob):
        return None
    return math.exp(min(0.0, float(logprob)))


def _assemble(fragments: dict[int, _CallFragments]) -> tuple[list[ToolCall], list[BrokenCall]]:
    found: list[ToolCall | BrokenCall] = []
    for index in sorted(fragments):
        slot = fragments[index]
        try:
            arguments = wire_json(slot.arguments) if slot.arguments.strip() else {}
        except ValueError:
            reason = "Its arguments were not valid JSON."
            found.append(BrokenCall(slot.name, slot.arguments, reason))
            continue
        found.append(checked_call(slot.name, arguments, slot.id))
    return split_calls(found)
