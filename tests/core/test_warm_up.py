"""The next turn's prompt read ahead after a turn: what is sent, that a new turn stops it,
and that nothing of it reaches the person or the turn's trace."""

from __future__ import annotations

import asyncio
from contextlib import suppress
from pathlib import Path

from desktop.core.events import Event, Notice, TurnFailed, TurnFinished, TurnWarning
from desktop.core.session import Session
from desktop.core.storage.chats import ChatStore
from desktop.core.storage.keychain import SecretStore
from desktop.core.storage.settings import Settings
from tests.support.fakes import Request, ScriptedProvider, Step


def session_over(
    tmp_path: Path, *answers: str | Step, caches_prompt: bool = True
) -> tuple[Session, ScriptedProvider, int]:
    store = ChatStore(tmp_path / "chats.db")
    session = Session(Settings(), store, SecretStore(), tools=[])
    provider = ScriptedProvider(list(answers), caches_prompt=caches_prompt)
    session.use_provider(provider)
    return session, provider, store.create_conversation()


async def run(session: Session, conversation: int, text: str) -> list[Event]:
    return [event async for event in session.send(conversation, text)]


def sent(request: Request) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in request.messages]


async def until_asked(provider: ScriptedProvider, count: int) -> None:
    for _ in range(100):
        if len(provider.requests) >= count:
            return
        await asyncio.sleep(0)
    raise AssertionError(f"only {len(provider.requests)} requests came")


async def test_after_a_turn_the_conversation_is_read_ahead_for_one_token(
    tmp_path: Path,
) -> None:
    session, provider, c = session_over(tmp_path, "Rome.", "x", "Paris.")
    await run(session, c, "The capital of Italy?")
    await session.warm_up.settled()
    warm = provider.requests[1]
    assert warm.options.warm_up and warm.options.max_tokens == 1
    assert warm.options.temperature == 0  # nothing sampled: one token nobody reads
    assert sent(warm) == [("user", "The capital of Italy?"), ("assistant", "Rome."), ("user", "")]
    await run(session, c, "And of France?")
    following = provider.requests[2]
    # The next turn's prompt is the one read ahead up to its new request.
    assert sent(following)[:-1] == sent(warm)[:-1]
    assert sent(following)[-1] == ("user", "And of France?")
    assert not following.options.warm_up
    await session.close()


async def test_a_new_turn_stops_the_warm_up_under_way(tmp_path: Path) -> None:
    session, provider, c = session_over(tmp_path, "Rome.", Step(hang=True), "Paris.")
    await run(session, c, "The capital of Italy?")
    await until_asked(provider, 2)  # the warm-up is being read
    events = await run(session, c, "And of France?")
    assert provider.cancelled
    assert isinstance(events[-1], TurnFinished) and events[-1].text == "Paris."
    await session.close()


async def test_a_failed_warm_up_tells_the_person_nothing(tmp_path: Path) -> None:
    session, provider, c = session_over(tmp_path, "Rome.", Step(error="the server is gone"),
                                        "Paris.")  # fmt: skip
    await run(session, c, "The capital of Italy?")
    await session.warm_up.settled()
    events = await run(session, c, "And of France?")
    assert provider.requests[1].options.warm_up  # it was asked, and failed
    assert not [e for e in events if isinstance(e, (Notice, TurnWarning, TurnFailed))]
    assert isinstance(events[-1], TurnFinished) and events[-1].text == "Paris."
    await session.close()


async def test_a_server_that_keeps_no_prompt_is_not_asked_ahead(tmp_path: Path) -> None:
    session, provider, c = session_over(tmp_path, "Rome.", "Paris.", caches_prompt=False)
    await run(session, c, "The capital of Italy?")
    await session.warm_up.settled()
    assert len(provider.requests) == 1
    await run(session, c, "And of France?")
    assert len(provider.requests) == 2
    await session.close()


async def test_the_warm_up_is_no_step_of_the_turns_trace(tmp_path: Path) -> None:
    session, provider, c = session_over(tmp_path, "Rome.", "x")
    await run(session, c, "The capital of Italy?")
    await session.warm_up.settled()
    assert len(provider.requests) == 2
    (trace,) = session.traces[c]
    assert len(trace.steps) == 1 and not trace.steps[0].phases
    assert trace.steps[0].raw_output == "Rome."
    await session.close()


async def test_closing_the_session_stops_the_warm_up(tmp_path: Path) -> None:
    session, provider, c = session_over(tmp_path, "Rome.", Step(hang=True))
    await run(session, c, "The capital of Italy?")
    await until_asked(provider, 2)
    await asyncio.wait_for(session.close(), 5)
    assert provider.cancelled


async def test_a_stopped_turn_reads_nothing_ahead(tmp_path: Path) -> None:
    """The person stopped it: what comes next is theirs to say, and the server is free."""
    session, provider, c = session_over(tmp_path, Step(chunks=["Ro", "me"]), "x")
    events = session.send(c, "The capital of Italy?")
    async for _ in events:
        break
    await events.aclose()
    await session.warm_up.settled()
    assert len(provider.requests) == 1
    await session.close()


async def test_a_calibration_stops_the_warm_up_first(tmp_path: Path) -> None:
    """Its requests would wait behind the warm-up's in the server's slots."""
    session, provider, c = session_over(tmp_path, "Rome.", Step(hang=True))
    await run(session, c, "The capital of Italy?")
    await until_asked(provider, 2)
    calibrating = asyncio.create_task(session.calibrate())
    for _ in range(100):
        if provider.cancelled:
            break
        await asyncio.sleep(0)
    calibrating.cancel()
    with suppress(BaseException):  # what the calibration made of the empty script
        await calibrating
    assert provider.cancelled
    await session.close()


async def test_nothing_is_read_ahead_while_a_calibration_goes_on(tmp_path: Path) -> None:
    """Paused for the turn, it goes on after it, and its requests take the slots."""
    from desktop.core.calibration.calibrator import Calibrator

    session, provider, c = session_over(tmp_path, "Rome.", "x")
    session.backend.calibrator = Calibrator(provider, [], "scripted model")
    await run(session, c, "The capital of Italy?")
    await session.warm_up.settled()
    assert len(provider.requests) == 1
    await session.close()


# --- a chat's first prompt, read ahead where no turn has ----------------------------------


async def test_a_chat_opened_is_read_ahead_before_its_first_message(tmp_path: Path) -> None:
    """A model just connected or calibrated has nothing of the chat's prompt in its cache:
    read while the person types, the first message waits for its own words alone. The
    tools the turn offers are in it (on the emulated track, its tool prompt)."""
    from tests.core.tracks.samples import CLOCK

    store = ChatStore(tmp_path / "chats.db")
    session = Session(Settings(), store, SecretStore(), tools=[CLOCK])
    provider = ScriptedProvider(["x", "It is noon."], caches_prompt=True)
    session.use_provider(provider)
    c = store.create_conversation()
    session.set_system_prompt(c, "Be brief.")
    session.read_ahead(c)
    await session.warm_up.settled()
    (warm,) = provider.requests
    assert warm.options.warm_up and warm.options.max_tokens == 1
    (role, system), asked = sent(warm)
    assert role == "system" and system.startswith("Be brief.") and "current_time" in system
    assert asked == ("user", "")
    await run(session, c, "What time is it?")
    first = provider.requests[1]
    assert sent(first)[:-1] == sent(warm)[:-1]
    assert sent(first)[-1] == ("user", "What time is it?")
    await session.close()


async def test_nothing_is_read_ahead_for_a_chat_unconnected_or_calibrating(
    tmp_path: Path,
) -> None:
    from desktop.core.calibration.calibrator import Calibrator

    store = ChatStore(tmp_path / "chats.db")
    unconnected = Session(Settings(), store, SecretStore(), tools=[])
    unconnected.read_ahead(store.create_conversation())  # no model: nothing, no error
    await unconnected.warm_up.settled()
    await unconnected.close()
    session, provider, c = session_over(tmp_path / "calibrating", "x")
    session.backend.calibrator = Calibrator(provider, [], "scripted model")
    session.read_ahead(c)
    await session.warm_up.settled()
    assert provider.requests == []
    await session.close()
