"""A session on the built-in runtime with the real llama-server."""

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from desktop.core.models.library import DEFAULT_TEMPERATURE
from desktop.core.session import Session
from desktop.core.storage.chats import ChatStore
from desktop.core.storage.keychain import SecretStore
from desktop.core.storage.settings import Settings


async def answer(session: Session, conversation: int, text: str) -> list[Any]:
    return [event async for event in session.send(conversation, text)]


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
    # The model file names no temperature: the server starts at the app's default.
    assert session.runtime.temperature == DEFAULT_TEMPERATURE
    async with httpx.AsyncClient(timeout=30) as client:
        props = (await client.get(f"{session.runtime.base_url}/props")).json()
    assert props["default_generation_settings"]["params"]["temperature"] == pytest.approx(
        DEFAULT_TEMPERATURE
    )
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


async def test_after_the_warm_up_the_next_turn_reads_only_its_request(
    llama_server: Any, tmp_path: Path
) -> None:
    """The ended turn goes into the tool prompt's transcript, which the server would read
    again before the next answer; read ahead, only the new request is left to read."""
    from desktop.core.tools.builtin.calculator import CALCULATOR

    settings = Settings(backend="llamacpp", url=llama_server.base_url, temperature=0)
    store = ChatStore(tmp_path / "chats.db")
    session = Session(settings, store, SecretStore(), tools=[CALCULATOR])
    assert (await session.connect()).ok
    conversation = store.create_conversation()
    try:
        first = await answer(session, conversation, "Write two sentences about the sea.")
        assert first[-1].kind == "turn_finished" and len(first[-1].text) > 40
        await session.warm_up.settled()
        second = await answer(session, conversation, "Thank you, friend.")
        assert second[-1].kind == "turn_finished"
    finally:
        await session.close()
        store.close()
    step = session.traces[conversation][-1].steps[0]
    read = [s.usage for s in [step, *step.phases] if s.usage is not None]
    assert read, "the server reported no usage"
    for usage in read:  # the request and its template's few tokens, nothing before them
        assert usage["prompt_tokens"] - usage.get("cached_tokens", 0) <= 24, usage
