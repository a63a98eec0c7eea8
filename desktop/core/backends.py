"""The backends Loomchat talks to: building their providers, probing what a model can do
(once, cached), choosing the track, and finding which backend runs on this machine."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import httpx

from desktop.core.calibration import Calibration
from desktop.core.emulation import ConstrainedTools, NativeTools
from desktop.core.providers.base import Capabilities, Provider, ProviderError, Track
from desktop.core.providers.http import PROBE_TIMEOUT, wire_json
from desktop.core.providers.koboldcpp import KoboldCppProvider
from desktop.core.providers.llamacpp import LlamaCppProvider
from desktop.core.providers.lmstudio import LMStudioProvider
from desktop.core.providers.ollama import DEFAULT_NUM_CTX, OllamaProvider
from desktop.core.providers.openai_compat import OpenAICompatProvider

BackendKind = Literal["ollama", "lmstudio", "koboldcpp", "llamacpp", "openai"]


@dataclass(frozen=True)
class Backend:
    kind: BackendKind
    name: str
    default_url: str


BACKENDS: dict[str, Backend] = {
    "ollama": Backend("ollama", "Ollama", "http://127.0.0.1:11434"),
    "lmstudio": Backend("lmstudio", "LM Studio", "http://127.0.0.1:1234"),
    "koboldcpp": Backend("koboldcpp", "KoboldCPP", "http://127.0.0.1:5001"),
    "llamacpp": Backend("llamacpp", "llama.cpp server", "http://127.0.0.1:8080"),
    "openai": Backend("openai", "OpenAI-compatible server", "http://127.0.0.1:8080"),
}


class ProbingProvider(Provider, Protocol):
    """A provider that can tell what its model supports and which models it has."""

    base_url: str
    model: str

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


@dataclass
class ProbeResult:
    capabilities: Capabilities
    error: str | None = None  # why the probe failed; then the capabilities are the safe default


@dataclass
class CapabilityCache:
    """Probe each model once. A failed probe falls back to the safe default (emulated tools,
    no vision) and is tried again only after `retry_after_s`, so a server that was still
    starting is not judged forever, nor probed on every turn."""

    retry_after_s: float = 60.0
    clock: Callable[[], float] = time.monotonic
    _entries: dict[tuple[str, str, str], tuple[ProbeResult, float]] = field(default_factory=dict)

    async def capabilities(self, provider: ProbingProvider) -> ProbeResult:
        key = (type(provider).__name__, provider.base_url, provider.model)
        cached = self._entries.get(key)
        if cached and (cached[0].error is None or self.clock() < cached[1]):
            return cached[0]
        try:
            result = ProbeResult(await provider.probe())
        except (ProviderError, httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            result = ProbeResult(Capabilities(), f"Could not ask what the model supports: {exc}")
        self._entries[key] = (result, self.clock() + self.retry_after_s)
        return result


async def prepare(
    provider: ProbingProvider, track: Track, cache: CapabilityCache
) -> tuple[Provider, Literal["native", "emulated"], ProbeResult]:
    """Probe (cached), apply the capabilities, and put the provider on its track."""
    probed = await cache.capabilities(provider)
    provider.capabilities = probed.capabilities
    active, chosen = on_track(provider, track)
    return active, chosen, probed


def on_track(
    provider: Provider, track: Track, calibration: Calibration | None = None
) -> tuple[Provider, Literal["native", "emulated"]]:
    """The provider to use for a track, and which track that is.

    `emulated` is the default for local models; `auto` takes the track the model's
    calibration chose, else native only where the capabilities say the model supports it;
    `native` forces it. The emulated track's call gate uses the calibrated bar.
    """
    if calibration is not None and track == "auto":
        native = calibration.track == "native"
    else:
        native = track == "native" or (track == "auto" and provider.capabilities.native_tools)
    if native:
        return NativeTools(provider), "native"
    # Two-phase constrained calls where the backend can constrain its output; the plain
    # emulated track (tolerant parser) elsewhere.
    if calibration is None:
        return ConstrainedTools(provider), "emulated"
    return ConstrainedTools(
        provider, min_call_odds=calibration.bar, bar_source=calibration.source
    ), "emulated"


# --- discovery --------------------------------------------------------------------------


@dataclass(frozen=True)
class Found:
    kind: BackendKind
    url: str
    models: list[str]


async def identify(client: httpx.AsyncClient, url: str) -> BackendKind | None:
    """Which backend answers at `url`, by what only it says.

    KoboldCPP first: it also answers Ollama's `/api/tags` and `/api/version`.
    """

    async def get(path: str) -> Any:
        try:
            response = await client.get(f"{url}{path}")
        except httpx.HTTPError:
            return None
        if response.status_code != 200:
            return None
        try:
            return wire_json(response.text)
        except ValueError:
            return None

    version = await get("/api/extra/version")
    if isinstance(version, dict) and str(version.get("result", "")).lower() == "koboldcpp":
        return "koboldcpp"
    props = await get("/props")
    if isinstance(props, dict) and "default_generation_settings" in props:
        return "llamacpp"
    lmstudio = await get("/api/v1/models") or await get("/api/v0/models")
    if isinstance(lmstudio, dict) and ("models" in lmstudio or "data" in lmstudio):
        return "lmstudio"
    ollama = await get("/api/version")
    if isinstance(ollama, dict) and "version" in ollama and await get("/api/tags") is not None:
        return "ollama"
    if await get("/v1/models") is not None:
        return "openai"
    return None


async def discover(
    urls: list[str] | None = None, timeout: httpx.Timeout = PROBE_TIMEOUT
) -> list[Found]:
    """The backends running at the usual addresses (or `urls`), with their models."""
    candidates = urls or sorted(
        {b.default_url for b in BACKENDS.values()} | {"http://127.0.0.1:9931"}
    )
    async with httpx.AsyncClient(timeout=timeout, trust_env=False) as client:
        kinds = await asyncio.gather(*(identify(client, url) for url in candidates))
    found = []
    for url, kind in zip(candidates, kinds, strict=True):
        if kind is None:
            continue
        provider = make_provider(kind, url)
        try:
            models = await provider.list_models()
        except (ProviderError, httpx.HTTPError, ValueError, KeyError):
            models = []
        finally:
            await provider.aclose()
        found.append(Found(kind, url, models))
    return found
