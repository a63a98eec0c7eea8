"""Finding which backends run on this machine, by what only each of them says."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import httpx

from desktop.core.backend_kind import BackendKind
from desktop.core.providers.base import ProviderError
from desktop.core.providers.http import PROBE_TIMEOUT, wire_json
from desktop.core.providers.registry import BACKENDS, make_provider


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
