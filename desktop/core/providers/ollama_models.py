"""Ollama's own models: the installed ones (`/api/tags`), pulling one by name with
per-layer progress (`/api/pull`, NDJSON of `status`, `digest`, `total`, `completed`; an
`error` line ends it), and deleting one (`/api/delete`)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from desktop.core.providers.base import ProviderError
from desktop.core.providers.http import bounded_lines, error_message, plain_failures, wire_object
from desktop.core.providers.ollama import OllamaProvider


@dataclass(frozen=True)
class OllamaModel:
    name: str
    size: int
    family: str = ""
    parameters: str = ""  # "7.6B"
    quantisation: str = ""  # "Q4_K_M"


@dataclass
class PullProgress:
    """The pull so far: its last status, and bytes per layer (digest) summed up."""

    status: str = ""
    layers: dict[str, tuple[int, int]] = field(default_factory=dict)  # digest: (done, total)

    @property
    def completed(self) -> int:
        return sum(done for done, _ in self.layers.values())

    @property
    def total(self) -> int:
        return sum(total for _, total in self.layers.values())


async def installed(provider: OllamaProvider) -> list[OllamaModel]:
    listing = await provider.get_json("/api/tags")
    models = listing.get("models") if isinstance(listing, dict) else None
    found = []
    for entry in models if isinstance(models, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue  # a malformed entry is skipped, not fatal
        details = entry.get("details") if isinstance(entry.get("details"), dict) else {}
        assert isinstance(details, dict)
        found.append(
            OllamaModel(
                entry["name"],
                _int(entry.get("size")),
                str(details.get("family") or ""),
                str(details.get("parameter_size") or ""),
                str(details.get("quantization_level") or ""),
            )
        )
    return found


async def pull(
    provider: OllamaProvider, name: str, on_progress: Callable[[PullProgress], None] | None = None
) -> PullProgress:
    """Pull `name` into Ollama; returns the final progress (status "success")."""
    progress = PullProgress()
    url = f"{provider.base_url}/api/pull"
    async with (
        plain_failures(provider.name, provider.base_url),
        provider.client.stream("POST", url, json={"model": name, "stream": True}) as response,
    ):
        if response.status_code >= 400:
            await response.aread()
            raise ProviderError(f"Ollama could not pull {name}: {error_message(response.content)}")
        async with aclosing(bounded_lines(response, provider.label)) as lines:
            async for line in lines:
                if not line.strip():
                    continue
                event = wire_object(line, provider.label)
                if "error" in event:
                    raise ProviderError(f"Ollama could not pull {name}: {event['error']}")
                _apply(progress, event)
                if on_progress is not None:
                    on_progress(progress)
                if progress.status == "success":
                    return progress
    raise ProviderError(f"Ollama stopped pulling {name} before it finished (the stream ended).")


async def delete(provider: OllamaProvider, name: str) -> None:
    async with plain_failures(provider.name, provider.base_url):
        response = await provider.client.request(
            "DELETE", f"{provider.base_url}/api/delete", json={"model": name}
        )
    if response.status_code == 404:
        raise ProviderError(f"Ollama has no model named {name}.")
    if response.status_code >= 400:
        raise ProviderError(f"Ollama could not delete {name}: {error_message(response.content)}")


def _apply(progress: PullProgress, event: dict[str, Any]) -> None:
    progress.status = str(event.get("status") or progress.status)
    digest = event.get("digest")
    if isinstance(digest, str) and digest:
        total = _int(event.get("total"))
        done = min(_int(event.get("completed")), total) if total else 0
        progress.layers[digest] = (done, total)


def _int(value: Any) -> int:
    try:
        return max(int(value), 0)
    except (TypeError, ValueError):
        return 0
