"""What a model says after each built-in tool (issue 12, part 6), on the real llama-server:
for a model that cannot see, a chart's result ends with a line that says the person sees
the image; does the answer copy Loomchat's words? Each way of saying it, side by side.

    .venv/bin/python bench/after_tool.py [--model FILE.gguf] [--samples 2]

An answer "parrots" when it repeats six words in a row of Loomchat's own: the note, the
tool prompt, the step hints, a refusal's reason (a tool's result is the tool's facts:
repeating it is an answer). Each case runs at temperature 0, then with seeded sampling.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from desktop.core import loop
from desktop.core.events import ToolResult, TurnFinished
from desktop.core.loop import LoopSettings, run_turn
from desktop.core.messages import Message
from desktop.core.providers.base import RequestOptions
from desktop.core.providers.registry import make_provider
from desktop.core.runtime import LlamaServer, ensure_bundled_model
from desktop.core.tools.builtin import builtin_tools
from desktop.core.tools.toolbox import Toolbox
from desktop.core.tracks.choice import on_track
from desktop.core.tracks.prompt import NEXT_STEP_HINT, NO_TOOLS_HINT, TOOL_PROMPT_HEAD

CASES = [
    ("create_chart", "Make a bar chart of our sales: Jan 10, Feb 14, Mar 9, Apr 17."),
    ("create_chart", "Plot a line chart of temperatures: Mon 12, Tue 15, Wed 11."),
    ("create_chart", "Draw a pie chart of my budget: rent 1200, food 400, fun 200."),
    ("calculator", "What is 1234 * 5678?"),
    ("calculator", "How much is 17% of 2350?"),
    ("current_time", "What time is it in Tokyo right now?"),
]
NOTES = {
    "now": loop.NOT_SEEN,
    "none": "",
    "plain": "The user sees the image in the chat.",  # in use until 2026-12-01
    "aside": "(image shown to the user)",
}


def ours(note: str, conversation: list[Message]) -> list[str]:
    """Loomchat's own words the model read: the tool prompt, the step hints, the note on
    images, the reasons a call was refused (not the tools' results: those are facts)."""
    refused = [m.text for m in conversation if m.role == "tool" and m.rejected]
    return [TOOL_PROMPT_HEAD, NEXT_STEP_HINT, NO_TOOLS_HINT, note, *refused]


def parrots(answer: str, words: list[str], span: int = 6) -> bool:
    """Whether the answer repeats `span` words in a row from any of `words` (all of a
    shorter one: a short note copied whole counts too)."""
    said = f" {' '.join(_words(answer))} "
    for text in words:
        tokens = _words(text)
        length = min(span, len(tokens))
        for start in range(len(tokens) - length + 1) if length else ():
            if f" {' '.join(tokens[start : start + length])} " in said:
                return True
    return False


def _words(text: str) -> list[str]:
    return "".join(c.lower() if c.isalnum() else " " for c in text).split()


async def one(
    url: str, prompt: str, options: RequestOptions
) -> tuple[str, list[Message], list[str]]:
    provider = make_provider("llamacpp", url)
    active, _ = on_track(provider, "emulated")
    conversation = [Message.user(prompt)]
    answer, called = "", []
    try:
        async for event in run_turn(active, Toolbox(builtin_tools()), conversation,
                                    settings=LoopSettings(options=options)):  # fmt: skip
            if isinstance(event, ToolResult):
                called.append(event.name)
            elif isinstance(event, TurnFinished):
                answer = event.text
    finally:
        await provider.aclose()
    return answer, conversation, called


def sampled_runs(samples: int) -> list[RequestOptions]:
    """How each prompt is asked: at temperature 0, then with seeded sampling."""
    return [RequestOptions(temperature=0, max_tokens=200)] + [
        RequestOptions(temperature=0.7, seed=seed, max_tokens=200) for seed in range(1, samples)
    ]


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--samples", type=int, default=2, help="temperature 0, then seeds")
    args = parser.parse_args()
    server = LlamaServer(model=args.model or ensure_bundled_model(), threads=2)
    await server.start()
    runs = sampled_runs(args.samples)
    tally: dict[str, list[int]] = {name: [0, 0, 0] for name in NOTES}  # parrots, called, all
    try:
        for name, note in NOTES.items():
            loop.NOT_SEEN = note  # the line under test (the bench only; the app has one)
            for tool, prompt in CASES:
                for options in runs:
                    answer, conversation, called = await one(server.base_url, prompt, options)
                    copied = parrots(answer, ours(note, conversation))
                    tally[name][0] += copied
                    tally[name][1] += tool in called
                    tally[name][2] += 1
                    mark = "PARROT" if copied else ("no call" if tool not in called else "ok")
                    print(f"[{name}] {tool:12} {mark:7} {answer[:90]!r}")
    finally:
        server.stop()
    print("\nnote after an image | answers that copy Loomchat's words | tool called | cases")
    for name, (copied, called, total) in tally.items():
        print(f"{name:5} {NOTES[name][:45]!r:48} | {copied}/{total} | {called}/{total} | {total}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
