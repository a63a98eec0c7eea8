"""The session's connection messages, as a person reads them on the start screen."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from desktop.core import session as session_module
from desktop.core.secrets import SecretStore
from desktop.core.session import Session
from desktop.core.settings import Settings
from desktop.core.store import ChatStore


@pytest.mark.parametrize(
    ("bundled", "advice"),
    [(True, "or use the built-in model."), (False, "or choose a model file.")],
)
async def test_with_no_server_the_advice_fits_what_is_installed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, bundled: bool, advice: str
) -> None:
    """The packaged app has no bundled model: it must not point the user to it."""

    async def nothing_running(*_: Any, **__: Any) -> list[Any]:
        return []

    monkeypatch.setattr(session_module, "discover", nothing_running)
    monkeypatch.setattr(session_module, "bundled_model_available", lambda: bundled)
    store = ChatStore(tmp_path / "chats.db")
    session = Session(Settings(backend="auto"), store, SecretStore(), tools=[])
    connection = await session.connect()
    store.close()
    assert not connection.ok
    assert connection.message.startswith("No model server is running.")
    assert connection.message.endswith(advice)


# --- the built-in server, killed mid-conversation ------------------------------------------


async def answer(session: Session, conversation: int, text: str) -> list[Any]:
    return [event async for event in session.send(conversation, text)]


@pytest.mark.server
async def test_a_killed_built_in_server_is_back_for_the_next_message(tmp_path: Path) -> None:
    """The app never started the supervisor: a crashed built-in server stayed dead."""
    from tests.conftest import _binary_and_model

    binary, model = _binary_and_model()
    settings = Settings(backend="builtin", runtime_model=str(model), temperature=0)
    store = ChatStore(tmp_path / "chats.db")
    session = Session(settings, store, SecretStore(), tools=[], runtime_log=tmp_path / "s.log")
    connection = await session.connect()
    assert connection.ok, connection.message
    assert session.runtime is not None and session.runtime.process is not None
    session.runtime.binary = binary
    conversation = store.create_conversation()
    try:
        first = await answer(session, conversation, "Say hi.")
        assert first[-1].kind == "turn_finished"
        killed = session.runtime.process.pid
        os.kill(killed, signal.SIGKILL)  # mid-conversation, between two messages
        second = await answer(session, conversation, "Say hi again.")
        assert second[-1].kind == "turn_finished", second[-1]
        assert session.runtime.restarts == 1 and session.runtime.process.pid != killed
        # The supervisor restarts it by itself too, with no message waiting.
        os.kill(session.runtime.process.pid, signal.SIGKILL)
        for _ in range(600):
            await asyncio.sleep(0.1)
            if session.runtime.restarts == 2 and session.runtime.running:
                break
        assert session.runtime.restarts == 2
        third = await answer(session, conversation, "And once more.")
        assert third[-1].kind == "turn_finished", third[-1]
    finally:
        await session.close()
        store.close()
    assert not session.runtime.running


async def test_close_closes_the_client_and_is_safe_twice(tmp_path: Path) -> None:
    from tests.core.test_cli import PATH, content
    from tests.replay_server import Canned, ReplayServer

    async with ReplayServer() as server:
        server.route("GET", "/v1/models", Canned.json({"object": "list",
                                                       "data": [{"id": "m", "object": "model"}]}))  # fmt: skip
        server.route("POST", PATH, Canned(pieces=content("Hi.")))
        store = ChatStore(tmp_path / "chats.db")
        settings = Settings(backend="llamacpp", url=server.url)
        session = Session(settings, store, SecretStore(), tools=[])
        assert (await session.connect()).ok
        provider = session._provider
        assert provider is not None and not provider.client.is_closed
        await session.close()
        await session.close()
        assert provider.client.is_closed
        store.close()
