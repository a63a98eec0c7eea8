"""Asking a model what it supports, once per model, with a retry after a failure."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from desktop.core.providers.base import Capabilities, ProviderError
from desktop.core.providers.registry import ProbingProvider


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

    async def apply(self, provider: ProbingProvider) -> ProbeResult:
        """Probe (cached) and give the provider what its model supports: the one way
        every caller learns a model's capabilities before choosing its track."""
        probed = await self.capabilities(provider)
        provider.capabilities = probed.capabilities
        return probed
