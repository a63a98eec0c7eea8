"""One turn of a session after the shown branch, and the prompt the next one starts with,
read ahead while the person types."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from typing import Protocol

from desktop.core.connection import Connection
from desktop.core.connector import Connector
from desktop.core.documents.library import DocumentLibrary
from desktop.core.documents.tool import NAME as SEARCH_DOCUMENTS
from desktop.core.events import Event, TextDelta
from desktop.core.loop import LoopSettings, run_turn
from desktop.core.messages import Message, MessageMeta, ToolCall
from desktop.core.providers.base import Provider, RequestOptions
from desktop.core.storage.chats import ChatStore, title_from
from desktop.core.storage.presets import Preset
from desktop.core.storage.settings import Settings
from desktop.core.tools.catalog import trusted
from desktop.core.tools.dedupe import Deduplicator
from desktop.core.tools.selection import Offer
from desktop.core.tools.toolbox import Approver, Tool, Toolbox
from desktop.core.tracing import TurnTrace
from desktop.core.tracks.fitting import FittedHistory
from desktop.core.warm_up import PromptWarmUp


class TurnHost(Protocol):
    """What of a session (`desktop.core.session.Session`) a turn uses."""

    backend: Connector
    settings: Settings
    store: ChatStore
    dedupe: Deduplicator
    library: DocumentLibrary | None
    traces: dict[int, list[TurnTrace]]
    warm_up: PromptWarmUp

    @property
    def connection(self) -> Connection: ...

    @property
    def context_size(self) -> int: ...

    def conversation(self, conversation_id: int) -> list[Message]: ...

    def preset_of(self, conversation_id: int) -> Preset | None: ...

    def offer(self, conversation: Sequence[Message], request: str) -> Offer: ...


def track_of(session: TurnHost, preset: Preset | None) -> tuple[Provider, str]:
    """The provider a conversation's turns run on, and its track: the connection's, or its
    preset's own."""
    backend = session.backend
    assert backend.active is not None
    if preset is not None and preset.track and preset.track != session.settings.track:
        return backend.on_track(preset.track)
    return backend.active, session.connection.track


def offer_of(
    session: TurnHost,
    conversation_id: int,
    conversation: Sequence[Message],
    request: str,
    preset: Preset | None,
) -> tuple[Offer, Sequence[str] | None]:
    """The tools offered for `request`, and the collections the document search is over
    (the conversation's, else its `preset`'s; None: every one)."""
    offer = session.offer(conversation, request)
    collections = session.store.collections(conversation_id)
    if collections is None and preset is not None:
        collections = preset.collections
    if session.library is not None:
        offer = session.library.narrowed(offer, collections)
    return offer, collections


def read_ahead(session: TurnHost, conversation_id: int) -> None:
    """Read the prompt the conversation's next turn starts with (see `PromptWarmUp`), where
    nothing has: a chat just opened, a model just connected, or one just calibrated, whose
    questions took the server's cache. Not while a calibration has the server."""
    backend = session.backend
    if backend.active is None or backend.traced is None or backend.calibrator is not None:
        return
    conversation = session.conversation(conversation_id)
    preset = session.preset_of(conversation_id)
    offered = offer_of(session, conversation_id, conversation, "", preset)[0].tools
    tools = offered if preset is None or preset.tools else []
    active = FittedHistory(track_of(session, preset)[0], session.context_size)
    session.warm_up.start(active, conversation, tools, RequestOptions())


async def session_turn(
    session: TurnHost, conversation_id: int, user: Message | None, approver: Approver | None
) -> AsyncGenerator[Event, None]:
    """A turn after the shown branch: with the person's new message `user`, or (None)
    answering the branch's last question again."""
    await session.warm_up.stop()  # the server reads this turn's requests at once
    backend = session.backend
    assert backend.active is not None and backend.traced is not None
    await backend.ensure_runtime()
    conversation = session.conversation(conversation_id)
    if user is not None:
        conversation.append(user)
        session.store.append(conversation_id, user)
        if not any(m.role == "user" for m in conversation[:-1]):
            session.store.rename(conversation_id, title_from(user.text))
    text = next((m.text for m in reversed(conversation) if m.role == "user"), "")
    stored = len(conversation)
    preset = session.preset_of(conversation_id)
    active, track = track_of(session, preset)
    trace = backend.traced.start_turn(track)
    session.traces.setdefault(conversation_id, []).append(trace)
    temperature = session.settings.temperature
    if preset is not None and preset.temperature is not None:
        temperature = preset.temperature
    options = RequestOptions(temperature=temperature)
    settings = LoopSettings(max_tool_calls=session.settings.max_tool_calls, options=options)

    async def approve(call: ToolCall, tool: Tool) -> bool:
        if trusted(session.settings, tool):
            return True
        return approver is not None and await approver(call, tool)

    offer, collections = offer_of(session, conversation_id, conversation, text, preset)
    if offer.selected:
        trace.offer = offer.to_dict()
    tools_on = preset is None or preset.tools
    tools = offer.tools if tools_on else []
    if user is not None and tools_on and session.library is not None:
        searched = session.library.searched_first(
            text, conversation, offer.tools, session.settings, collections
        )
        async for event in searched:
            trace.record(event)  # before the first request: the trace keeps it apart
            tools = [t for t in tools if t.name != SEARCH_DOCUMENTS]  # searched: not again
            yield event
    turn = run_turn(  # bounded to the model's context; each step's gate record kept
        FittedHistory(backend.traced.observe(active), session.context_size),
        Toolbox(tools),
        conversation,
        settings=settings,
        dedupe=session.dedupe,
        approver=approve,
    )
    # Text shown but not yet a message: kept if the turn stops mid-step (it was seen).
    partial = ""
    try:
        async with aclosing(turn) as events:
            async for event in events:
                trace.record(event)
                if len(conversation) > stored:
                    for message in conversation[stored:]:
                        session.store.append(conversation_id, message)
                    stored, partial = len(conversation), ""
                if isinstance(event, TextDelta):
                    partial += event.text
                yield event
        if backend.calibrator is None:  # its requests would take the slots read ahead
            ahead = FittedHistory(active, session.context_size)  # untraced: not this turn's
            session.warm_up.start(ahead, conversation, offer.tools if tools_on else [], options)
    finally:
        if partial.strip():
            cut = Message.assistant(partial)
            cut.meta = MessageMeta(stopped=True)
            conversation.append(cut)
            session.store.append(conversation_id, cut)
