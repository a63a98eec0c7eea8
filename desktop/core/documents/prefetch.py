"""Searching the documents with the person's own words before the model answers (unless
the person leaves it to the model): the passages come into the turn as a search_documents
call and its result, so the chat shows them as a tool card and the model reads them as it
would its own call's result.

By default, because small models do not search by themselves: offered the tool, neither
development model ever called it, including the one whose reliability card says it makes
its calls, and both answered two to three times as many questions about a collection when
it was searched first (docs/experiments/search-before-answering.md)."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Sequence
from typing import Literal

from desktop.core.documents.retrieval import Retriever
from desktop.core.documents.tool import NAME, PASSAGES, passages_text, retrieval_of
from desktop.core.events import Event, ToolCallParsed, ToolResult, ToolStarted
from desktop.core.messages import Message, MessageMeta, ToolCall, new_call_id
from desktop.core.tool_spec import ToolSpec

# "auto" (and "always", which settings files may still say): first on every turn that
# offers search_documents; "tool": only when the model calls it.
DocumentSearch = Literal["auto", "tool", "always"]
DOCUMENT_SEARCHES: tuple[DocumentSearch, ...] = ("auto", "tool", "always")
# The request as a query: a pasted page is cut (the index keeps only so many words).
MAX_QUERY_CHARS = 500


def searches_first(mode: str) -> bool:
    """Whether to search before the model answers."""
    return mode != "tool"


async def search_first(
    retriever: Retriever,
    question: str,
    conversation: list[Message],
    offered: Sequence[ToolSpec],
    mode: str,
    collections: Sequence[str] | None = None,
) -> AsyncGenerator[Event, None]:
    """Where the turn offers search_documents and `mode` and the card say so: the
    passages for `question` in `collections` (None: every one), added to `conversation` as
    a call and its result (and said as their events); nothing where no passage matches."""
    if NAME not in {t.name for t in offered} or not searches_first(mode):
        return
    started = time.perf_counter()
    query = question.strip()[:MAX_QUERY_CHARS]
    if not query or not (found := await retriever.find(query, collections, PASSAGES)).hits:
        return
    call = ToolCall(new_call_id(), NAME, {"query": query})
    content = passages_text(query, found.hits)
    elapsed = (time.perf_counter() - started) * 1000
    retrieval = retrieval_of(query, collections, found)
    yield ToolCallParsed(0, call.id, call.name, call.arguments)
    yield ToolStarted(0, call.id, call.name)
    conversation.append(Message.assistant("", [call]))
    meta = MessageMeta(duration_ms=elapsed, sources=retrieval.sources())
    conversation.append(Message.tool(call.id, NAME, content, meta=meta))
    yield ToolResult(0, call.id, call.name, content, duration_ms=elapsed, retrieval=retrieval)
