"""The controller alone, with the scripted provider and no window: it owns the running
turn (send, stop, a new message during a turn, shutdown) and passes every event on as it
is, through one signal."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from desktop.core.events import TextDelta, ToolCallParsed, ToolResult, TurnFailed, TurnFinished
from desktop.core.session import Session
from desktop.core.storage.chats import ChatStore
from desktop.core.storage.keychain import SecretStore
from desktop.core.storage.settings import Settings
from desktop.core.tools.toolbox import Tool
from desktop.ui.controller import ApprovalRequest, ChatController
from tests.support.fakes import Script, ScriptedProvider, Step

CALL = '{"name": "delete_note", "arguments": {"title": "old"}}'


async def delete_note(arguments: dict[str, Any]) -> str:
    return f"deleted {arguments['title']}"


DELETE = Tool(
    "delete_note",
    "Deletes a note.",
    {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
    delete_note,
    needs_approval=True,
)


@pytest.fixture
def controller(qloop, tmp_path: Path):  # type: ignore[no-untyped-def]
    store = ChatStore(tmp_path / "chats.db")
    session = Session(Settings(), store, SecretStore(), tools=[DELETE])
    made = ChatController(session)
    made.calibrate_on_first_use = False
    yield made
    store.close()


class Recorder:
    """What the controller said, in order."""

    def __init__(self, controller: ChatController) -> None:
        self.events: list[Any] = []
        self.busy: list[bool] = []
        self.stopped = 0
        self.approvals: list[ApprovalRequest] = []
        controller.event_received.connect(self.events.append)
        controller.busy_changed.connect(self.busy.append)
        controller.turn_stopped.connect(self._stopped)
        controller.approval_requested.connect(self.approvals.append)

    def _stopped(self) -> None:
        self.stopped += 1

    def ends(self) -> list[Any]:
        return [e for e in self.events if isinstance(e, TurnFinished | TurnFailed)]


def connect(controller: ChatController, script: list[Script]) -> ScriptedProvider:
    provider = ScriptedProvider(script)
    controller.session.use_provider(provider)
    return provider


def test_send_passes_the_turns_events_on_as_they_are(controller, qtbot) -> None:  # type: ignore[no-untyped-def]
    recorder = Recorder(controller)
    connect(controller, [Step(chunks=["Hel", "lo."])])
    conversation = controller.session.store.create_conversation()
    controller.send(conversation, "Hi")
    qtbot.waitUntil(lambda: recorder.busy == [True, False], timeout=5000)
    assert [e.text for e in recorder.events if isinstance(e, TextDelta)] == ["Hel", "lo."]
    assert recorder.ends() == [TurnFinished(0, "Hello.")]
    assert not controller.busy


def test_stop_ends_the_turn_and_says_so(controller, qtbot) -> None:  # type: ignore[no-untyped-def]
    recorder = Recorder(controller)
    provider = connect(controller, [Step(chunks=["Thinking"], hang=True)])
    controller.send(controller.session.store.create_conversation(), "Hi")
    qtbot.waitUntil(lambda: any(isinstance(e, TextDelta) for e in recorder.events), timeout=5000)
    controller.stop()
    qtbot.waitUntil(lambda: not controller.busy, timeout=5000)
    assert recorder.stopped == 1 and recorder.ends() == []
    assert provider.cancelled  # the backend's stream was really closed


def test_a_new_message_stops_the_running_turn_first(controller, qtbot) -> None:  # type: ignore[no-untyped-def]
    recorder = Recorder(controller)
    connect(controller, [Step(chunks=["Slow"], hang=True), "Second answer."])
    conversation = controller.session.store.create_conversation()
    controller.send(conversation, "First")
    qtbot.waitUntil(lambda: any(isinstance(e, TextDelta) for e in recorder.events), timeout=5000)
    controller.send(conversation, "Second")
    qtbot.waitUntil(lambda: recorder.ends() != [], timeout=5000)
    assert recorder.stopped == 1
    assert recorder.ends() == [TurnFinished(0, "Second answer.")]


def test_shutdown_waits_until_nothing_runs(controller, qtbot) -> None:  # type: ignore[no-untyped-def]
    recorder = Recorder(controller)
    provider = connect(controller, [Step(chunks=["..."], hang=True)])
    controller.send(controller.session.store.create_conversation(), "Hi")
    qtbot.waitUntil(lambda: any(isinstance(e, TextDelta) for e in recorder.events), timeout=5000)
    assert controller.pending
    shutdown = asyncio.ensure_future(controller.shutdown())
    qtbot.waitUntil(shutdown.done, timeout=5000)
    assert shutdown.exception() is None
    assert not controller.pending and provider.cancelled


@pytest.mark.parametrize(("allowed", "result"), [(True, "deleted old"), (False, None)])
def test_a_call_that_needs_approval_waits_for_the_answer(  # type: ignore[no-untyped-def]
    controller, qtbot, allowed: bool, result: str | None
) -> None:
    recorder = Recorder(controller)
    connect(controller, [CALL, "Done."])
    controller.send(controller.session.store.create_conversation(), "Delete the old note")
    qtbot.waitUntil(lambda: recorder.approvals != [], timeout=5000)
    request = recorder.approvals[0]
    assert request.tool.name == "delete_note" and request.call.arguments == {"title": "old"}
    assert controller.busy  # the turn waits on the person
    request.answer(allowed)
    qtbot.waitUntil(lambda: recorder.ends() != [], timeout=5000)
    calls = [e for e in recorder.events if isinstance(e, ToolCallParsed)]
    results = [e.content for e in recorder.events if isinstance(e, ToolResult)]
    assert [c.name for c in calls] == ["delete_note"]
    assert results == ([result] if result else [])
    assert recorder.ends() == [TurnFinished(1, "Done.")]


def test_stopping_during_an_approval_cancels_the_question(controller, qtbot) -> None:  # type: ignore[no-untyped-def]
    recorder = Recorder(controller)
    connect(controller, [CALL, "Done."])
    controller.send(controller.session.store.create_conversation(), "Delete the old note")
    qtbot.waitUntil(lambda: recorder.approvals != [], timeout=5000)
    controller.stop()
    qtbot.waitUntil(lambda: not controller.busy, timeout=5000)
    assert recorder.approvals[0].future.cancelled()
    assert recorder.stopped == 1


def test_a_send_while_not_connected_fails_with_a_message(controller, qtbot) -> None:  # type: ignore[no-untyped-def]
    recorder = Recorder(controller)
    controller.send(controller.session.store.create_conversation(), "Hi")
    qtbot.waitUntil(lambda: recorder.ends() != [], timeout=5000)
    (failed,) = recorder.ends()
    assert isinstance(failed, TurnFailed) and "Not connected" in failed.message


def test_a_new_connection_gives_up_the_one_still_being_made(  # type: ignore[no-untyped-def]
    qtbot, qloop, tmp_path: Path
) -> None:
    """Two reconnects in a row (settings applied twice, a retry pressed): the first,
    still waiting on a server that does not answer, is given up, so that only the newest
    settings are connected to (and only one built-in server could be started)."""
    from desktop.core.connection import Connection
    from tests.support.replay_server import Canned, ReplayServer

    slow, quick = ReplayServer(), ReplayServer()
    opened = asyncio.ensure_future(asyncio.gather(slow.__aenter__(), quick.__aenter__()))
    qtbot.waitUntil(opened.done, timeout=5000)
    slow.route("GET", "/v1/models", Canned(pieces=[], hang=True))
    quick.route("GET", "/v1/models", Canned.json({"data": [{"id": "m"}]}))
    store = ChatStore(tmp_path / "chats.db")
    session = Session(Settings(backend="llamacpp", url=slow.url), store, SecretStore(), tools=[])
    controller = ChatController(session)
    seen: list[Connection] = []
    controller.connection_changed.connect(seen.append)
    controller.reconnect()
    qtbot.waitUntil(lambda: bool(slow.requests), timeout=5000)
    session.settings = Settings(backend="llamacpp", url=quick.url)
    controller.reconnect()
    qtbot.waitUntil(lambda: not controller.pending, timeout=10000)
    closed = asyncio.ensure_future(
        asyncio.gather(session.close(), slow.__aexit__(), quick.__aexit__())
    )
    qtbot.waitUntil(closed.done, timeout=10000)
    store.close()
    finished = [c for c in seen if c.message != "Connecting…"]
    assert len(finished) == 1 and finished[0].ok and finished[0].url == quick.url
