"""Searching the documents with the person's own words before the model answers, for a
model that calls tools unreliably (or when the person asks for it every turn): the
passages come into the turn as a search_documents call and its result, so the chat shows
them as a tool card and the model reads them as it would its own call's result."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Sequence
from typing import Literal, Protocol

from desktop.core.documents.retrieval import Retriever
from desktop.core.documents.tool import NAME, PASSAGES, passages_text, retrieval_of
from desktop.core.events import Event, ToolCallParsed, ToolResult, ToolStarted
from desktop.core.messages import Message, MessageMeta, ToolCall, new_call_id
from desktop.core.tool_spec import ToolSpec

# "auto": first when the model's card says it misses calls (or it has none yet); "tool":
# only when the model calls search_documents; "always": first on every turn.
DocumentSearch = Literal["auto", "tool", "always"]
DOCUMENT_SEARCHES: tuple[DocumentSearch, ...] = ("auto", "tool", "always")
# The request as a query: a pasted page is cut (the index keeps only so many words).
MAX_QUERY_CHARS = 500


class Card(Protocol):
    """What the model's reliability card says of its calls (calibration.Calibration)."""

    @property
    def misses_calls(self) -> bool: ...


def searches_first(mode: str, card: Card | None) -> bool:
    """Whether to search before the model answers (`card`: None until calibrated)."""
    return mode == "always" or (mode == "auto" and (card is None or card.misses_calls))


async def search_first(
    retriever: Retriever,
    question: str,
    conversation: list[Message],
    offered: Sequence[ToolSpec],
    mode: str,
    card: Card | None,
    collections: Sequence[str] | None = None,
) -> AsyncGenerator[Event, None]:
    """Where the turn offers search_documents and `mode` and the card say so: the
    passages for `question` in `collections` (None: every one), added to `conversation` as
    a call and its result (and said as their events); nothing where no passage matches."""
    if NAME not in {t.name for t in offered} or not searches_first(mode, card):
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
