"""The OpenAI chat-completions wire, read and written without I/O: a caller's request as
Loomchat's messages, tool specs and options, and a model's reply as a completion or as
stream chunks (text deltas, then `tool_calls` deltas with ids and JSON argument strings,
then `finish_reason`), as the OpenAI API sends them.

A request is untrusted: checked against a schema, sizes capped, images only as data URLs
(never fetched), every tool's schema checked as a tool's is (no `$ref` that leaves it).
"""

from __future__ import annotations

import base64
import binascii
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

import jsonschema

from desktop.core.errors import UsageError
from desktop.core.events import Reply
from desktop.core.messages import Image, Message, ToolCall, call_fingerprint
from desktop.core.providers.base import RequestOptions
from desktop.core.tool_spec import ToolSpec
from desktop.core.tools.toolbox import validate_arguments

MAX_MESSAGES = 2_000
MAX_TOOLS = 256

_CONTENT: dict[str, Any] = {
    "anyOf": [
        {"type": "string"},
        {"type": "null"},
        {"type": "array", "maxItems": 64, "items": {
            "type": "object", "required": ["type"],
            "properties": {"type": {"enum": ["text", "image_url", "input_text"]}},
        }},
    ]
}  # fmt: skip
REQUEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["messages"],
    "properties": {
        "model": {"type": "string"},
        "messages": {
            "type": "array", "minItems": 1, "maxItems": MAX_MESSAGES,
            "items": {
                "type": "object", "required": ["role"],
                "properties": {
                    "role": {"enum": ["system", "developer", "user", "assistant", "tool"]},
                    "content": _CONTENT,
                    "tool_calls": {"type": ["array", "null"], "maxItems": 64},
                    "tool_call_id": {"type": "string"},
                    "name": {"type": "string"},
                },
            },
        },
        "tools": {
            "type": ["array", "null"], "maxItems": MAX_TOOLS,
            "items": {
                "type": "object", "required": ["type", "function"],
                "properties": {
                    "type": {"const": "function"},
                    "function": {
                        "type": "object", "required": ["name"],
                        "properties": {
                            "name": {"type": "string", "minLength": 1, "maxLength": 64},
                            "description": {"type": "string"},
                            "parameters": {"type": "object"},
                        },
                    },
                },
            },
        },
        "tool_choice": {
            "anyOf": [
                {"enum": ["auto", "none", "required"]},
                {"type": "object", "required": ["type", "function"], "properties": {
                    "function": {"type": "object", "required": ["name"]}}},
            ]
        },
        "stream": {"type": ["boolean", "null"]},
        "stream_options": {"type": ["object", "null"]},
        "temperature": {"type": ["number", "null"], "minimum": 0, "maximum": 2},
        "seed": {"type": ["integer", "null"]},
        "max_tokens": {"type": ["integer", "null"], "minimum": 1},
        "max_completion_tokens": {"type": ["integer", "null"], "minimum": 1},
    },
}  # fmt: skip


class BadRequest(UsageError):
    """A request the API cannot answer as asked; its message goes back as a 400."""


@dataclass(frozen=True)
class ChatRequest:
    model: str
    messages: list[Message]
    tools: list[ToolSpec]
    options: RequestOptions
    stream: bool = False
    include_usage: bool = False
    forced: Literal["auto", "required", "none"] = "auto"


def read_request(raw: Any) -> ChatRequest:
    """The request, or BadRequest saying what is wrong with it."""
    try:
        jsonschema.validate(raw, REQUEST_SCHEMA)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "the request"
        raise BadRequest(f"{where}: {exc.message[:300]}") from None
    tools = [_spec(t["function"]) for t in raw.get("tools") or []]
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        raise BadRequest("tools: two tools share a name")
    choice = raw.get("tool_choice", "auto")
    forced: Literal["auto", "required", "none"] = "auto"
    if isinstance(choice, dict):
        wanted = str(choice["function"]["name"])
        tools = [t for t in tools if t.name == wanted]
        if not tools:
            raise BadRequest(f"tool_choice: there is no tool named {wanted!r}")
        forced = "required"
    elif choice in ("required", "none"):
        forced = choice
    if forced == "none":
        tools = []
    options = RequestOptions(
        temperature=raw.get("temperature"),
        seed=raw.get("seed"),
        max_tokens=raw.get("max_completion_tokens") or raw.get("max_tokens"),
        tool_choice="required" if forced == "required" and tools else None,
    )
    stream_options = raw.get("stream_options") or {}
    return ChatRequest(
        model=str(raw.get("model") or ""),
        messages=[_message(m, n) for n, m in enumerate(raw["messages"])],
        tools=tools,
        options=options,
        stream=bool(raw.get("stream")),
        include_usage=bool(stream_options.get("include_usage")),
        forced=forced,
    )


def _spec(function: dict[str, Any]) -> ToolSpec:
    try:
        return ToolSpec(
            str(function["name"]),
            str(function.get("description") or ""),
            dict(function.get("parameters") or {"type": "object", "properties": {}}),
        )
    except ValueError as exc:
        raise BadRequest(f"tools: {exc}") from None


def _message(raw: dict[str, Any], number: int) -> Message:
    role = "system" if raw["role"] == "developer" else raw["role"]
    text, images = _content(raw.get("content"), number)
    if role == "user":
        return Message.user(text, images)
    if images:
        raise BadRequest(f"messages/{number}: only a user message may hold images")
    if role == "system":
        return Message.system(text)
    if role == "tool":
        call_id = raw.get("tool_call_id")
        if not call_id:
            raise BadRequest(f"messages/{number}: a tool message needs its tool_call_id")
        return Message.tool(str(call_id), str(raw.get("name") or ""), text)
    calls = [_call(c, number) for c in raw.get("tool_calls") or []]
    return Message.assistant(text, calls)


def _content(content: Any, number: int) -> tuple[str, list[Image]]:
    if content is None or isinstance(content, str):
        return content or "", []
    texts, images = [], []
    for part in content:
        if part["type"] in ("text", "input_text"):
            texts.append(str(part.get("text", "")))
            continue
        url = str((part.get("image_url") or {}).get("url", ""))
        images.append(_image(url, number))
    return "\n".join(texts), images


def _image(url: str, number: int) -> Image:
    """An image from a data URL; a web address is never fetched."""
    head, comma, data = url.partition(",")
    if not (head.startswith("data:") and head.endswith(";base64") and comma):
        raise BadRequest(f"messages/{number}: images must be data URLs (no address is fetched)")
    try:
        return Image.from_bytes(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError) as exc:
        raise BadRequest(f"messages/{number}: the image cannot be read: {exc}") from None


def _call(raw: Any, number: int) -> ToolCall:
    try:
        function = raw["function"]
        arguments = function.get("arguments") or "{}"
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
        return ToolCall(str(raw.get("id") or f"call_{number}"), str(function["name"]), parsed)
    except (KeyError, TypeError, AttributeError, ValueError, RecursionError):
        raise BadRequest(f"messages/{number}: a tool call that cannot be read") from None


# --- answers ---------------------------------------------------------------------------


@dataclass
class Answer:
    """One completion as it goes out: its id and model, the calls kept (those the caller
    offered, with valid arguments) and why the others were dropped."""

    model: str
    id: str = field(default_factory=lambda: f"chatcmpl-{uuid.uuid4().hex[:24]}")
    created: int = field(default_factory=lambda: int(time.time()))
    dropped: list[str] = field(default_factory=list)

    def calls(self, reply: Reply, tools: list[ToolSpec]) -> list[ToolCall]:
        by_name = {t.name: t for t in tools}
        kept = []
        for call in reply.tool_calls:
            spec = by_name.get(call.name)
            problem = "not offered" if spec is None else validate_arguments(spec, call.arguments)
            if problem is None:
                kept.append(call)
            else:
                self.dropped.append(f"{call.name}: {problem}")
        self.dropped += [f"{b.name}: {b.reason}" for b in reply.broken_calls]
        return kept

    def completion(self, text: str, calls: list[ToolCall], finish: str | None,
                   usage: tuple[int, int] | None) -> dict[str, Any]:  # fmt: skip
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = [_wire_call(c) for c in calls]
        body: dict[str, Any] = {
            "id": self.id, "object": "chat.completion", "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": finish_reason(calls, finish)}],
        }  # fmt: skip
        # Always there, as OpenAI sends it (clients read it); zeros where the server said none.
        body["usage"] = _usage(usage or (0, 0))
        return body

    def chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": self.id, "object": "chat.completion.chunk", "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }  # fmt: skip

    def call_chunks(self, calls: list[ToolCall]) -> list[dict[str, Any]]:
        """Each call as the API streams one: its id and name, then its arguments."""
        chunks = []
        for index, call in enumerate(calls):
            wire = _wire_call(call)
            opening = {**wire, "index": index, "function": {**wire["function"], "arguments": ""}}
            chunks.append(self.chunk({"tool_calls": [opening]}))
            arguments = {"index": index, "function": {"arguments": wire["function"]["arguments"]}}
            chunks.append(self.chunk({"tool_calls": [arguments]}))
        return chunks

    def usage_chunk(self, usage: tuple[int, int]) -> dict[str, Any]:
        return {"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                "model": self.model, "choices": [], "usage": _usage(usage)}  # fmt: skip


def answered_before(call: ToolCall, messages: list[Message]) -> bool:
    """Whether the conversation already holds this exact call (name and arguments) and a
    result for it: the model is repeating itself."""
    wanted = call_fingerprint(call.name, call.arguments)
    made = {c.id for m in messages for c in m.tool_calls
            if call_fingerprint(c.name, c.arguments) == wanted}  # fmt: skip
    return any(m.role == "tool" and m.tool_call_id in made for m in messages)


def finish_reason(calls: list[ToolCall], finish: str | None) -> str:
    if calls:
        return "tool_calls"
    return "length" if finish == "length" else "stop"


def _wire_call(call: ToolCall) -> dict[str, Any]:
    arguments = json.dumps(call.arguments, ensure_ascii=False)
    return {"id": call.id, "type": "function", "function": {"name": call.name,
                                                            "arguments": arguments}}  # fmt: skip


def _usage(usage: tuple[int, int]) -> dict[str, int]:
    prompt, completion = usage
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}  # fmt: skip


def error_body(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    """An error as the OpenAI API writes one (its clients read `error.message`)."""
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}
