"""vLLM and SGLang: GPU servers that speak the OpenAI wire, with guided decoding
(`response_format` with a JSON Schema, the OpenAI way both document) and OpenAI-style
`logprobs`, so the constrained track and its call gate work there as on llama.cpp. Their
`/v1/models` says each model's context (`max_model_len`). Whether a model may call tools
natively depends on how the server was started (`--enable-auto-tool-choice`), which no
endpoint says: the emulated track is used until a calibration chooses otherwise."""

from __future__ import annotations

from typing import Any

from desktop.core.backend_kind import BackendKind
from desktop.core.providers.base import Capabilities, ProviderError
from desktop.core.providers.openai_compat import OpenAICompatProvider


class VllmProvider(OpenAICompatProvider):
    kind: BackendKind = "vllm"

    def __init__(self, base_url: str = "http://127.0.0.1:8000", model: str = "", **kwargs: Any):
        kwargs.setdefault("name", "vLLM")
        super().__init__(base_url, model, **kwargs)

    async def probe(self) -> Capabilities:
        listing = await self.get_json("/v1/models")
        entries = [e for e in listing.get("data", []) if isinstance(e, dict)]
        for entry in entries:
            if entry.get("id") == self.model or (not self.model and entry is entries[0]):
                context = entry.get("max_model_len")
                valid = isinstance(context, int) and not isinstance(context, bool) and context > 0
                return Capabilities(context_size=context if valid else None)
        raise ProviderError(f"{self.label} does not serve the model '{self.model}'.")


class SglangProvider(VllmProvider):
    kind: BackendKind = "sglang"

    def __init__(self, base_url: str = "http://127.0.0.1:30000", model: str = "", **kwargs: Any):
        kwargs.setdefault("name", "SGLang")
        super().__init__(base_url, model, **kwargs)
