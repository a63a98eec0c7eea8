"""The embedding model the settings choose, ready to use: none (BM25 alone), an embedding
GGUF that Loomchat runs in its own llama-server, or a model on the connected server
(Ollama's `/api/embed`, or OpenAI's `/v1/embeddings` on the others)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from desktop.core.documents.embeddings import (
    Embedder,
    EmbeddingError,
    EmbeddingSource,
    EmbeddingWire,
)
from desktop.core.runtime import LlamaServer, RuntimeSetupError, embedding_server

# "none": BM25 alone; "runtime": the GGUF `embedding_model` run by Loomchat; "server": the
# model named `embedding_model` on the backend the chat is connected to.
EmbeddingsChoice = Literal["none", "runtime", "server"]
EMBEDDINGS_CHOICES: tuple[EmbeddingsChoice, ...] = ("none", "runtime", "server")


def vectors_model(choice: str, model: str) -> str:
    """The name the index keeps the chosen model's vectors under ("" for none): a file's
    stem, or the server's model name."""
    if choice == "runtime":
        return Path(model).stem
    return model.strip() if choice == "server" else ""


class EmbeddingService:
    """One embedder at a time, made again when the choice changes; the embedding server
    it started, if any, stops with it."""

    def __init__(self) -> None:
        self.embedder: Embedder | None = None
        self._server: LlamaServer | None = None
        self._chosen: tuple[str, ...] = ("none",)

    async def embedder_for(
        self, choice: str, model: str, backend: str, url: str
    ) -> Embedder | None:
        """The embedder for this choice (`backend` and `url`: the chat's connection), or
        None for "none"; `EmbeddingError` with what to do when it cannot be had."""
        chosen = (choice, model, backend, url) if choice != "none" else ("none",)
        if chosen == self._chosen and (self._server is None or self._server.running):
            return self.embedder
        await self.close()
        if choice == "runtime":
            self.embedder = await self._started(Path(model))
        elif choice == "server":
            if not model.strip():
                raise EmbeddingError("Name the server's embedding model in Settings → Tools.")
            if not url:
                raise EmbeddingError("Connect to a model server first: it makes the vectors.")
            wire: EmbeddingWire = "ollama" if backend == "ollama" else "openai"
            self.embedder = Embedder(EmbeddingSource(url, vectors_model(choice, model), wire))
        self._chosen = chosen
        return self.embedder

    async def _started(self, model: Path) -> Embedder:
        if not model.is_file():
            raise EmbeddingError(
                f"The embedding model {model} is not there: choose one in Settings → Tools, "
                "or download one in File → Models…"
            )
        server = embedding_server(model)
        try:
            await server.start()
        except RuntimeSetupError as exc:
            raise EmbeddingError(f"The embedding model could not be started: {exc}") from None
        self._server = server
        return Embedder(EmbeddingSource(server.base_url, vectors_model("runtime", str(model))))

    async def close(self) -> None:
        if self.embedder is not None:
            await self.embedder.aclose()
        if self._server is not None:
            self._server.stop()
        self.embedder, self._server, self._chosen = None, None, ("none",)
