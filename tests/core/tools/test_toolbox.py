import asyncio
import time
from typing import Any

import pytest

from desktop.core.messages import Image, ToolCall
from desktop.core.tools.toolbox import Tool, Toolbox, ToolOutput, render_content
from tests.support.images import PNG

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1},
    },
    "required": ["city"],
}


async def echo(arguments: dict[str, Any]) -> Any:
    return {"echo": arguments}


def weather(handler: Any = echo, **flags: Any) -> Tool:
    return Tool("get_weather", "Weather for a city", WEATHER_SCHEMA, handler, **flags)


def test_valid_arguments_pass() -> None:
    box = Toolbox([weather()])
    assert box.validate("get_weather", {"city": "Paris", "unit": "celsius", "days": 2}) is None


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, "missing required argument 'city'"),
        ({"city": "Paris", "country": "FR"}, "unknown argument 'country'"),
        ({"city": 5}, "'city': 5 is not of type 'string'"),
        ({"city": "Paris", "unit": "kelvin"}, "'unit': 'kelvin' is not one of"),
        ({"city": "Paris", "days": "3"}, "'days': '3' is not of type 'integer'"),
        (None, "must be a JSON object, got null"),
        ("Paris", "must be a JSON object, got a string"),
    ],
)
def test_invalid_arguments_are_rejected_with_the_reason(arguments: Any, expected: str) -> None:
    """Edge cases 8 and 9: missing required, unknown key, wrong types, null or string args."""
    reason = Toolbox([weather()]).validate("get_weather", arguments)
    assert reason is not None
    assert expected in reason
    assert "city, unit, days" in reason  # the model is told which parameters exist


def test_wrong_case_tool_name_is_not_found_and_lists_the_tools() -> None:
    """Edge case 9: names match exactly."""
    reason = Toolbox([weather()]).validate("Get_Weather", {"city": "x"})
    assert reason == 'Function "Get_Weather" not found. Available functions: get_weather.'


def test_a_bad_schema_is_refused_at_definition() -> None:
    with pytest.raises(ValueError, match="invalid parameter schema"):
        Tool("t", "d", {"type": "object", "properties": {"a": {"type": "nope"}}}, echo)
    with pytest.raises(ValueError, match="object schema"):
        Tool("t", "d", {"type": "string"}, echo)
    with pytest.raises(ValueError, match="tool name"):
        Tool("has space", "d", {"type": "object"}, echo)
    with pytest.raises(ValueError, match="not JSON"):
        Tool("t", "d", {"type": "object", "default": object()}, echo)
    deep: dict[str, object] = {}
    for _ in range(100_000):
        deep = {"x": deep}
    with pytest.raises(ValueError, match="not JSON"):  # an MCP server's schema, too deep
        Tool("t", "d", {"type": "object", "properties": deep}, echo)


def test_a_bad_schema_is_refused_every_time_it_comes() -> None:
    """The metaschema check is remembered per schema text; the refusal must be too."""
    bad = {"type": "object", "properties": {"a": {"minLength": -1}}}
    for _ in range(2):
        with pytest.raises(ValueError, match="invalid parameter schema"):
            Tool("t", "d", dict(bad), echo)


def test_two_tools_with_one_name_are_refused() -> None:
    with pytest.raises(ValueError, match="two tools"):
        Toolbox([weather(), weather()])


async def test_handler_result_is_rendered_as_json_text() -> None:
    outcome = await Toolbox([weather()]).run(ToolCall("c", "get_weather", {"city": "Oslo"}))
    assert outcome.content == '{"echo": {"city": "Oslo"}}'
    assert outcome.error is None and outcome.duration_ms >= 0


async def test_handler_exception_becomes_an_error_result() -> None:
    """Edge case 17: a tool that raises does not end the session."""

    async def broken(arguments: dict[str, Any]) -> str:
        raise KeyError("station")

    outcome = await Toolbox([weather(broken)]).run(ToolCall("c", "get_weather", {"city": "x"}))
    assert outcome.error == "KeyError: 'station'"
    assert outcome.content == "Error: KeyError: 'station'"


async def test_handler_timeout_becomes_an_error_result() -> None:
    """Edge case 18: a hanging tool is stopped by its timeout."""

    async def hangs(arguments: dict[str, Any]) -> str:
        await asyncio.sleep(30)
        return "never"

    box = Toolbox([weather(hangs, timeout_s=0.05)])
    outcome = await box.run(ToolCall("c", "get_weather", {"city": "x"}))
    assert outcome.error == "Tool get_weather timed out after 0.05 s."


async def test_images_come_back_with_the_content() -> None:
    async def chart(arguments: dict[str, Any]) -> ToolOutput:
        return ToolOutput("a chart", [Image.from_bytes(PNG)])

    outcome = await Toolbox([weather(chart)]).run(ToolCall("c", "get_weather", {"city": "x"}))
    assert outcome.content == "a chart" and outcome.images[0].mime == "image/png"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain", "plain"),
        (42, "42"),
        (None, "null"),
        ([1, "é"], '[1, "é"]'),
        ({"a": 1}, '{"a": 1}'),
    ],
)
def test_non_string_results_serialise_consistently(value: Any, text: str) -> None:
    """Edge case 42: objects, numbers and null are JSON for every provider."""
    assert render_content(value) == text


def test_wire_definition_is_openai_shaped() -> None:
    assert weather().wire_definition() == {
        "type": "function",
        "function": {"name": "get_weather", "description": "Weather for a city",
                     "parameters": WEATHER_SCHEMA},
    }  # fmt: skip


REPAIR_SCHEMA = {
    "type": "object",
    "properties": {
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "loud": {"type": "boolean"},
        "zip": {"type": "string"},
        "maybe": {"type": ["integer", "null"]},
        "points": {"type": "array", "items": {"type": "object",
                                              "properties": {"x": {"type": "number"}}}},
    },
}  # fmt: skip


@pytest.mark.parametrize(
    ("given", "repaired"),
    [
        ({"count": "5"}, {"count": 5}),
        ({"count": " -12 "}, {"count": -12}),
        ({"count": 5.0}, {"count": 5}),
        ({"ratio": "2.5"}, {"ratio": 2.5}),
        ({"ratio": "3"}, {"ratio": 3}),
        ({"ratio": "1e3"}, {"ratio": 1000.0}),
        ({"loud": "True"}, {"loud": True}),
        ({"loud": "false"}, {"loud": False}),
        ({"zip": 12345}, {"zip": "12345"}),
        ({"maybe": "7"}, {"maybe": 7}),
        ({"points": [{"x": "1.5"}, {"x": 2}]}, {"points": [{"x": 1.5}, {"x": 2}]}),
    ],
)
def test_unambiguous_type_slips_are_repaired(given: Any, repaired: Any) -> None:
    from desktop.core.tools.toolbox import repair_arguments

    assert repair_arguments(REPAIR_SCHEMA, given) == repaired


@pytest.mark.parametrize(
    "given",
    [{"count": "five"}, {"count": "5.5"}, {"count": 5.5}, {"loud": "yes"}, {"loud": 1},
     {"zip": True}, {"maybe": None}, {"unknown": "5"}, {"ratio": "1,5"}, {"count": "5 apples"}],
)  # fmt: skip
def test_anything_with_two_readings_is_left_for_validation(given: Any) -> None:
    from desktop.core.tools.toolbox import repair_arguments

    assert repair_arguments(REPAIR_SCHEMA, given) == given


def test_the_toolbox_repairs_a_call_and_keeps_a_correct_one_as_it_is() -> None:
    async def noop(arguments: dict[str, Any]) -> str:
        return ""

    box = Toolbox([Tool("count", "Counts.", REPAIR_SCHEMA, noop)])
    call = ToolCall("c1", "count", {"count": "3", "zip": "x"})
    fixed = box.repaired(call)
    assert fixed.arguments == {"count": 3, "zip": "x"} and fixed.id == "c1"
    assert box.validate(fixed.name, fixed.arguments) is None
    correct = ToolCall("c2", "count", {"count": 3})
    assert box.repaired(correct) is correct
    unknown = ToolCall("c3", "nope", {"count": "3"})
    assert box.repaired(unknown) is unknown


# --- hostile arguments: repair never raises, validation is bounded -----------------------


def deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    "given",
    [
        "1" + "0" * 400,  # float() gives inf, and int(inf) raised OverflowError
        "9" * 5000,  # past Python's 4,300-digit limit: int() raised ValueError
        "1e999",
        "-" + "7" * 4400,
        float("inf"),
        float("nan"),
    ],
)
def test_repair_never_raises_and_leaves_what_it_cannot_read(given: Any) -> None:
    box = Toolbox([weather()])
    call = box.repaired(ToolCall("c", "get_weather", {"city": "Oslo", "days": given}))
    assert call.arguments["days"] is given
    reason = box.validate("get_weather", call.arguments)
    assert reason is not None and "'days'" in reason and len(reason) < 2_000


def test_arguments_nested_a_hundred_thousand_deep_are_refused_without_recursion() -> None:
    box = Toolbox([weather()])
    arguments = {"city": deep(100_000)}
    assert box.repaired(ToolCall("c", "get_weather", arguments)).arguments is arguments
    assert box.validate("get_weather", arguments) == (
        "Invalid arguments for get_weather: the arguments are nested more than 32 levels "
        "deep. Its parameters are: city, unit, days."
    )


def test_a_million_chart_points_are_refused_fast_with_a_short_reason() -> None:
    from desktop.core.tools.builtin.charts import CREATE_CHART

    points = 1_000_000
    arguments = {"type": "bar", "title": "t", "labels": ["x"] * points, "values": [1] * points}
    box = Toolbox([CREATE_CHART])
    started = time.perf_counter()
    reason = box.validate(
        "create_chart", box.repaired(ToolCall("c", "create_chart", arguments)).arguments
    )
    assert time.perf_counter() - started < 5.0  # was 13 s; about 0.3 s, room for a busy machine
    assert reason is not None and "more than 10000 values" in reason


def test_every_refusal_reason_is_capped() -> None:
    from desktop.core.tools.builtin.charts import CREATE_CHART

    # Under the size bound, but every value wrong, each quoted whole by jsonschema.
    arguments = {"type": "pie", "title": "t", "labels": [1] * 2000, "values": ["x" * 50] * 2000}
    reason = Toolbox([CREATE_CHART]).validate("create_chart", arguments)
    assert reason is not None and len(reason) <= 2_000
    assert "more problems" in reason
