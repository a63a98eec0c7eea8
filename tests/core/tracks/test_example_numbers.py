"""A call whose data are its tool's example: found by its numbers, and written again under
a grammar that offers only the numbers said."""

from __future__ import annotations

import json
from decimal import Decimal

import jsonschema
import pytest

from desktop.core.messages import Message, ToolCall
from desktop.core.tool_spec import Example, ToolSpec
from desktop.core.tools.builtin.charts import chart_tool
from desktop.core.tracks.example_numbers import (
    MOST_NUMBERS_OFFERED,
    copies_example_numbers,
    data_numbers,
    narrowed,
    numbers_said,
)
from desktop.core.tracks.licence import refusal

CHART = chart_tool(dark=False)
SALES = [Message.user("Our sales: Jan 120, Feb 95, Mar 1,140.5")]


def chart(*values: float) -> ToolCall:
    labels = [f"L{i}" for i in range(len(values))]
    return ToolCall("c", "create_chart", {"type": "bar", "title": "Sales", "labels": labels,
                                          "values": list(values)})  # fmt: skip


def test_the_numbers_of_a_call_are_its_json_numbers_not_those_in_its_strings() -> None:
    arguments = {"title": "Top 3", "values": [1, 2.5, True], "more": [{"values": [7]}]}
    assert data_numbers(arguments) == {Decimal(1), Decimal("2.5"), Decimal(7)}


def test_the_numbers_said_are_each_kept_once_the_latest_last() -> None:
    said = numbers_said([*SALES, Message.assistant("So 120 it is."), Message.user("and 7")])
    assert said == [Decimal(95), Decimal("1140.5"), Decimal(120), Decimal(7)]
    many = [Message.user(" ".join(str(n) for n in range(MOST_NUMBERS_OFFERED + 50)))]
    assert len(numbers_said(many)) == MOST_NUMBERS_OFFERED
    assert numbers_said(many)[-1] == Decimal(MOST_NUMBERS_OFFERED + 49)


@pytest.mark.parametrize(
    ("call", "messages", "copied"),
    [
        (chart(10, 14, 9), SALES, True),  # the example's data
        (chart(10, 14), SALES, True),  # part of them
        (chart(10, 14, 9), [Message.user("Chart Jan 10, Feb 14, Mar 9")], False),  # theirs
        (chart(10, 14, 9), [Message.user("It was 14 in Feb.")], False),  # one of them said
        (chart(120, 95, 1140.5), SALES, False),
        (chart(10), SALES, False),  # one number may be anyone's pick
        (chart(10, 14, 99), SALES, False),  # not all of them the example's
    ],
)
def test_a_call_copies_its_examples_numbers_when_several_are_and_none_was_said(
    call: ToolCall, messages: list[Message], copied: bool
) -> None:
    assert copies_example_numbers(call, CHART, messages) is copied


def test_the_licence_leaves_out_a_call_of_its_examples_numbers() -> None:
    why = refusal(chart(10, 14, 9), CHART, [*SALES, Message.user("Chart those sales.")])
    assert why == "the call's numbers are an example's of create_chart, none of them said"


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
