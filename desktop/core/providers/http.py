"""What every backend's HTTP shares: the client, and failures turned into plain messages."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx

from desktop.core.providers.base import ProviderError

DEFAULT_TIMEOUT = httpx.Timeout(connect=5.0, read=300.0, write=30.0, pool=5.0)
PROBE_TIMEOUT = httpx.Timeout(3.0)


def make_client(
    api_key: str | None = None, timeout: httpx.Timeout = DEFAULT_TIMEOUT
) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    # trust_env=False: no proxy from the environment; requests go only where configured.
    return httpx.AsyncClient(timeout=timeout, headers=headers, trust_env=False)


def error_message(body: bytes | str) -> str:
    """The human part of an error body, in each backend's shape:
    `{"error": {"message"}}` (OpenAI, llama.cpp), `{"error": "..."}` (Ollama, LM Studio),
    `{"detail": {"msg"}}` (KoboldCPP), or plain text."""
    text = (body.decode("utf-8", "replace") if isinstance(body, bytes) else body).strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:500] or "no details"
    if not isinstance(data, dict):
        return text[:500]
    error = data.get("error", data.get("detail", data))
    if isinstance(error, dict):
        return str(error.get("message") or error.get("msg") or error)
    return str(error)


@asynccontextmanager
async def plain_failures(name: str, base_url: str) -> AsyncIterator[None]:
    """Turn transport failures into `ProviderError`s a person can act on."""
    label = f"{name} at {base_url}"
    try:
        yield
    except httpx.ConnectError:
        raise ProviderError(f"{name} is not running at {base_url} (connection refused).") from None
    except httpx.TimeoutException as exc:
        raise ProviderError(f"{label} did not answer in time ({type(exc).__name__}).") from None
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        raise ProviderError(f"The connection to {label} broke mid-answer ({exc}).") from None
    except httpx.HTTPError as exc:
        raise ProviderError(f"{label}: {exc}") from None
