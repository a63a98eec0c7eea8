"""Fuzzed model answers through the tolerant parser and the whole emulated loop: no
exception, time linear in the answer, and no call that breaks its schema ever runs."""

from __future__ import annotations

import asyncio
import json
import random
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from desktop.core.events import TurnFailed, TurnFinished
from desktop.core.loop import LoopSettings, complete_turn
from desktop.core.messages import Message
from desktop.core.tools.toolbox import Tool, Toolbox, validate_arguments
from desktop.core.tracks.emulated import EmulatedTools
from desktop.core.tracks.parse import parse_answer
from tests.support.fakes import ScriptedProvider

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 40},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "units": {"type": "string", "enum": ["metric", "imperial"]},
        "hours": {"type": "array", "items": {"type": "integer"}, "maxItems": 5},
    },
    "required": ["city"],
    "additionalProperties": False,
}
PIECES = ['{"name": "forecast", "arguments": ', '{"city": "Oslo"}', '{"city": ', '"days": ',
          '"units": "metric"', '"hours": [1, 2]', "}", "]", "[", "{", '"', "\\", ",", ":",
          "```json\n", "```", "<think>", "</think>", "null", "true", "1e999", "NaN", "-0",
          '"\\ud83d"', "\u2028", "Sure! ", "see [1] ", '{"name": "other", "arguments": {}}',
          '"days": "5"', '"days": 5.0', '"days": 99', '"city": 7', '"extra": 1']  # fmt: skip


class Spy:
    def __init__(self) -> None:
        self.ran: list[Any] = []
        self.tool = Tool("forecast", "Weather forecast", SCHEMA, self.handle)

    async def handle(self, arguments: dict[str, Any]) -> str:
        self.ran.append(arguments)
        return "sunny"


async def through_the_loop(answer: str) -> Spy:
    spy = Spy()
    provider = EmulatedTools(ScriptedProvider([answer, answer, "Done."]))
    events = await complete_turn(
        provider, Toolbox([spy.tool]), [Message.user("Weather?")],
        settings=LoopSettings(max_tool_calls=2),
    )  # fmt: skip
    assert isinstance(events[-1], TurnFinished | TurnFailed)
    for arguments in spy.ran:
        assert validate_arguments(spy.tool, arguments) is None, arguments
    return spy


answers = st.lists(st.sampled_from(PIECES) | st.text(max_size=8), max_size=40).map("".join)


@settings(max_examples=500, deadline=None)
@given(answer=answers)
def test_fuzzed_answers_through_the_loop(answer: str) -> None:
    asyncio.run(through_the_loop(answer))


def best_time(text: str) -> float:
    """The fastest of three parses: a pause of the machine slows one, rarely all three."""
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        parse_answer(text, ["forecast"])
        timings.append(time.perf_counter() - started)
    return min(timings)


@settings(max_examples=150, deadline=None)
@given(answer=answers, repeat=st.integers(min_value=20, max_value=120))
def test_parse_time_stays_linear(answer: str, repeat: int) -> None:
    """Eight times the answer takes about eight times as long, never the square (64x).
    Measured side by side, so a slow machine slows both; the floor covers timer noise."""
    short = best_time(answer * repeat)
    long = best_time(answer * (repeat * 8))
    assert long < 24 * short + 0.01, (len(answer) * repeat, short, long)


def mutated(rng: random.Random) -> str:
    """A real call, then cut, spliced and sprinkled with the pieces above."""
    arguments: dict[str, Any] = {"city": rng.choice(["Oslo", "Lima", 7, None, "x" * 60])}
    if rng.random() < 0.5:
        arguments["days"] = rng.choice([3, "3", 3.0, 0, 99, "three", 1e308])
    if rng.random() < 0.3:
        arguments["hours"] = [rng.randint(0, 30) for _ in range(rng.randint(0, 8))]
    text = json.dumps({"name": "forecast", "arguments": arguments})
    for _ in range(rng.randint(0, 4)):
        at = rng.randint(0, len(text))
        text = text[:at] + rng.choice(PIECES) + text[at + rng.randint(0, 3) :]
    return rng.choice(["", "Sure! ", "```json\n", "<think>x</think>"]) + text


@pytest.mark.slow
def test_one_hundred_thousand_fuzzed_answers() -> None:
    rng = random.Random(20261130)

    async def many() -> tuple[int, int]:
        ran = valid = 0
        for _ in range(100_000):
            spy = await through_the_loop(mutated(rng))
            ran += len(spy.ran)
            valid += 1
        return ran, valid

    ran, done = asyncio.run(many())
    assert done == 100_000
    assert ran > 5_000  # many calls were good enough to run: the fuzz reached the tools
