"""Tools with examples and a scripted model that is sure of the calls that fit them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from desktop.core.calibration.questions import CaseKind
from desktop.core.calibration.scoring import Answer
from desktop.core.tool_spec import Example
from desktop.core.tools.toolbox import Tool
from tests.support.fakes import Request, ScriptedProvider, Step


async def nothing(arguments: dict[str, Any]) -> str:
    return ""


def tool(name: str, parameter: str, *examples: tuple[str, Any]) -> Tool:
    return Tool(
        name,
        f"The {name} tool.",
        {"type": "object", "properties": {parameter: {"type": "string"}}, "required": [parameter]},
        nothing,
        examples=tuple(Example(prompt, {parameter: value}) for prompt, value in examples),
    )


WEATHER = tool("weather", "city", ("What's the weather in Paris?", "Paris"),
               ("Is it raining in Oslo?", "Oslo"))  # fmt: skip
STOCKS = tool("stock_price", "symbol", ("What is Apple's share price?", "AAPL"))
TRANSLATE = tool("translate", "text", ("Translate 'cat' into German.", "cat"))
TOOLS = [WEATHER, STOCKS, TRANSLATE]


def answer(due: bool, odds: float | None, *, right: bool = True, called: bool = True) -> Answer:
    kind: CaseKind = "call" if due else "unfit"
    return Answer(kind, due, called, right and due, odds, False, False, 1, 20, 0.5)


def sure_model(
    unsure_odds: float = 0.6, tools: Sequence[Tool] = TOOLS, chat: str = "from the chat"
) -> ScriptedProvider:
    """A model that opens a call on everything, sure of it only where an offered tool fits
    the request (by its tool's example), and then writes the right call. A message with
    `chat` in it gets a plain answer."""

    def respond(request: Request) -> Step | str:
        system = request.messages[0].text if request.messages[0].role == "system" else ""
        question = request.messages[-1].text
        fits = [
            (t, e)
            for t in tools
            for e in t.examples
            if e.prompt.rstrip(".?") in question and f"{t.name}" in system
        ]
        phase = request.options.phase
        if chat in question and phase is None:
            return "Hello! How can I help?"
        if request.options.grammar is not None:  # a grammar that forbids a call: words
            return "Here is what the results say."
        if phase == "call-odds":
            sure = 0.95 if fits else unsure_odds
            return Step(odds=[("{", sure), ("Sure", 1 - sure)])
        if phase == "constrained":
            calls = [{"name": t.name, "arguments": e.arguments} for t, e in fits]
            first = tools[0]
            fallback = {"name": first.name, "arguments": first.examples[0].arguments}
            return json.dumps(calls or [fallback])
        named = fits[0][0].name if fits else tools[0].name
        return Step(chunks=['{"name": "', f'{named}", "arguments"'], usage=(100, 5))

    return ScriptedProvider(
        [respond] * 5000, constrains_json=True, reports_token_odds=True, takes_grammar=True
    )
