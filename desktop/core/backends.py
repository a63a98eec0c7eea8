"""The backends Loomchat talks to, their default addresses, and the track each runs on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from desktop.core.emulation import EmulatedTools
from desktop.core.providers.base import Capabilities, Provider, Track
from desktop.core.providers.openai_compat import OpenAICompatProvider

BackendKind = Literal["llamacpp", "lmstudio", "openai"]


@dataclass(frozen=True)
class Backend:
    kind: BackendKind
    name: str
    default_url: str


BACKENDS: dict[str, Backend] = {
    "llamacpp": Backend("llamacpp", "llama.cpp server", "http://127.0.0.1:8080"),
    "lmstudio": Backend("lmstudio", "LM Studio", "http://127.0.0.1:1234"),
    "openai": Backend("openai", "OpenAI-compatible server", "http://127.0.0.1:8080"),
}


def make_provider(
    kind: str,
    url: str | None = None,
    model: str = "",
    *,
    api_key: str | None = None,
    capabilities: Capabilities | None = None,
) -> OpenAICompatProvider:
    backend = BACKENDS.get(kind)
    if backend is None:
        raise ValueError(f"unknown backend {kind!r}; choose one of: {', '.join(BACKENDS)}")
    return OpenAICompatProvider(
        url or backend.default_url,
        model,
        name=backend.name,
        api_key=api_key,
        capabilities=capabilities,
    )


def on_track(provider: Provider, track: Track) -> tuple[Provider, Literal["native", "emulated"]]:
    """The provider to use for a track, and which track that is.

    `emulated` is the default for local models; `auto` takes native only where the
    capabilities say the model supports it; `native` forces it.
    """
    if track == "native" or (track == "auto" and provider.capabilities.native_tools):
        return provider, "native"
    return EmulatedTools(provider), "emulated"
