"""The answer in words asked ahead of the call gate's verdict, on a server with a slot for it."""

import asyncio

import pytest

from desktop.core.events import ProviderEvent, Reply, TextChunk
from desktop.core.messages import Message
from desktop.core.providers.base import Capabilities, ProviderError, RequestOptions
from desktop.core.tracks.bars import Bars
from desktop.core.tracks.constrained import ConstrainedTools
from tests.core.tracks.samples import CLOCK, SEARCH
from tests.support.fakes import Request, ScriptedProvider, Step

SAMPLED = RequestOptions(temperature=0.3, seed=7)
OPENS_A_CALL = Step(odds=[('{"', 0.9), ("Sure", 0.1)])
NOT_OFFERED = Step(chunks=['{"name": "', "jo", 'ke"', ', "arguments": {}}'])
DUE = Step(chunks=['{"name": "', "sea", 'rch"', ', "arguments": {"query": "rust"}}'])


def server(
    words: Step, *, slots: int, free: Step = NOT_OFFERED
) -> tuple[ScriptedProvider, list[int]]:
    """A backend with `slots` that opens a call, the answer in words being `words`; what
    the free answer had done when the words were asked is noted in the list returned."""
    provider = ScriptedProvider([], capabilities=Capabilities(slots=slots),
                                constrains_json=True, reports_token_odds=True)  # fmt: skip

    def asked_words(request: Request) -> Step:
        noted.append(provider.closed_early)  # 0: the free answer was still being read
        return words

    noted: list[int] = []
    call = Step(chunks=['[{"name": "search", "arguments": {"query": "rust"}}]'])
    provider.script = [OPENS_A_CALL, free, asked_words, call]
    return provider, noted


async def run(provider: ScriptedProvider, request: str) -> list[ProviderEvent]:
    track = ConstrainedTools(provider, Bars(0.5, 0.5, None, "calibrated"))

    async def events() -> list[ProviderEvent]:
        return [e async for e in track.stream([Message.user(request)], [SEARCH, CLOCK], SAMPLED)]

    return await asyncio.wait_for(events(), 10)  # a step that hangs is a failure, not a wait


async def test_a_call_turned_down_is_answered_by_the_words_asked_while_it_was_read() -> None:
    """The probe opens a call, so the answer in words is asked as the call is read (the
    free answer not yet stopped at its name); the call names no offered tool, and those
    words are the answer: no request after the verdict."""
    provider, noted = server(Step(chunks=["Why did", " it?"]), slots=3)
    events = await run(provider, "Tell me a joke.")
    reply = next(e for e in events if isinstance(e, Reply))
    assert "".join(e.text for e in events if isinstance(e, TextChunk)) == "Why did it?"
    assert reply.text == "Why did it?" and reply.tool_calls == []
    assert reply.record is not None
    assert reply.record.reason == "the call named 'joke', which is not an offered tool"
    probe, free, words = provider.requests
    assert noted == [0]
    assert probe.options.phase == "opening" and free.options.phase is None
    assert words.options.aside == "in words" and words.options.phase == "plain"
    assert words.tools == [] and "You can use tools" not in words.messages[0].text


async def test_without_a_slot_of_their_own_the_words_are_asked_after_the_verdict() -> None:
    """Two slots: the answer in words would share the turn alone's, so it waits for the
    verdict, as before."""
    provider, noted = server(Step(chunks=["Why did", " it?"]), slots=2)
    events = await run(provider, "Tell me a joke.")
    assert next(e for e in events if isinstance(e, Reply)).text == "Why did it?"
    assert noted == [1]
    assert provider.requests[2].options.reason == (
        "the call named 'joke', which is not an offered tool"
    )


async def test_the_words_asked_ahead_of_a_call_made_are_cancelled() -> None:
    """The call is the person's (its value is what they said): the answer in words, still
    being written, is cancelled before the call is written under the grammar, and never
    shown."""
    provider, noted = server(Step(chunks=["Rust is"], hang=True), slots=3, free=DUE)
    events = await run(provider, "look up rust")
    reply = next(e for e in events if isinstance(e, Reply))
    assert [c.name for c in reply.tool_calls] == ["search"]
    assert provider.cancelled and noted == [0]
    assert not any(isinstance(e, TextChunk) and "Rust is" in e.text for e in events)
    assert provider.requests[-1].options.phase == "constrained"


async def test_no_words_are_asked_ahead_of_a_call_to_the_tool_the_request_is_about() -> None:
    """ "search my notes" is about the search tool: its call is likely made, and words
    asked beside it would only slow it."""
    provider, noted = server(Step(chunks=["Rust is"]), slots=3, free=DUE)
    del provider.script[2]  # the words
    events = await run(provider, "search my notes on rust")
    assert [c.name for c in next(e for e in events if isinstance(e, Reply)).tool_calls] == [
        "search"
    ]
    assert [r.options.phase for r in provider.requests] == ["opening", None, "constrained"]
    assert noted == []


async def test_a_failure_of_words_never_used_is_not_the_turns() -> None:
    provider, _ = server(Step(error="the server went away"), slots=3, free=DUE)
    events = await run(provider, "look up rust")
    assert [c.name for c in next(e for e in events if isinstance(e, Reply)).tool_calls] == [
        "search"
    ]


async def test_a_failure_of_the_words_taken_is_the_turns() -> None:
    provider, _ = server(Step(chunks=["Why"], error="the server went away"), slots=3)
    with pytest.raises(ProviderError, match="the server went away"):
        await run(provider, "Tell me a joke.")
