"""The forms the tool prompt lists tools in: every form names every tool, parameter and
example, and the JSON form is the one the prompt always had."""

from __future__ import annotations

import json

import pytest

from desktop.core.tool_spec import Example
from desktop.core.tools.toolbox import Tool
from desktop.core.tracks.prompt import TOOL_PROMPT_HEAD, render_tool_prompt
from desktop.core.tracks.tool_forms import TOOL_FORMS, ToolForm, render_tools
from tests.core.tracks.samples import noop

WEATHER = Tool(
    "weather",
    "The forecast for a city.",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "the city's name", "minLength": 1},
            "days": {"type": "integer"},
            "unit": {"type": "string", "enum": ["C", "F"]},
        },
        "required": ["city"],
    },
    noop,
    examples=(Example("Weather in Oslo?", {"city": "Oslo"}),),
)


@pytest.mark.parametrize("form", TOOL_FORMS)
def test_every_form_lists_each_tool_its_parameters_and_its_example(form: ToolForm) -> None:
    listed = render_tools([WEATHER], form)
    for word in ("weather", "The forecast for a city.", "city", "days", "unit", "the city's name"):
        assert word in listed
    assert '"Weather in Oslo?" -> {"name": "weather", "arguments": {"city": "Oslo"}}' in listed
    assert "minLength" not in listed  # bounds are validation's, not the prompt's
    assert render_tool_prompt([WEATHER], form).startswith(TOOL_PROMPT_HEAD)


def test_the_json_form_is_the_prompt_as_it_was() -> None:
    assert render_tools([WEATHER], "json") == (
        "- weather: The forecast for a city.\n"
        '  parameters: {"city": {"type": "string", "description": "the city\'s name"}, '
        '"days": {"type": "integer"}, "unit": {"type": "string", "enum": ["C", "F"]}}\n'
        "  required: city\n"
        '  example: "Weather in Oslo?" -> {"name": "weather", "arguments": {"city": "Oslo"}}'
    )


def test_the_signature_form_reads_as_a_function() -> None:
    listed = render_tools([WEATHER], "signatures")
    first = listed.splitlines()[0]
    assert first == (
        '- weather(city: string, days?: integer, unit?: "C" | "F"): The forecast for a city.'
    )
    assert "    city: the city's name" in listed.splitlines()


def test_the_tools_tag_form_lists_each_function_as_json_in_the_tag() -> None:
    lines = render_tools([WEATHER], "tools tag").splitlines()
    assert lines[0] == "<tools>" and lines[2] == "</tools>"
    function = json.loads(lines[1])
    assert function["type"] == "function" and function["function"]["name"] == "weather"
    assert function["function"]["parameters"]["required"] == ["city"]
