"""A session's documents: the index, its searches (BM25, and embeddings when chosen), the
search_documents tool over the collections that have passages, and the search made with
the person's own words before the model answers."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from dataclasses import replace

from desktop.core.documents.embedding_service import EmbeddingService
from desktop.core.documents.embeddings import Embedder
from desktop.core.documents.index import DocumentIndex
from desktop.core.documents.prefetch import search_first
from desktop.core.documents.retrieval import Retriever
from desktop.core.documents.tool import NAME, search_documents_tool
from desktop.core.events import Event
from desktop.core.messages import Message
from desktop.core.storage.settings import Settings
from desktop.core.tool_spec import ToolSpec
from desktop.core.tools.selection import Offer
from desktop.core.tools.toolbox import Tool


class DocumentLibrary:
    def __init__(self, index: DocumentIndex) -> None:
        self.index = index
        self.retriever = Retriever(index)
        self.embeddings = EmbeddingService()
        self.searchable: list[str] = []  # the collections with passages, as last looked

    def tool(self) -> Tool | None:
        """search_documents over the collections with passages; None while there are none.
        One quick query: asked after indexing, not per turn."""
        self.searchable = self.index.searchable()
        return search_documents_tool(self.retriever, self.searchable) if self.searchable else None

    def narrowed(self, offer: Offer, collections: Sequence[str] | None) -> Offer:
        """The turn's offer with the document search over `collections` alone (a preset's;
        None: every one), and without it where none of them has passages."""
        if collections is None or all(tool.name != NAME for tool in offer.tools):
            return offer
        allowed = [name for name in self.searchable if name in collections]
        narrow = search_documents_tool(self.retriever, allowed) if allowed else None
        tools = [narrow if tool.name == NAME else tool for tool in offer.tools]
        return replace(offer, tools=[tool for tool in tools if tool is not None])

    def searched_first(
        self,
        question: str,
        conversation: list[Message],
        offered: Sequence[ToolSpec],
        settings: Settings,
        collections: Sequence[str] | None = None,
    ) -> AsyncGenerator[Event, None]:
        """The search with the person's words before the model answers, where the settings
        say so, in `collections` (None: every one)."""
        mode = settings.document_search
        return search_first(self.retriever, question, conversation, offered, mode, collections)

    async def prepare_embeddings(
        self, settings: Settings, backend: str, url: str
    ) -> Embedder | None:
        """The settings' embedding model, searched from now on (None: BM25 alone);
        `EmbeddingError` saying what to do when it cannot be had."""
        self.retriever.embedder = None
        embedder = await self.embeddings.embedder_for(
            settings.embeddings, settings.embedding_model, backend, url
        )
        self.retriever.embedder = embedder
        return embedder

    def take(self, settings: Settings) -> None:
        """Settings that turned embeddings off take effect at once."""
        if settings.embeddings == "none":
            self.retriever.embedder = None

    async def close(self) -> None:
        await self.embeddings.close()
        self.index.close()
