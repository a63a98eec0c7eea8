"""The calls a step makes: the person's alone, written again for the tool the request is
about where the model named another."""

from __future__ import annotations

import json

from desktop.core.events import Reply
from desktop.core.messages import Message, ToolCall
from desktop.core.providers.base import RequestOptions
from desktop.core.tools.builtin.calculator import CALCULATOR
from desktop.core.tools.builtin.charts import chart_tool
from desktop.core.tracks.constrained import ConstrainedTools
from desktop.core.tracks.licence import Licence
from desktop.core.tracks.prompt import emulated_history
from desktop.core.tracks.step_calls import call_schema
from tests.support.fakes import ScriptedProvider, Step

CHART = chart_tool(dark=False)
SALES = "Our sales this year were: Jan 120, Feb 95, Mar 140."
MADE_UP_CHART = [{"name": "create_chart", "arguments": {
    "type": "bar", "title": "Sales", "labels": ["A", "B"], "values": [1, 2]}}]  # fmt: skip
TOTAL = [{"name": "calculator", "arguments": {"expression": "120 + 95 + 140"}}]


async def reply_to(messages: list[Message], provider: ScriptedProvider) -> Reply:
    track = ConstrainedTools(provider)
    events = [e async for e in track.stream(messages, [CHART, CALCULATOR], RequestOptions(0))]
    return next(e for e in events if isinstance(e, Reply))


def model(*, written_again: bool = True) -> ScriptedProvider:
    """Opens with the chart and writes a made-up one; then the total, if asked again."""
    again = [Step(chunks=[json.dumps(TOTAL)])] if written_again else []
    return ScriptedProvider(
        [
            Step(chunks=['{"name": "create_chart"']),
            Step(chunks=[json.dumps(MADE_UP_CHART)]),
            *again,
            Step(chunks=["In words."]),
        ],
        constrains_json=True,
    )


async def test_a_call_to_a_tool_the_request_is_not_about_is_written_for_the_one_it_is() -> None:
    """After a chart, "What were the total sales?" opened with the chart again; its words
    ("total") name the calculator, so the calls are written again with it first."""
    provider = model()
    messages = [Message.user(SALES), Message.assistant("Noted."),
                Message.user("What were the total sales?")]  # fmt: skip
    reply = await reply_to(messages, provider)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("calculator", {"expression": "120 + 95 + 140"})
    ]
    again = provider.requests[2].options.json_schema
    assert again == call_schema([CHART, CALCULATOR], first="calculator")
    assert reply.record is not None and reply.record.verdict == "call"
    assert "written again for calculator" in reply.record.reason
    assert "left out: the request is not about create_chart" in reply.record.reason


async def test_a_request_about_no_other_tool_is_answered_in_words() -> None:
    provider = model(written_again=False)
    reply = await reply_to([Message.user("Hello there, friend!")], provider)
    assert reply.tool_calls == [] and reply.text == "In words."
    assert len(provider.requests) == 3  # the free answer, one writing, the answer in words


async def test_after_a_result_the_calls_are_not_written_again() -> None:
    """Later in a turn a refused call ends in words: the results are there to answer."""
    provider = model(written_again=False)
    call = ToolCall("c1", "calculator", {"expression": "120 + 95 + 140"})
    messages = [Message.user("What were the total sales?"), Message.assistant("", [call]),
                Message.tool("c1", "calculator", '{"result": 355}')]  # fmt: skip
    reply = await reply_to(messages, provider)
    assert reply.tool_calls == [] and reply.text == "In words."
    assert len(provider.requests) == 3


async def test_calls_written_unpinned_are_written_again_too() -> None:
    """After a second look the calls are written with no tool first: the one refused is
    known by its name, and the request's own tool is written next."""
    from desktop.core.events import GateRecord
    from desktop.core.tracks.gate import Call
    from desktop.core.tracks.persons_calls import persons_calls

    provider = ScriptedProvider(
        [Step(chunks=[json.dumps(MADE_UP_CHART)]), Step(chunks=[json.dumps(TOTAL)])],
        constrains_json=True,
    )
    decision = Call(None, None, "", GateRecord(0.9, "calibrated"))
    messages = [Message.user(SALES), Message.assistant("Noted."),
                Message.user("What were the total sales?")]  # fmt: skip
    history = emulated_history(messages, [CHART, CALCULATOR])
    nothing_refused = Licence([CHART, CALCULATOR], messages, {})
    made = await persons_calls(provider, decision, messages, [CHART, CALCULATOR],
                               RequestOptions(0), history, ["create_chart", "calculator"],
                               nothing_refused)  # fmt: skip
    assert made.redirected == "calculator" and [c.name for c in made.written.calls] == [
        "calculator"
    ]
    assert [r.name for r in made.refused] == ["create_chart"]
    assert provider.requests[0].options.json_schema == call_schema([CHART, CALCULATOR])


EXAMPLE_CHART = [{"name": "create_chart", "arguments": {
    "type": "bar", "title": "Sales", "labels": ["Jan", "Feb", "Mar"], "values": [10, 14, 9]}}]  # fmt: skip
THEIR_CHART = [{"name": "create_chart", "arguments": {
    "type": "bar", "title": "Sales", "labels": ["Jan", "Feb", "Mar"], "values": [120, 95, 140]}}]  # fmt: skip


def opening(tool: str, *answers: object) -> ScriptedProvider:
    """Opens with `tool`, then writes each of `answers` as the step's calls."""
    return ScriptedProvider(
        [Step(chunks=[f'{{"name": "{tool}"']),
         *[Step(chunks=[json.dumps(a)]) for a in answers], Step(chunks=["In words."])],
        constrains_json=True,
    )  # fmt: skip


def charting(*answers: object) -> ScriptedProvider:
    return opening("create_chart", *answers)


async def test_a_chart_of_its_examples_numbers_is_written_again_with_the_numbers_said() -> None:
    """ "A bar chart of those sales", turns after the sales: the example's data were the
    model's first pick; written again, the grammar offers only the conversation's."""
    provider = charting(EXAMPLE_CHART, THEIR_CHART)
    messages = [Message.user(SALES), Message.assistant("Noted."),
                Message.user("Make a bar chart of those sales.")]  # fmt: skip
    reply = await reply_to(messages, provider)
    assert [c.arguments["values"] for c in reply.tool_calls] == [[120, 95, 140]]
    schema = json.dumps(provider.requests[2].options.json_schema)
    assert '"enum": [120, 95, 140]' in schema
    assert reply.record is not None and reply.record.verdict == "call"
    assert "written again with only the numbers said" in reply.record.reason
    assert "numbers are the tool prompt's examples', not said (create_chart)" in reply.record.reason


async def test_with_no_number_said_a_copied_chart_is_answered_in_words() -> None:
    provider = charting(EXAMPLE_CHART)
    messages = [Message.user("I sell bread."), Message.assistant("Nice."),
                Message.user("Make a bar chart of my sales.")]  # fmt: skip
    reply = await reply_to(messages, provider)
    assert reply.tool_calls == [] and reply.text == "In words."
    assert len(provider.requests) == 3  # the free answer, one writing, the answer in words


async def test_the_examples_numbers_said_by_the_person_are_theirs() -> None:
    provider = charting(EXAMPLE_CHART)
    messages = [Message.user("Chart these: Jan 10, Feb 14, Mar 9.")]
    reply = await reply_to(messages, provider)
    assert [c.arguments["values"] for c in reply.tool_calls] == [[10, 14, 9]]


async def test_a_copied_chart_for_a_request_about_another_tool_is_written_for_that_one() -> None:
    """ "What were the total sales?" after the sales: the chart's example was left out, and
    the calls are written for the calculator, which the request is about, not narrowed."""
    provider = charting(EXAMPLE_CHART, TOTAL)
    messages = [Message.user(SALES), Message.assistant("Noted."),
                Message.user("What were the total sales?")]  # fmt: skip
    reply = await reply_to(messages, provider)
    assert [c.name for c in reply.tool_calls] == ["calculator"]
    assert provider.requests[2].options.json_schema == call_schema(
        [CHART, CALCULATOR], first="calculator"
    )


def calculating(*answers: object) -> ScriptedProvider:
    return opening("calculator", *answers)


async def test_a_sum_of_the_prompts_numbers_is_written_again_with_the_numbers_said() -> None:
    """ "What were the total sales?" computed the calculator description's `12.5 + 7`:
    written again, the expression's pattern offers only the conversation's numbers."""
    description_sum = [{"name": "calculator", "arguments": {"expression": "12.5 + 7"}}]
    provider = calculating(description_sum, TOTAL)
    messages = [Message.user(SALES), Message.assistant("Noted."),
                Message.user("What were the total sales?")]  # fmt: skip
    reply = await reply_to(messages, provider)
    assert [c.arguments for c in reply.tool_calls] == [{"expression": "120 + 95 + 140"}]
    schema = provider.requests[2].options.json_schema
    assert schema is not None
    pattern = json.dumps(schema).split('"pattern": ')[1].split('"}')[0]
    assert "120" in pattern and "12\\\\.5" not in pattern
    assert reply.record is not None and "written again with only the numbers" in reply.record.reason


async def test_a_thank_you_is_not_written_again_into_a_call_of_its_numbers() -> None:
    """About no tool, a made-up call is left out, not written again with the numbers the
    thank-you holds (they would make it look like the person's)."""
    provider = calculating([{"name": "calculator", "arguments": {"expression": "23 * 19"}}])
    reply = await reply_to([Message.user("Thanks for the 3 tips and the 2 jokes!")], provider)
    assert reply.tool_calls == [] and reply.text == "In words."
    assert len(provider.requests) == 3


async def test_the_tool_written_instead_is_written_again_with_the_numbers_said() -> None:
    """The chart's example for "the total sales" is left out, and so is the calculator
    written in its place of the description's `12.5 + 7`: it is written once more with
    only the conversation's numbers."""
    description_sum = [{"name": "calculator", "arguments": {"expression": "12.5 + 7"}}]
    provider = charting(EXAMPLE_CHART, description_sum, TOTAL)
    messages = [Message.user(SALES), Message.assistant("Noted."),
                Message.user("What were the total sales?")]  # fmt: skip
    reply = await reply_to(messages, provider)
    assert [c.arguments for c in reply.tool_calls] == [{"expression": "120 + 95 + 140"}]
    assert provider.requests[2].options.json_schema == call_schema(
        [CHART, CALCULATOR], first="calculator"
    )
    assert "120" in json.dumps(provider.requests[3].options.json_schema)
    assert reply.record is not None
    assert "written again for calculator" in reply.record.reason
    assert "written again with only the numbers said" in reply.record.reason
