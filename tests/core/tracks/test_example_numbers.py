"""A call whose data are the tool prompt's examples: found by its numbers, and written
again under a grammar that offers only the numbers said."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import jsonschema
import pytest

from desktop.core.messages import Message, MessageMeta, TextPart, ToolCall
from desktop.core.tool_spec import Example, ToolSpec
from desktop.core.tools.builtin.calculator import CALCULATOR
from desktop.core.tools.builtin.charts import chart_tool
from desktop.core.tracks.example_numbers import (
    MOST_NUMBERS_OFFERED,
    copies_example_numbers,
    data_numbers,
    narrowed,
    numbers_said,
    prompt_numbers,
)
from desktop.core.tracks.licence import Reason, refusal

CHART = chart_tool(dark=False)
SALES = [Message.user("Our sales: Jan 120, Feb 95, Mar 1,140.5")]


def chart(*values: float) -> ToolCall:
    labels = [chr(ord("A") + i) for i in range(len(values))]
    return ToolCall("c", "create_chart", {"type": "bar", "title": "Sales", "labels": labels,
                                          "values": list(values)})  # fmt: skip


def test_the_numbers_of_a_call_are_its_json_numbers_and_those_in_its_strings() -> None:
    arguments = {"title": "Top 3", "values": [1, 2.5, True], "more": [{"values": [7]}]}
    assert data_numbers(arguments) == {Decimal(1), Decimal("2.5"), Decimal(7), Decimal(3)}
    assert data_numbers({"expression": "(1,234 + 5) / 2" + " 9" * 0}) == {
        Decimal(1234),
        Decimal(5),
        Decimal(2),
    }


def test_the_numbers_said_are_each_kept_once_the_latest_last() -> None:
    result = Message.tool("c", "calculator", "120")
    said = numbers_said([*SALES, result, Message.user("and 7")])
    assert said == [Decimal(95), Decimal("1140.5"), Decimal(120), Decimal(7)]
    many = [Message.user(" ".join(str(n) for n in range(MOST_NUMBERS_OFFERED + 50)))]
    assert len(numbers_said(many)) == MOST_NUMBERS_OFFERED
    assert numbers_said(many)[-1] == Decimal(MOST_NUMBERS_OFFERED + 49)


def sum_of(expression: str) -> ToolCall:
    return ToolCall("c", "calculator", {"expression": expression})


@pytest.mark.parametrize(
    ("call", "messages", "copied"),
    [
        (chart(10, 14, 9), SALES, True),  # the example's data
        (chart(10, 14), SALES, True),  # part of them
        (chart(10, 14, 9), [Message.user("Chart Jan 10, Feb 14, Mar 9")], False),  # theirs
        (chart(10, 14, 9), [Message.user("It was 14 in Feb.")], True),  # two of them not
        (chart(10, 14, 99), SALES, True),  # two of three the example's
        (chart(120, 95, 1140.5), SALES, False),
        (chart(120, 95, 10), SALES, False),  # one number may be anyone's pick
        (chart(10, 14, 120, 95, 1140.5), SALES, False),  # fewer than half
        # Numbers inside strings, from another tool's example or a description's.
        (sum_of("10 + 14 + 9 / 4"), SALES, True),
        (sum_of("12.5 + 7"), SALES, True),
        (sum_of("120 + 95 + 1140.5"), SALES, False),
        (sum_of("45 * 60"), [Message.user("My meeting is in 45 minutes: in seconds?")], False),
        (sum_of("240 * 15 / 100"), [Message.user("How much is 15% of 240?")], False),
    ],
)
def test_a_call_copies_the_prompts_numbers_when_several_are_and_at_least_half(
    call: ToolCall, messages: list[Message], copied: bool
) -> None:
    assert copies_example_numbers(call, [CALCULATOR, CHART], messages) is copied


def test_the_prompts_numbers_are_those_of_the_tools_offered() -> None:
    average = sum_of("10 + 14 + 9 / 4")
    assert copies_example_numbers(average, [CALCULATOR, CHART], SALES)
    assert not copies_example_numbers(average, [CALCULATOR], SALES)  # 4 alone is its own


def test_the_licence_leaves_out_a_call_of_its_examples_numbers() -> None:
    why = refusal(chart(10, 14, 9), CHART, [*SALES, Message.user("Chart those sales.")])
    assert why == Reason("prompt_numbers", "create_chart")
    assert str(why) == "the call's numbers are the tool prompt's examples', not said (create_chart)"
    average = [*SALES, Message.user("What's the average?")]
    assert refusal(sum_of("10 + 14 + 9 / 4"), CALCULATOR, average) is None
    why = refusal(sum_of("10 + 14 + 9 / 4"), CALCULATOR, average, [CHART])
    assert why == Reason("prompt_numbers", "calculator")


def test_narrowed_numbers_are_those_said_and_integers_only_the_whole_ones() -> None:
    tool = ToolSpec(
        "log",
        "Logs points.",
        {
            "type": "object",
            "properties": {
                "points": {"type": "array", "items": {"type": "number"}},
                "count": {"type": "integer"},
                "level": {"type": "integer", "enum": [1, 2, 3]},
                "nested": {"type": "object", "properties": {"at": {"type": "number"}}},
            },
            "required": ["points"],
        },
        examples=(Example("Log 1 and 2", {"points": [1, 2]}),),
    )
    said = [Decimal(120), Decimal("2.5")]
    schema = narrowed(tool, said).parameters
    assert schema["properties"]["points"]["items"]["enum"] == [120, 2.5]
    assert schema["properties"]["count"]["enum"] == [120]
    assert schema["properties"]["level"]["enum"] == [1, 2, 3]
    assert schema["properties"]["nested"]["properties"]["at"]["enum"] == [120, 2.5]
    assert tool.parameters["properties"]["count"] == {"type": "integer"}  # not changed
    jsonschema.validate({"points": [120, 2.5], "count": 120}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"points": [10]}, schema)


def test_the_charts_own_schema_narrowed_still_takes_the_persons_chart() -> None:
    schema = narrowed(CHART, numbers_said(SALES)).parameters
    theirs = {"type": "bar", "title": "Sales", "labels": ["Jan", "Feb", "Mar"],
              "values": [120, 95, 1140.5],
              "more_series": [{"name": "b", "values": [95, 95, 120]}]}  # fmt: skip
    jsonschema.validate(theirs, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**theirs, "values": [10, 14, 9]}, schema)


def test_narrowed_the_arguments_that_hold_numbers_come_first() -> None:
    """The grammar writes the schema's order: the data first, the labels to fit them."""
    order = list(narrowed(CHART, numbers_said(SALES)).parameters["properties"])
    assert order[:2] == ["values", "more_series"]
    assert sorted(order) == sorted(CHART.parameters["properties"])
    assert list(CHART.parameters["properties"])[:3] == ["type", "title", "labels"]


def test_a_run_of_digits_too_long_to_be_data_is_not_offered() -> None:
    """Python will not write an integer of thousands of digits as JSON: such a run in a
    message must not reach the grammar."""
    said = numbers_said([Message.user("9" * 5000 + " and 12")])
    assert said == [Decimal(12)]
    json.dumps(narrowed(CHART, said).parameters)


def test_an_expression_narrowed_takes_the_numbers_said_and_single_digits() -> None:
    """A count anyone may write (the four months of an average) stays; a number of the
    prompt's or one nobody said does not, nor two said numbers run together."""
    said = numbers_said([*SALES, Message.user("Jan to Mar, and 12.5?")])
    schema = narrowed(CALCULATOR, said).parameters
    pattern = schema["properties"]["expression"]["pattern"]
    for theirs in ("120 + 95 + 1140.5", "(120 + 95 + 1140.5) / 3", "-12.5 * 2", "95"):
        assert re.search(pattern, theirs), theirs
        jsonschema.validate({"expression": theirs}, schema)
    for made_up in ("10 + 14", "12.5 + 7.5", "12095", "120.95", "1e5", "", " + "):
        assert not re.search(pattern, made_up), made_up
    original = CALCULATOR.parameters["properties"]["expression"]["pattern"]
    assert re.search(original, "10 + 14")  # the tool itself is not changed


def test_a_string_of_another_pattern_or_of_no_digits_is_left_as_it_is() -> None:
    words = {"type": "string", "pattern": "^[a-z ]+$"}
    free = {"type": "string", "pattern": "^(\\d+|x)$"}
    tool = ToolSpec(
        "t",
        "T.",
        {"type": "object", "properties": {"words": words, "free": free}},
    )
    properties = narrowed(tool, [Decimal(5)]).parameters["properties"]
    assert properties["words"] == words and properties["free"] == free


def test_the_prompts_numbers_are_its_particulars_not_what_a_value_may_be() -> None:
    tool = ToolSpec(
        "t",
        "Rates a thing from 1 to 5.",
        {
            "type": "object",
            "properties": {
                "stars": {"type": "integer", "enum": [6, 7], "default": 8},
                "code": {"type": "string", "pattern": "^[0-9]+$", "examples": ["42"]},
                "description": {"type": "string", "pattern": "^[2-3]+$"},
            },
        },
        examples=(Example("Rate it 10", {"stars": 11}),),
    )
    assert prompt_numbers([tool]) == {Decimal(n) for n in (1, 5, 8, 42, 10, 11)}


def test_the_models_own_answers_say_no_numbers() -> None:
    """Having drawn the example's chart, the model described it with the example's
    numbers and then computed with them: its prose is no source of the person's data."""
    described = [*SALES, Message.assistant("The chart shows Jan 10, Feb 14 and Mar 9.")]
    average = sum_of("10 + 14 + 9 / 3")
    assert copies_example_numbers(average, [CALCULATOR, CHART], described)
    assert Decimal(14) not in numbers_said(described)
    told = [*SALES, Message.tool("c", "lookup", "Jan 10, Feb 14 and Mar 9")]
    assert not copies_example_numbers(average, [CALCULATOR, CHART], told)


def test_what_the_loop_wrote_back_about_a_call_says_no_numbers() -> None:
    """A refused call's message, a failed tool's error and the loop's notes quote the
    model's own values: writing them again is no more the person's for that."""
    made_up = "Error: 'values' [10, 14, 9] is not valid under the schema"
    for echoed in (
        Message.tool("c", "create_chart", made_up, rejected=True),
        Message.tool("c", "create_chart", made_up, meta=MessageMeta(duration_ms=1.0, error="x")),
        Message("user", [TextPart(made_up)], meta=MessageMeta(step_notes=1)),
    ):
        conversation = [*SALES, echoed]
        assert Decimal(14) not in numbers_said(conversation)
        assert copies_example_numbers(chart(10, 14, 9), [CHART], conversation)
    ran = Message.tool("c", "lookup", "Jan 10, Feb 14 and Mar 9", meta=MessageMeta(duration_ms=1.0))
    assert Decimal(14) in numbers_said([*SALES, ran])


def test_a_number_said_long_ago_is_still_said() -> None:
    """The grammar offers the latest numbers only; whether one was said reads them all."""
    early = [
        Message.user("The example's 10 and 14 were ours."),
        *[Message.user(" ".join(str(1000 + n) for n in range(MOST_NUMBERS_OFFERED)))],
    ]
    assert Decimal(10) not in numbers_said(early)
    assert not copies_example_numbers(chart(10, 14, 9), [CHART], early)
