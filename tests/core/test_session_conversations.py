"""Edit, regenerate, branch switch, delete, the system prompt and presets through the
session: what the next request sends follows the branch on screen and the preset."""

from __future__ import annotations

from pathlib import Path

import pytest

from desktop.core.events import Event, TurnFailed, TurnFinished
from desktop.core.messages import Message
from desktop.core.providers.base import ProviderError
from desktop.core.session import Session
from desktop.core.storage.chats import ChatStore
from desktop.core.storage.keychain import SecretStore
from desktop.core.storage.presets import Preset, PresetBook
from desktop.core.storage.settings import Settings
from tests.support.fakes import Request, ScriptedProvider, Step


def session_over(tmp_path: Path, *answers: str | Step) -> tuple[Session, ScriptedProvider, int]:
    store = ChatStore(tmp_path / "chats.db")
    session = Session(Settings(), store, SecretStore(), tools=[])
    provider = ScriptedProvider(list(answers))
    session.use_provider(provider)
    return session, provider, store.create_conversation()


async def run(turn: object) -> list[Event]:
    return [event async for event in turn]  # type: ignore[attr-defined]


def sent(request: Request) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in request.messages]


def shown(session: Session, conversation: int) -> list[str]:
    return [m.text for _, m in session.store.messages(conversation)]


async def test_regenerate_sends_the_question_again_and_keeps_the_old_answer(
    tmp_path: Path,
) -> None:
    session, provider, c = session_over(tmp_path, "A1", "A2")
    await run(session.send(c, "Q"))
    (q, _), (a1, _) = session.store.messages(c)
    events = await run(session.regenerate(c, a1))
    assert isinstance(events[-1], TurnFinished) and events[-1].text == "A2"
    assert sent(provider.requests[1]) == [("user", "Q")]  # not the old answer
    assert shown(session, c) == ["Q", "A2"]
    a2 = session.store.messages(c)[-1][0]
    assert session.store.branches(c, [a2])[a2].siblings == (a1, a2)
    assert session.question_of(c, a2) == q


async def test_an_edit_sends_the_new_question_after_what_came_before(tmp_path: Path) -> None:
    session, provider, c = session_over(tmp_path, "A1", "A2", "A2b")
    await run(session.send(c, "Q1"))
    await run(session.send(c, "Q2"))
    q2 = session.store.messages(c)[2][0]
    await run(session.edit(c, q2, "Q2, better"))
    assert sent(provider.requests[2]) == [
        ("user", "Q1"),
        ("assistant", "A1"),
        ("user", "Q2, better"),
    ]
    assert shown(session, c) == ["Q1", "A1", "Q2, better", "A2b"]


async def test_a_branch_switch_changes_what_the_next_request_sends(tmp_path: Path) -> None:
    session, provider, c = session_over(tmp_path, "A1", "A2", "after A1")
    await run(session.send(c, "Q"))
    a1 = session.store.messages(c)[1][0]
    await run(session.regenerate(c, a1))
    session.show_branch(c, a1)  # the person goes back to the first answer
    await run(session.send(c, "Go on"))
    assert sent(provider.requests[2]) == [("user", "Q"), ("assistant", "A1"), ("user", "Go on")]


async def test_a_failed_regeneration_hides_nothing(tmp_path: Path) -> None:
    def fail(_request: Request) -> str:
        raise ProviderError("the server went away")

    session, _provider, c = session_over(tmp_path, "A1", fail)  # type: ignore[arg-type]
    await run(session.send(c, "Q"))
    a1 = session.store.messages(c)[1][0]
    events = await run(session.regenerate(c, a1))
    assert isinstance(events[-1], TurnFailed), events[-1]
    assert shown(session, c) == ["Q", "A1"]


async def test_delete_takes_the_message_and_what_followed(tmp_path: Path) -> None:
    session, provider, c = session_over(tmp_path, "A1", "A2", "A3")
    await run(session.send(c, "Q1"))
    await run(session.send(c, "Q2"))
    session.delete_from(c, session.store.messages(c)[2][0])
    assert shown(session, c) == ["Q1", "A1"]
    await run(session.send(c, "Q3"))
    assert sent(provider.requests[2]) == [("user", "Q1"), ("assistant", "A1"), ("user", "Q3")]


async def test_the_system_prompt_leads_every_request_and_is_not_a_message(tmp_path: Path) -> None:
    session, provider, c = session_over(tmp_path, "Bonjour.", "Ça va.")
    session.set_system_prompt(c, "Answer in French.")
    await run(session.send(c, "Hello"))
    await run(session.send(c, "How are you?"))
    assert sent(provider.requests[1])[0] == ("system", "Answer in French.")
    assert [m.role for m in (m for _, m in session.store.messages(c))] == ["user", "assistant"] * 2
    assert session.store.title(c) == "Hello"


async def test_editing_needs_a_connection_and_then_changes_nothing(tmp_path: Path) -> None:
    store = ChatStore(tmp_path / "chats.db")
    c = store.create_conversation()
    question = store.append(c, Message.user("Q"))
    store.append(c, Message.assistant("A"))
    session = Session(Settings(), store, SecretStore(), tools=[])
    with pytest.raises(ProviderError):
        await run(session.edit(c, question, "Q2"))
    with pytest.raises(ProviderError):
        await run(session.regenerate(c, question))
    assert shown(session, c) == ["Q", "A"]


def preset_session(tmp_path: Path, *answers: str) -> tuple[Session, ScriptedProvider]:
    from desktop.core.tools.builtin import builtin_tools

    store = ChatStore(tmp_path / "chats.db")
    book = PresetBook()
    book.put(Preset("Tutor", "Answer in French.", temperature=0.2, tools=False))
    book.put(Preset("Native", "", track="native"))
    book.default = "Tutor"
    session = Session(Settings(), store, SecretStore(), tools=builtin_tools(), presets=book)
    provider = ScriptedProvider(list(answers))
    session.use_provider(provider)
    return session, provider


async def test_a_new_conversation_takes_the_default_preset(tmp_path: Path) -> None:
    session, provider = preset_session(tmp_path, "Bonjour.")
    c = session.new_conversation()
    assert session.store.system_prompt(c) == ("Answer in French.", "Tutor")
    await run(session.send(c, "Hello"))
    (request,) = provider.requests
    assert request.options.temperature == 0.2
    # Tools off: no tools offered, and the system prompt is the preset's alone.
    assert request.tools == [] and sent(request)[0] == ("system", "Answer in French.")


async def test_a_presets_track_and_the_settings_temperature(tmp_path: Path) -> None:
    session, provider = preset_session(tmp_path, "Sure.", "Again.")
    c = session.store.create_conversation()
    native = session.presets.get("Native")
    assert native is not None
    session.use_preset(c, native)
    await run(session.send(c, "What is 2+2?"))
    assert "calculator" in provider.requests[0].tools  # sent natively, not in the prompt
    assert provider.requests[0].options.temperature is None  # the settings' (none)
    session.use_preset(c, Preset("Gone"))  # a preset deleted since: the defaults
    await run(session.send(c, "And 3+3?"))
    assert provider.requests[1].tools == []  # the emulated track: tools in the prompt
    assert "calculator" in provider.requests[1].messages[0].text
