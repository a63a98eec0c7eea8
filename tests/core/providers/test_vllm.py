"""vLLM and SGLang against a stand-in that speaks vLLM's documented wire byte for byte
(its `/v1/models` cards, its stream chunks with OpenAI `logprobs`): the probe reads the
context, and the constrained track's call gate and guided decoding drive a real turn."""

from __future__ import annotations

import json
from typing import Any

import pytest

from desktop.core.events import ToolResult, TurnFinished
from desktop.core.loop import complete_turn
from desktop.core.messages import Message
from desktop.core.providers.base import Capabilities, ProviderError
from desktop.core.providers.registry import BACKENDS, make_provider
from desktop.core.providers.vllm import SglangProvider, VllmProvider
from desktop.core.tools.toolbox import Tool, Toolbox, ToolOutput
from desktop.core.tracks.choice import on_track
from desktop.core.tracks.constrained import ConstrainedTools
from tests.support.replay_server import Canned, Received, ReplayServer

MODEL = "Qwen/Qwen2.5-7B-Instruct"
# vLLM's ModelList as its OpenAI server writes it (protocol.py: ModelCard, ModelPermission).
MODELS = {"object": "list", "data": [{
    "id": MODEL, "object": "model", "created": 1764900000, "owned_by": "vllm", "root": MODEL,
    "parent": None, "max_model_len": 32768, "permission": [{
        "id": "modelperm-5e2c0b4c1f7e4c7a9d3e", "object": "model_permission",
        "created": 1764900000, "allow_create_engine": False, "allow_sampling": True,
        "allow_logprobs": True, "allow_search_indices": False, "allow_view": True,
        "allow_fine_tuning": False, "organization": "*", "group": None, "is_blocking": False}]}]}  # fmt: skip


def chunk(delta: dict[str, Any], finish: str | None = None, logprobs: Any = None) -> bytes:
    """One `chat.completion.chunk` as vLLM streams it."""
    body = {"id": "chatcmpl-8f3a", "object": "chat.completion.chunk", "created": 1764900001,
            "model": MODEL, "choices": [{"index": 0, "delta": delta, "logprobs": logprobs,
                                         "finish_reason": finish}]}  # fmt: skip
    return f"data: {json.dumps(body)}\n\n".encode()


def streamed(text: str, logprobs: Any = None) -> Canned:
    usage = {"id": "chatcmpl-8f3a", "object": "chat.completion.chunk", "created": 1764900001,
             "model": MODEL, "choices": [], "usage": {"prompt_tokens": 120,
             "total_tokens": 130, "completion_tokens": 10}}  # fmt: skip
    return Canned(pieces=[chunk({"role": "assistant", "content": ""}),
                          chunk({"content": text}, logprobs=logprobs),
                          chunk({}, "stop"), f"data: {json.dumps(usage)}\n\n".encode(),
                          b"data: [DONE]\n\n"])  # fmt: skip


def top(token: str, logprob: float) -> dict[str, Any]:
    return {"token": token, "logprob": logprob, "bytes": list(token.encode())}


def vllm_chat(requests: list[dict[str, Any]]) -> Any:
    """The model: sure it calls get_weather (the gate's one-token probe reads its odds),
    the call itself under the JSON Schema guided decoding, then an answer in words."""

    def route(request: Received) -> Canned:
        body = request.json()
        requests.append(body)
        if body.get("logprobs") and body.get("max_tokens") == 1:
            odds = {"content": [{**top("{", -0.02), "top_logprobs": [top("{", -0.02),
                                                                     top("The", -4.2)]}]}  # fmt: skip
            return streamed("{", odds)
        if "response_format" in body:
            return streamed('[{"name": "get_weather", "arguments": {"city": "Oslo"}}]')
        if any(m["role"] == "tool" or "[Result" in str(m.get("content")) for m in body["messages"]):
            return streamed("It is 3 °C in Oslo.")
        return streamed('{"name": "get_weather", "arguments": {"city": "Oslo"}}')

    return route


async def weather(arguments: dict[str, Any]) -> ToolOutput:
    return ToolOutput(f"3 °C in {arguments['city']}")


WEATHER = Tool("get_weather", "The weather in a city now.", {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, weather)  # fmt: skip


@pytest.mark.parametrize("kind", ["vllm", "sglang"])
async def test_the_probe_reads_the_context_of_the_model(kind: str) -> None:
    async with ReplayServer() as server:
        server.route("GET", "/v1/models", Canned.json(MODELS))
        provider = make_provider(kind, server.url, MODEL)
        try:
            assert await provider.probe() == Capabilities(context_size=32768)
            assert await provider.list_models() == [MODEL]
            missing = make_provider(kind, server.url, "other/model")
            with pytest.raises(ProviderError, match="does not serve the model 'other/model'"):
                await missing.probe()
            await missing.aclose()
        finally:
            await provider.aclose()
    assert isinstance(provider, VllmProvider)
    assert isinstance(provider, SglangProvider) == (kind == "sglang")
    assert BACKENDS[kind].default_url.endswith(":8000" if kind == "vllm" else ":30000")


async def test_guided_decoding_and_logprobs_drive_the_constrained_track() -> None:
    requests: list[dict[str, Any]] = []
    async with ReplayServer() as server:
        server.route("GET", "/v1/models", Canned.json(MODELS))
        server.route("POST", "/v1/chat/completions", vllm_chat(requests))
        provider = VllmProvider(server.url, MODEL, api_key="secret-token")
        try:
            provider.capabilities = await provider.probe()
            active, track = on_track(provider, "emulated")
            assert track == "emulated" and isinstance(active, ConstrainedTools)
            events = await complete_turn(active, Toolbox([WEATHER]),
                                         [Message.user("Weather in Oslo?")])  # fmt: skip
        finally:
            await provider.aclose()
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [r.content for r in results] == ["3 °C in Oslo"]
    assert isinstance(events[-1], TurnFinished) and events[-1].text == "It is 3 °C in Oslo."
    guided = [r for r in requests if "response_format" in r]
    assert guided and guided[0]["response_format"]["type"] == "json_schema"
    schema = guided[0]["response_format"]["json_schema"]["schema"]
    assert "get_weather" in json.dumps(schema)
    probes = [r for r in requests if r.get("logprobs")]
    assert probes and probes[0]["top_logprobs"] >= 2 and probes[0]["model"] == MODEL
    assert server.requests[-1].headers["authorization"] == "Bearer secret-token"
