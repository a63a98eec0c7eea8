"""Does the model's answer after `calculator` state the right number? The calculator's
result as it was (an exact fraction, `"result": "799/2", "decimal": "399.5"`) and as it is
(a decimal, with the fraction beside it only where the decimal is rounded), side by side
on the real llama-server, each question asked both ways in turn.

    .venv/bin/python bench/calculator_answers.py [--model FILE.gguf] [--samples 3]

An answer is right when a number in it is the result, or the result rounded to two or more
decimal places. Each question runs at temperature 0,
then with seeded sampling.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from after_tool import sampled_runs

from desktop.core.events import ToolResult, TurnFinished
from desktop.core.loop import LoopSettings, run_turn
from desktop.core.messages import Message
from desktop.core.providers.base import RequestOptions
from desktop.core.providers.registry import make_provider
from desktop.core.runtime import LlamaServer, ensure_bundled_model
from desktop.core.tools.builtin import builtin_tools
from desktop.core.tools.builtin.calculator import CALCULATOR, evaluate
from desktop.core.tools.toolbox import Tool, Toolbox
from desktop.core.tracks.choice import on_track

# Questions whose result is not a whole number, with that result.
QUESTIONS = [
    ("How much is 17% of 2350?", Fraction(7990, 20)),
    ("What is 0.1 + 0.2?", Fraction(3, 10)),
    ("Split a bill of 250 dollars between 4 people: how much does each pay?", Fraction(125, 2)),
    ("What is 7 divided by 8?", Fraction(7, 8)),
    ("What is 22 divided by 7?", Fraction(22, 7)),
    ("What's the average of 3, 4 and 9?", Fraction(16, 3)),
    ("A shirt costs 40 dollars with 12% off. What do I pay?", Fraction(176, 5)),
    ("I drove 150 km in 1.75 hours. What was my average speed in km/h?", Fraction(600, 7)),
    ("Convert 100 Fahrenheit to Celsius.", Fraction(340, 9)),
    ("What is 3.5% of 1200?", Fraction(42)),
]
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


async def fraction_first(arguments: dict[str, Any]) -> dict[str, Any]:
    """The result as the calculator gave it until 2026-12-03."""
    value = evaluate(str(arguments["expression"]))
    if value.denominator == 1:
        return {"expression": arguments["expression"], "result": value.numerator}
    decimal = f"{float(value):.15g}"
    exact = f"{value.numerator}/{value.denominator}"
    return {"expression": arguments["expression"], "result": exact, "decimal": decimal}


WAYS: dict[str, Tool] = {
    "before: the fraction": replace(CALCULATOR, handler=fraction_first),
    "now: a decimal": CALCULATOR,
}


def states(answer: str, value: Fraction) -> bool:
    """Whether a number in the answer is `value`, rounded to that number's places."""
    for text in _NUMBER.findall(answer):
        number = text.replace(",", "")
        places = len(number.partition(".")[2])
        if Fraction(number) == value:
            return True
        if places >= 2 and round(value, places) == Fraction(number):
            return True  # rounded, as a person would ("33" for 33.33 is not it)
    return False


async def one(
    url: str, question: str, calculator: Tool, options: RequestOptions
) -> tuple[str, bool]:
    provider = make_provider("llamacpp", url)
    active, _ = on_track(provider, "emulated")
    tools = [calculator if tool.name == "calculator" else tool for tool in builtin_tools()]
    answer, called = "", False
    try:
        async for event in run_turn(active, Toolbox(tools), [Message.user(question)],
                                    settings=LoopSettings(options=options)):  # fmt: skip
            if isinstance(event, ToolResult):
                called = called or event.name == "calculator"
            elif isinstance(event, TurnFinished):
                answer = event.text
    finally:
        await provider.aclose()
    return answer, called


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--samples", type=int, default=3, help="temperature 0, then seeds")
    args = parser.parse_args()
    server = LlamaServer(model=args.model or ensure_bundled_model(), threads=2)
    await server.start()
    tally = {way: [0, 0, 0] for way in WAYS}  # right, calculator called, asked
    try:
        for number, (question, value) in enumerate(QUESTIONS):
            for options in sampled_runs(args.samples):
                ways = list(WAYS) if number % 2 == 0 else list(reversed(WAYS))
                for way in ways:
                    answer, called = await one(server.base_url, question, WAYS[way], options)
                    right = states(answer, value)
                    counts = tally[way]
                    counts[0] += right
                    counts[1] += called
                    counts[2] += 1
                    mark = "right" if right else ("no call" if not called else "WRONG")
                    print(f"[{way[:6]}] {mark:7} {float(value):9.4g} {answer[:80]!r}", flush=True)
    finally:
        server.stop()
    print("\n| calculator's result | answers stating it | calculator called | asked |")
    print("| --- | --- | --- | --- |")
    for way, (right, called, asked) in tally.items():
        print(f"| {way} | {right}/{asked} | {called}/{asked} | {asked} |")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
