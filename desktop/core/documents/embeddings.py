"""Passages and queries as vectors, from an embedding model on a server: llama-server
started with `--embeddings` (the built-in runtime's embedding model), any server with
OpenAI's `/v1/embeddings`, or Ollama's `/api/embed`.

A server's answer is untrusted: its size is capped before it is parsed, and a vector
count, length or value that does not fit the request is an `EmbeddingError` (the search
then goes on with BM25 alone), never a crash or an unbounded allocation."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import httpx
import numpy as np
import numpy.typing as npt

from desktop.core.errors import LoomchatError
from desktop.core.providers.http import error_message, make_client, wire_json

# "openai": POST /v1/embeddings (llama-server, LM Studio, vLLM...); "ollama": /api/embed.
EmbeddingWire = Literal["openai", "ollama"]
# No embedding model has more dimensions than this; a server that says so is broken.
MAX_DIMENSIONS = 8192
# A passage is cut to this before it is embedded: a small embedding model reads 512 tokens.
MAX_TEXT_CHARS = 1500
TIMEOUT = httpx.Timeout(connect=5.0, read=120.0, write=30.0, pool=5.0)

Vectors = npt.NDArray[np.float32]
_LAST = 1 << 62


class EmbeddingError(LoomchatError):
    """The embedding server could not be reached, refused, or answered what is not vectors."""


@dataclass(frozen=True)
class EmbeddingSource:
    """Where vectors come from: a server, the wire it speaks and the model it runs. `model`
    also names the vectors in the index: another model's are never mixed in."""

    base_url: str
    model: str
    wire: EmbeddingWire = "openai"

    @property
    def label(self) -> str:
        return f"{self.model} at {self.base_url}"


def request_body(source: EmbeddingSource, texts: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """The path and JSON body that ask `source` for the vectors of `texts`."""
    cut = [text[:MAX_TEXT_CHARS] for text in texts]
    if source.wire == "ollama":
        return "/api/embed", {"model": source.model, "input": cut, "truncate": True}
    return "/v1/embeddings", {"model": source.model, "input": cut, "encoding_format": "float"}


def parse_vectors(source: EmbeddingSource, reply: Any, count: int) -> Vectors:
    """The reply's vectors as a (count, dimensions) array, each of length 1 (so a dot
    product is the cosine); `EmbeddingError` for anything else."""
    rows: Any
    if source.wire == "ollama":
        rows = reply.get("embeddings") if isinstance(reply, dict) else None
    else:
        data = reply.get("data") if isinstance(reply, dict) else None
        rows = None
        if isinstance(data, list) and all(isinstance(item, dict) for item in data):
            ordered = sorted(data, key=lambda item: _index(item.get("index")))
            rows = [item.get("embedding") for item in ordered]
    if not isinstance(rows, list) or len(rows) != count:
        raise EmbeddingError(f"{source.label} did not answer one vector for each text.")
    width = len(rows[0]) if rows and isinstance(rows[0], list) else 0
    if not 0 < width <= MAX_DIMENSIONS or any(
        not isinstance(row, list) or len(row) != width for row in rows
    ):
        raise EmbeddingError(f"{source.label} answered vectors of no single, sane length.")
    try:
        vectors = np.array(rows, dtype=np.float32)
    except (TypeError, ValueError):
        raise EmbeddingError(f"{source.label} answered vectors that are not numbers.") from None
    if not np.all(np.isfinite(vectors)):
        raise EmbeddingError(f"{source.label} answered vectors with infinite values.")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: Vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return unit


def _index(value: Any) -> int:
    """A vector's place in the reply (OpenAI numbers them); one without comes last."""
    return value if isinstance(value, int) and not isinstance(value, bool) else _LAST


class Embedder:
    """Asks one embedding source for vectors, over one client kept for its life."""

    def __init__(self, source: EmbeddingSource, client: httpx.AsyncClient | None = None) -> None:
        self.source = source
        self._client = client or make_client(timeout=TIMEOUT)

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        path, body = request_body(self.source, texts)
        url = self.source.base_url.rstrip("/").removesuffix("/v1") + path
        # Floats as text: about 20 bytes each; a reply far beyond that is not vectors.
        limit = len(texts) * MAX_DIMENSIONS * 24 + 65_536
        try:
            async with self._client.stream("POST", url, json=body) as response:
                chunks, size = [], 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > limit:
                        raise EmbeddingError(f"{self.source.label} answered too much.")
                    chunks.append(chunk)
        except httpx.HTTPError as exc:
            raise EmbeddingError(f"{self.source.label} cannot be reached ({exc}).") from None
        content = b"".join(chunks)
        if response.status_code != 200:
            why = error_message(content) or f"HTTP {response.status_code}"
            raise EmbeddingError(f"{self.source.label} refused: {why}")
        try:
            reply = wire_json(content.decode("utf-8", "replace"))
        except ValueError:
            raise EmbeddingError(f"{self.source.label} answered what is not JSON.") from None
        return parse_vectors(self.source, reply, len(texts))

    async def aclose(self) -> None:
        await self._client.aclose()
