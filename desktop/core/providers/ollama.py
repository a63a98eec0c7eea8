"""Ollama's own API: `/api/chat` streamed as NDJSON, one JSON object per line.

Native tool calls arrive whole inside one chunk with `arguments` as an object; thinking
arrives in `message.thinking`; the final `done` chunk carries the token counts. The
context size is always sent (`options.num_ctx`): Ollama silently cuts an overlong prompt
from the front, and the tool definitions and system prompt are the first to go.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from typing import Any

import httpx

from desktop.core.events import (
    BrokenCall,
    Notice,
    ProviderEvent,
    Reply,
    TextChunk,
    ThinkingChunk,
    UsageReport,
)
from desktop.core.messages import Message, ToolCall
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
    PROBE_TIMEOUT,
    HttpProvider,
    bounded_lines,
    error_message,
    plain_failures,
    wire_json,
    wire_mapping,
    wire_object,
    wire_text,
)
from desktop.core.providers.transport import DIRECT, Transport
from desktop.core.tool_spec import ToolSpec

DEFAULT_NUM_CTX = 8192
# Warn when the prompt takes this share of the context window.
CONTEXT_WARNING_SHARE = 0.85


def wire_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        wire: dict[str, Any] = {"role": message.role, "content": message.text}
        if message.images:
            wire["images"] = [image.base64() for image in message.images]
        if message.tool_calls:
            wire["tool_calls"] = [
                {"id": c.id, "function": {"name": c.name, "arguments": c.arguments}}
                for c in message.tool_calls
            ]
        if message.role == "tool":
            wire["tool_name"] = message.name or ""
            if message.tool_call_id:
                wire["tool_call_id"] = message.tool_call_id
        out.append(wire)
    return out


def _calls(wire_calls: list[dict[str, Any]]) -> list[ToolCall | BrokenCall]:
    """Native calls come whole, arguments as an object (a string from older builds)."""
    found: list[ToolCall | BrokenCall] = []
    for call in wire_calls:
        function = call.get("function") or {}
        name = str(function.get("name", ""))
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = wire_json(arguments)
            except ValueError:
                found.append(BrokenCall(name, arguments, "Its arguments were not valid JSON."))
                continue
        found.append(checked_call(name, arguments, call.get("id")))
    return found


def estimate_tokens(body: dict[str, Any]) -> int:
    """A cheap upper-ish estimate (4 characters a token) for the context warning."""
    return len(json.dumps(body["messages"])) // 4 + len(json.dumps(body.get("tools", []))) // 4


class OllamaProvider(HttpProvider):
    name = "Ollama"
    kind = "ollama"
    features = Features(constrains_json=True)  # `format` takes a JSON Schema

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:11434",
        model: str = "",
        *,
        num_ctx: int = DEFAULT_NUM_CTX,
        capabilities: Capabilities | None = None,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        api_key: str | None = None,
        transport: Transport = DIRECT,
    ) -> None:
        super().__init__(
            base_url,
            model,
            api_key=api_key,
            capabilities=capabilities or Capabilities(context_size=num_ctx),
            timeout=timeout,
            transport=transport,
        )
        self.num_ctx = num_ctx

    def request_body(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], options: RequestOptions
    ) -> dict[str, Any]:
        wire_options: dict[str, Any] = {"num_ctx": self.num_ctx}
        if options.temperature is not None:
            wire_options["temperature"] = options.temperature
        if options.seed is not None:
            wire_options["seed"] = options.seed
        if options.max_tokens is not None:
            wire_options["num_predict"] = options.max_tokens
        body: dict[str, Any] = {
            "model": self.model,
            "messages": wire_messages(messages),
            "stream": True,
            "options": wire_options,
        }
        if tools:
            body["tools"] = [tool.wire_definition() for tool in tools]
        if options.json_schema is not None:
            body["format"] = options.json_schema
        return body

    async def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: RequestOptions,
    ) -> AsyncGenerator[ProviderEvent, None]:
        body = self.request_body(messages, tools, options)
        estimate = estimate_tokens(body)  # serialises the whole prompt: once
        warned = estimate >= CONTEXT_WARNING_SHARE * self.num_ctx
        if warned:
            yield Notice(self._context_warning(estimate))
        async with (
            plain_failures(self.name, self.base_url),
            self.posted("/api/chat", body) as response,
        ):
            if response.status_code >= 400:
                await response.aread()
                raise ProviderError(self.http_error(response.status_code, response.content))
            text: list[str] = []
            found: list[ToolCall | BrokenCall] = []
            lines = bounded_lines(response, self.label)
            async with aclosing(lines) as stream:
                async for line in stream:
                    if not line.strip():
                        continue
                    chunk = wire_object(line, self.label)
                    if "error" in chunk:
                        raise ProviderError(f"{self.label} failed mid-answer: {chunk['error']}")
                    message = wire_mapping(chunk.get("message"), self.label)
                    if thought := wire_text(message.get("thinking"), self.label):
                        yield ThinkingChunk(thought)
                    if content := wire_text(message.get("content"), self.label):
                        text.append(content)
                        yield TextChunk(content)
                    found.extend(_calls(message.get("tool_calls") or []))
                    if chunk.get("done"):
                        prompt_tokens = int(chunk.get("prompt_eval_count") or 0)
                        yield UsageReport(prompt_tokens, int(chunk.get("eval_count") or 0))
                        if not warned and prompt_tokens >= CONTEXT_WARNING_SHARE * self.num_ctx:
                            yield Notice(self._context_warning(prompt_tokens))
                        whole = "".join(text)
                        calls, broken = split_calls(found)
                        reason = chunk.get("done_reason")
                        yield Reply(whole, calls, broken, raw=whole, finish_reason=reason)
                        return
            raise ProviderError(f"{self.label} stopped mid-answer (the stream ended early).")

    def _context_warning(self, tokens: int) -> str:
        return (
            f"The prompt takes about {tokens} of the {self.num_ctx} tokens of context; "
            "Ollama drops the oldest part (tools and system prompt first) when it overflows. "
            "Raise the context size in the settings."
        )

    def http_error(self, status: int, body: bytes) -> str:
        message = error_message(body)
        if status == 404 and "not found" in message:
            return (
                f"The model '{self.model}' is not installed in {self.label}. "
                f"Install it with: ollama pull {self.model}"
            )
        if "does not support tools" in message:
            return (
                f"The model '{self.model}' does not support native tool calling ({message}). "
                "Use the emulated track."
            )
        return f"{self.label} answered HTTP {status}: {message}"

    async def list_models(self) -> list[str]:
        listing = await self.get_json("/api/tags")
        return [m["name"] for m in listing.get("models", []) if "name" in m]

    async def probe(self) -> Capabilities:
        """Native tools, vision and context size from `/api/show`."""
        async with plain_failures(self.name, self.base_url):
            response = await self.client.post(
                f"{self.base_url}/api/show", json={"model": self.model}, timeout=PROBE_TIMEOUT
            )
            if response.status_code >= 400:
                raise ProviderError(self.http_error(response.status_code, response.content))
            info = wire_object(response.text, self.label)
        capabilities = info.get("capabilities") or []
        trained = next(
            (
                int(v)
                for k, v in (info.get("model_info") or {}).items()
                if k.endswith(".context_length") and isinstance(v, int)
            ),
            None,
        )
        return Capabilities(
            native_tools="tools" in capabilities,
            vision="vision" in capabilities,
            # What we send is what the model gets, within what it was trained for.
            context_size=min(self.num_ctx, trained) if trained else self.num_ctx,
        )
