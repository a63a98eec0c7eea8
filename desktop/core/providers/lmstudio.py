"""LM Studio: the OpenAI wire, plus its REST API for what each model can do."""

from __future__ import annotations

from typing import Any

from desktop.core.providers.base import Capabilities, ProviderError
from desktop.core.providers.openai_compat import OpenAICompatProvider


class LMStudioProvider(OpenAICompatProvider):
    kind = "lmstudio"

    def __init__(self, base_url: str = "http://127.0.0.1:1234", model: str = "", **kwargs: Any):
        kwargs.setdefault("name", "LM Studio")
        super().__init__(base_url, model, **kwargs)

    async def probe(self) -> Capabilities:
        """`/api/v1/models` (LM Studio 0.4+), else `/api/v0/models` (0.3.6+)."""
        try:
            listing = await self.get_json("/api/v1/models")
        except ProviderError as newer_failed:
            try:
                legacy = await self.get_json("/api/v0/models")
            except ProviderError:
                raise newer_failed from None
            return self._from_v0(legacy)
        for entry in listing.get("models", []):
            if entry.get("key") == self.model or entry.get("id") == self.model:
                caps = entry.get("capabilities") or {}
                loaded = entry.get("loaded_instances") or []
                context = (loaded[0].get("config") or {}).get("context_length") if loaded else None
                return Capabilities(
                    native_tools=bool(caps.get("trained_for_tool_use")),
                    vision=bool(caps.get("vision")),
                    context_size=context or entry.get("max_context_length"),
                )
        raise ProviderError(f"{self.label} does not list the model '{self.model}'.")

    def _from_v0(self, listing: dict[str, Any]) -> Capabilities:
        for entry in listing.get("data", []):
            if entry.get("id") == self.model:
                return Capabilities(
                    native_tools="tool_use" in (entry.get("capabilities") or []),
                    vision=entry.get("type") == "vlm",
                    context_size=entry.get("loaded_context_length")
                    or entry.get("max_context_length"),
                )
        raise ProviderError(f"{self.label} does not list the model '{self.model}'.")
