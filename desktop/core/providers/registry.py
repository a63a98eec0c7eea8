"""The backends Loomchat talks to, in one list, and building a provider for one of them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from desktop.core.backend_kind import BACKEND_KINDS, BackendKind
from desktop.core.providers.base import Capabilities, Provider
from desktop.core.providers.koboldcpp import KoboldCppProvider
from desktop.core.providers.llamacpp import LlamaCppProvider
from desktop.core.providers.lmstudio import LMStudioProvider
from desktop.core.providers.ollama import DEFAULT_NUM_CTX, OllamaProvider
from desktop.core.providers.openai_compat import OpenAICompatProvider
from desktop.core.providers.transport import DIRECT, Transport
from desktop.core.providers.vllm import SglangProvider, VllmProvider


class Factory(Protocol):
    """How a backend's provider is made: its address, model, key and context size."""

    def __call__(
        self,
        url: str,
        model: str,
        *,
        name: str,
        api_key: str | None,
        num_ctx: int | None,
        transport: Transport,
    ) -> ProbingProvider: ...


def _ollama(
    url: str,
    model: str,
    *,
    name: str,
    api_key: str | None,
    num_ctx: int | None,
    transport: Transport,
) -> ProbingProvider:
    return OllamaProvider(
        url, model, num_ctx=num_ctx or DEFAULT_NUM_CTX, api_key=api_key, transport=transport
    )


def _keyed(provider: Callable[..., ProbingProvider]) -> Factory:
    """A backend whose provider takes its address, model, key and transport alone."""

    def make(
        url: str,
        model: str,
        *,
        name: str,
        api_key: str | None,
        num_ctx: int | None,
        transport: Transport,
    ) -> ProbingProvider:
        return provider(url, model, api_key=api_key, transport=transport)

    return make


def _openai(
    url: str,
    model: str,
    *,
    name: str,
    api_key: str | None,
    num_ctx: int | None,
    transport: Transport,
) -> ProbingProvider:
    return OpenAICompatProvider(url, model, name=name, api_key=api_key, transport=transport)


@dataclass(frozen=True)
class Backend:
    kind: BackendKind
    name: str
    default_url: str
    make: Factory


_BACKENDS: dict[BackendKind, tuple[str, str, Factory]] = {
    "ollama": ("Ollama", "http://127.0.0.1:11434", _ollama),
    "lmstudio": ("LM Studio", "http://127.0.0.1:1234", _keyed(LMStudioProvider)),
    "koboldcpp": ("KoboldCPP", "http://127.0.0.1:5001", _keyed(KoboldCppProvider)),
    "llamacpp": ("llama.cpp server", "http://127.0.0.1:8080", _keyed(LlamaCppProvider)),
    "openai": ("OpenAI-compatible server", "http://127.0.0.1:8080", _openai),
    "vllm": ("vLLM", "http://127.0.0.1:8000", _keyed(VllmProvider)),
    "sglang": ("SGLang", "http://127.0.0.1:30000", _keyed(SglangProvider)),
}
# In the order of BACKEND_KINDS; a kind without its entry is a KeyError at import, never a
# backend that silently becomes another.
BACKENDS: dict[str, Backend] = {kind: Backend(kind, *_BACKENDS[kind]) for kind in BACKEND_KINDS}


class ProbingProvider(Provider, Protocol):
    """A provider that can tell what its model supports and which models it has."""

    base_url: str
    model: str

    @property
    def kind(self) -> BackendKind: ...

    @property
    def capabilities(self) -> Capabilities: ...

    @capabilities.setter
    def capabilities(self, value: Capabilities) -> None: ...

    async def probe(self) -> Capabilities: ...

    async def list_models(self) -> list[str]: ...

    async def aclose(self) -> None: ...


def make_provider(
    kind: str,
    url: str | None = None,
    model: str = "",
    *,
    api_key: str | None = None,
    num_ctx: int | None = None,
    transport: Transport = DIRECT,
) -> ProbingProvider:
    backend = BACKENDS.get(kind)
    if backend is None:
        raise ValueError(f"unknown backend {kind!r}; choose one of: {', '.join(BACKENDS)}")
    url = url or backend.default_url
    return backend.make(
        url, model, name=backend.name, api_key=api_key, num_ctx=num_ctx, transport=transport
    )
