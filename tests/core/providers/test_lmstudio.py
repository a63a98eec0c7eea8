"""LM Studio's capability probe against its REST API, replayed locally."""

import pytest

from desktop.core.messages import Image, Message
from desktop.core.providers.base import Capabilities, ProviderError, RequestOptions
from desktop.core.providers.lmstudio import LMStudioProvider
from tests.support.replay_server import Canned, ReplayServer

V1 = {"models": [
    {"type": "llm", "key": "qwen/qwen3-8b", "display_name": "Qwen3 8B", "architecture": "qwen3",
     "quantization": {"name": "Q4_K_M", "bits_per_weight": 4.8}, "size_bytes": 5000000000,
     "params_string": "8B", "loaded_instances": [{"id": "qwen/qwen3-8b", "config": {"context_length": 8192}}],
     "max_context_length": 40960, "format": "gguf",
     "capabilities": {"vision": False, "trained_for_tool_use": True}},
    {"type": "llm", "key": "google/gemma-3-4b", "loaded_instances": [], "max_context_length": 131072,
     "capabilities": {"vision": True, "trained_for_tool_use": False}},
]}  # fmt: skip
V0 = {"object": "list", "data": [
    {"id": "llava-v1.5-7b", "object": "model", "type": "vlm", "publisher": "llava", "arch": "llava",
     "compatibility_type": "gguf", "quantization": "Q4_K_M", "state": "loaded",
     "max_context_length": 4096, "loaded_context_length": 2048},
    {"id": "qwen2.5-7b-instruct", "object": "model", "type": "llm", "state": "not-loaded",
     "max_context_length": 32768, "capabilities": ["tool_use"]},
]}  # fmt: skip
NOT_FOUND = Canned(
    404, "application/json", [b'{"error":"Unexpected endpoint or method. (GET /api/v1/models)"}']
)


async def test_v1_capabilities_for_the_chosen_model() -> None:
    async with ReplayServer() as server:
        server.route("GET", "/api/v1/models", Canned.json(V1))
        loaded = await LMStudioProvider(server.url, "qwen/qwen3-8b").probe()
        idle = await LMStudioProvider(server.url, "google/gemma-3-4b").probe()
    assert loaded == Capabilities(native_tools=True, vision=False, context_size=8192)
    assert idle == Capabilities(native_tools=False, vision=True, context_size=131072)


async def test_falls_back_to_v0_on_older_versions() -> None:
    async with ReplayServer() as server:
        server.route("GET", "/api/v1/models", NOT_FOUND)
        server.route("GET", "/api/v0/models", Canned.json(V0))
        vlm = await LMStudioProvider(server.url, "llava-v1.5-7b").probe()
        tool_user = await LMStudioProvider(server.url, "qwen2.5-7b-instruct").probe()
    assert vlm == Capabilities(native_tools=False, vision=True, context_size=2048)
    assert tool_user == Capabilities(native_tools=True, vision=False, context_size=32768)


async def test_a_model_it_does_not_list_is_an_error() -> None:
    """Edge case 30: the cache turns this into the emulated default."""
    async with ReplayServer() as server:
        server.route("GET", "/api/v1/models", Canned.json(V1))
        with pytest.raises(ProviderError, match="does not list the model 'nope'"):
            await LMStudioProvider(server.url, "nope").probe()


async def test_token_is_sent_and_a_refusal_is_reported() -> None:
    """Edge case 30: LM Studio behind an auth token."""
    refusal = Canned(401, "application/json", [b'{"error":"Invalid or missing API token"}'])
    async with ReplayServer() as server:
        server.route("GET", "/api/v1/models", refusal)
        server.route("GET", "/api/v0/models", refusal)
        with pytest.raises(
            ProviderError, match="HTTP 401 for /api/v1/models: Invalid or missing API token"
        ):
            await LMStudioProvider(server.url, "m", api_key="tok").probe()
    assert server.requests[0].headers["authorization"] == "Bearer tok"


async def test_images_to_a_model_without_vision_is_a_clear_error() -> None:
    """LM Studio answers with a string error body."""
    body = Canned(
        400,
        "application/json",
        [b'{"error":"Model does not support images. Please use a model that does."}'],
    )
    async with ReplayServer() as server:
        server.route("POST", "/v1/chat/completions", body)
        provider = LMStudioProvider(server.url, "m")
        with pytest.raises(ProviderError, match="HTTP 400: Model does not support images"):
            async for _ in provider.stream(
                [Message.user("see", [Image.from_bytes(b"\x89PNG\r\n\x1a\n")])],
                [],
                RequestOptions(),
            ):
                pass
