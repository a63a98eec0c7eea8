"""Building providers, the capability cache, track choice and backend discovery."""

import pytest

from desktop.core.backend_kind import BACKEND_KINDS
from desktop.core.providers.base import Capabilities, ProviderError
from desktop.core.providers.discovery import discover
from desktop.core.providers.koboldcpp import KoboldCppProvider
from desktop.core.providers.llamacpp import LlamaCppProvider
from desktop.core.providers.lmstudio import LMStudioProvider
from desktop.core.providers.ollama import OllamaProvider
from desktop.core.providers.openai_compat import OpenAICompatProvider
from desktop.core.providers.probing import CapabilityCache
from desktop.core.providers.registry import BACKENDS, make_provider
from desktop.core.providers.vllm import SglangProvider, VllmProvider
from desktop.core.runtime import free_port
from desktop.core.storage.settings import SCHEMA
from desktop.core.tracks.choice import on_track, prepare
from desktop.core.tracks.constrained import ConstrainedTools
from desktop.core.tracks.native import NativeTools
from tests.support.replay_server import Canned, ReplayServer


def test_each_kind_gets_its_provider_and_default_address() -> None:
    expected = {
        "ollama": (OllamaProvider, "http://127.0.0.1:11434"),
        "lmstudio": (LMStudioProvider, "http://127.0.0.1:1234"),
        "koboldcpp": (KoboldCppProvider, "http://127.0.0.1:5001"),
        "llamacpp": (LlamaCppProvider, "http://127.0.0.1:8080"),
        "openai": (OpenAICompatProvider, "http://127.0.0.1:8080"),
        "vllm": (VllmProvider, "http://127.0.0.1:8000"),
        "sglang": (SglangProvider, "http://127.0.0.1:30000"),
    }
    for kind, (cls, url) in expected.items():
        provider = make_provider(kind)
        assert type(provider) is cls and provider.base_url == url
        assert provider.kind == kind  # the provider says which backend it is
    assert list(expected) == list(BACKEND_KINDS) == list(BACKENDS)
    backend_choices = SCHEMA["properties"]["backend"]["enum"]
    assert backend_choices == ["auto", "builtin", *BACKEND_KINDS]  # settings take every kind
    with pytest.raises(ValueError, match="unknown backend"):
        make_provider("vllm2")


class Probed:
    """A provider whose probe answers what the test says, counting the calls."""

    def __init__(self, answers: list[Capabilities | Exception], model: str = "m") -> None:
        self.answers = answers
        self.calls = 0
        self.base_url = "http://127.0.0.1:1"
        self.model = model
        self.capabilities = Capabilities()
        self.label = "probed"

    async def probe(self) -> Capabilities:
        self.calls += 1
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_a_successful_probe_is_asked_once() -> None:
    cache = CapabilityCache()
    provider = Probed([Capabilities(native_tools=True)])
    for _ in range(3):
        assert (await cache.capabilities(provider)).capabilities.native_tools  # type: ignore[arg-type]
    assert provider.calls == 1


async def test_a_failed_probe_falls_back_and_is_retried_later() -> None:
    """Edge case 30: a probe failure is emulated tools, not a crash, and not forever."""
    clock = Clock()
    cache = CapabilityCache(retry_after_s=60, clock=clock)
    provider = Probed([ProviderError("Ollama is not running"), Capabilities(vision=True)])
    failed = await cache.capabilities(provider)  # type: ignore[arg-type]
    assert failed.capabilities == Capabilities() and "Ollama is not running" in (failed.error or "")
    clock.now = 30
    assert (await cache.capabilities(provider)).error is not None  # type: ignore[arg-type]
    assert provider.calls == 1
    clock.now = 61
    assert (await cache.capabilities(provider)).capabilities.vision  # type: ignore[arg-type]
    assert provider.calls == 2


async def test_track_choice() -> None:
    native_model = Probed([Capabilities(native_tools=True)], model="qwen3")
    plain_model = Probed([Capabilities()], model="gemma3")
    cache = CapabilityCache()
    for provider, track, expected in [
        (native_model, "auto", "native"),
        (plain_model, "auto", "emulated"),
        (native_model, "emulated", "emulated"),
        (plain_model, "native", "native"),
    ]:
        active, chosen, _ = await prepare(provider, track, cache)  # type: ignore[arg-type]
        assert chosen == expected
        assert type(active) is (ConstrainedTools if expected == "emulated" else NativeTools)
    assert on_track(plain_model, "emulated")[1] == "emulated"  # type: ignore[arg-type]


async def test_probe_applies_vision_to_the_provider_used() -> None:
    provider = Probed([Capabilities(vision=True)])
    active, _, _ = await prepare(provider, "emulated", CapabilityCache())  # type: ignore[arg-type]
    assert active.capabilities.vision


# --- discovery: each fake speaks only what its backend really answers -------------------

KOBOLD_VERSION = {"result": "KoboldCpp", "version": "1.102", "vision": False}


def kobold(server: ReplayServer) -> None:
    server.route("GET", "/api/extra/version", Canned.json(KOBOLD_VERSION))
    server.route("GET", "/api/v1/model", Canned.json({"result": "koboldcpp/Llama-3-8B"}))
    # KoboldCPP also emulates Ollama: discovery must not be fooled
    server.route("GET", "/api/version", Canned.json({"version": "0.7.0"}))
    server.route("GET", "/api/tags", Canned.json({"models": [{"name": "koboldcpp/Llama-3-8B"}]}))


def ollama(server: ReplayServer) -> None:
    server.route("GET", "/api/version", Canned.json({"version": "0.12.3"}))
    server.route(
        "GET", "/api/tags", Canned.json({"models": [{"name": "qwen3:4b"}, {"name": "llava:7b"}]})
    )


def llamacpp(server: ReplayServer) -> None:
    server.route(
        "GET",
        "/props",
        Canned.json(
            {"default_generation_settings": {"n_ctx": 4096}, "modalities": {"vision": False}}
        ),
    )
    server.route(
        "GET",
        "/v1/models",
        Canned.json({"object": "list", "data": [{"id": "qwen.gguf", "object": "model"}]}),
    )
    server.route("GET", "/health", Canned.json({"status": "ok"}))


def lmstudio(server: ReplayServer) -> None:
    server.route("GET", "/api/v1/models", Canned.json({"models": [{"key": "qwen/qwen3-8b"}]}))
    server.route(
        "GET",
        "/v1/models",
        Canned.json({"object": "list", "data": [{"id": "qwen/qwen3-8b"}, {"id": "gemma"}]}),
    )


async def test_discovery_tells_the_four_apart_and_lists_models() -> None:
    servers = [ReplayServer() for _ in range(4)]
    for server, setup in zip(servers, [kobold, ollama, llamacpp, lmstudio], strict=True):
        await server.__aenter__()
        setup(server)
    dead = f"http://127.0.0.1:{free_port()}"
    try:
        found = await discover([s.url for s in servers] + [dead])
    finally:
        for server in servers:
            await server.__aexit__()
    assert [(f.kind, f.url, f.models) for f in found] == [
        ("koboldcpp", servers[0].url, ["Llama-3-8B"]),
        ("ollama", servers[1].url, ["qwen3:4b", "llava:7b"]),
        ("llamacpp", servers[2].url, ["qwen.gguf"]),
        ("lmstudio", servers[3].url, ["qwen/qwen3-8b", "gemma"]),
    ]


async def test_discovery_of_nothing_is_empty() -> None:
    assert await discover([f"http://127.0.0.1:{free_port()}"]) == []
