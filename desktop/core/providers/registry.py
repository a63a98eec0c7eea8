"""The backends Loomchat talks to, in one list, and building a provider for one of them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from desktop.core.backend_kind import BACKEND_KINDS, BackendKind
from desktop.core.providers.base import Capabilities, Provider
from desktop.core.providers.koboldcpp import KoboldCppProvider
from desktop.core.providers.llamacpp import LlamaCppProvider
from desktop.core.providers.lmstudio import LMStudioProvider
from desktop.core.providers.ollama import DEFAULT_NUM_CTX, OllamaProvider
from desktop.core.providers.openai_compat import OpenAICompatProvider


@dataclass(frozen=True)
class Backend:
    kind: BackendKind
    name: str
    default_url: str


_NAMES_AND_ADDRESSES: dict[BackendKind, tuple[str, str]] = {
    "ollama": ("Ollama", "http://127.0.0.1:11434"),
    "lmstudio": ("LM Studio", "http://127.0.0.1:1234"),
    "koboldcpp": ("KoboldCPP", "http://127.0.0.1:5001"),
    "llamacpp": ("llama.cpp server", "http://127.0.0.1:8080"),
    "openai": ("OpenAI-compatible server", "http://127.0.0.1:8080"),
}
# In the order of BACKEND_KINDS; a kind without a name and address is a KeyError at import.
BACKENDS: dict[str, Backend] = {
    kind: Backend(kind, *_NAMES_AND_ADDRESSES[kind]) for kind in BACKEND_KINDS
}


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
) -> ProbingProvider:
    backend = BACKENDS.get(kind)
    if backend is None:
        raise ValueError(f"unknown backend {kind!r}; choose one of: {', '.join(BACKENDS)}")
    url = url or backend.default_url
    if kind == "ollama":
        return OllamaProvider(url, model, num_ctx=num_ctx or DEFAULT_NUM_CTX)
    if kind == "koboldcpp":
        return KoboldCppProvider(url, model, api_key=api_key)
    if kind == "lmstudio":
        return LMStudioProvider(url, model, api_key=api_key)
    if kind == "llamacpp":
        return LlamaCppProvider(url, model, api_key=api_key)
    return OpenAICompatProvider(url, model, name=backend.name, api_key=api_key)
