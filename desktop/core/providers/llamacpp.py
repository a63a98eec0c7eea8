"""llama.cpp's `llama-server`: the OpenAI wire, plus `/props` for what the model can do."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from desktop.core.messages import Message
from desktop.core.providers.base import ASIDES, Capabilities, Features, RequestOptions
from desktop.core.providers.openai_compat import OpenAICompatProvider
from desktop.core.tool_spec import ToolSpec


class LlamaCppProvider(OpenAICompatProvider):
    kind = "llamacpp"
    # What the OpenAI-compatible server takes, and a GBNF `grammar` in the chat request; it
    # continues an answer whose start ends the messages (unless `--no-prefill-assistant`).
    features = Features(
        constrains_json=True,
        reports_token_odds=True,
        takes_grammar=True,
        caches_prompt=True,
        continues_answer=True,
    )

    def __init__(self, base_url: str = "http://127.0.0.1:8080", model: str = "", **kwargs: Any):
        kwargs.setdefault("name", "llama.cpp server")
        super().__init__(base_url, model, **kwargs)

    async def probe(self) -> Capabilities:
        props = await self.get_json("/props")
        caps = props.get("chat_template_caps") or {}
        vision = bool((props.get("modalities") or {}).get("vision"))
        if not vision:
            models = await self.get_json("/v1/models")
            for entry in models.get("data", []):
                modalities = (entry.get("architecture") or {}).get("input_modalities") or []
                vision = vision or "image" in modalities
        n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx")
        slots = props.get("total_slots")
        return Capabilities(
            native_tools=bool(caps.get("supports_tool_calls") or caps.get("supports_tools")),
            vision=vision,
            context_size=int(n_ctx) if isinstance(n_ctx, int) else None,
            slots=slots if isinstance(slots, int) and slots > 0 else 1,
        )

    def request_body(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], options: RequestOptions
    ) -> dict[str, Any]:
        body = super().request_body(messages, tools, options)
        slots = self.capabilities.slots
        if slots > 1:  # the conversation's prompt in slot 0, each aside in its own after it
            wanted = 0 if options.aside is None else ASIDES.index(options.aside) + 1
            body["id_slot"] = min(wanted, slots - 1)
        return body

    async def healthy(self) -> bool:
        """`/health` is 200 once the model is loaded (503 while it loads)."""
        try:
            response = await self.client.get(f"{self.base_url}/health", timeout=3.0)
        except Exception:
            return False
        return response.status_code == 200
