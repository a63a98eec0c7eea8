"""A call repeated right after its result: refused by the deduplicator on a card of its
own and the model asked once more (before), or answered in text at once by the emulated
track (now). Both side by side on the real llama-server, each prompt asked both ways in
turn, the order alternating.

    .venv/bin/python bench/repeats.py [--model FILE.gguf] [--samples 2]

Prints, per way: the refusals shown in the chat, the turns that called their tool, the
median seconds a turn took, the generated tokens, and how many answers were the same.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from after_tool import CASES, sampled_runs

from desktop.core.events import ToolRejected, ToolResult, TurnFinished, Usage
from desktop.core.loop import LoopSettings, run_turn
from desktop.core.messages import Message
from desktop.core.providers.base import RequestOptions
from desktop.core.providers.registry import make_provider
from desktop.core.runtime import LlamaServer, ensure_bundled_model
from desktop.core.tools.builtin import builtin_tools
from desktop.core.tools.toolbox import Toolbox
from desktop.core.tracks.constrained import ConstrainedTools

MORE_CASES = [
    ("calculator", "What is 15% of 80?"),
    ("create_chart", "Chart my steps this week: Mon 4000, Tue 6500, Wed 5200, Thu 7100."),
    ("current_time", "What's the date today?"),
]


@dataclass
class Turn:
    answer: str = ""
    refused_repeats: int = 0
    called: bool = False
    seconds: float = 0.0
    tokens: int = 0


async def one(url: str, prompt: str, tool: str, options: RequestOptions, answer: bool) -> Turn:
    provider = make_provider("llamacpp", url)
    track = ConstrainedTools(provider, answer_repeats=answer)
    turn = Turn()
    started = time.perf_counter()
    try:
        events = run_turn(track, Toolbox(builtin_tools()), [Message.user(prompt)],
                          settings=LoopSettings(options=options))  # fmt: skip
        async for event in events:
            if isinstance(event, ToolRejected) and event.stage == "repeat":
                turn.refused_repeats += 1
            elif isinstance(event, ToolResult):
                turn.called = turn.called or event.name == tool
            elif isinstance(event, Usage):
                turn.tokens += event.completion_tokens
            elif isinstance(event, TurnFinished):
                turn.answer = event.text
    finally:
        await provider.aclose()
    turn.seconds = time.perf_counter() - started
    return turn


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--samples", type=int, default=2, help="temperature 0, then seeds")
    args = parser.parse_args()
    server = LlamaServer(model=args.model or ensure_bundled_model(), threads=2)
    await server.start()
    runs = sampled_runs(args.samples)
    ways = {"before: refused, asked again": False, "now: answered in text": True}
    turns: dict[bool, list[Turn]] = {False: [], True: []}
    try:
        for number, (tool, prompt) in enumerate([*CASES, *MORE_CASES]):
            for options in runs:
                order = [False, True] if number % 2 == 0 else [True, False]
                for answer in order:
                    turn = await one(server.base_url, prompt, tool, options, answer)
                    turns[answer].append(turn)
                    print(f"[{'now' if answer else 'before'}] {tool:12} "
                          f"repeats refused {turn.refused_repeats} {turn.seconds:5.1f} s "
                          f"{turn.answer[:70]!r}", flush=True)  # fmt: skip
    finally:
        server.stop()
    same = sum(a.answer == b.answer for a, b in zip(turns[False], turns[True], strict=True))
    print("\n| way | refusals shown | tool called | seconds per turn (median) "
          "| tokens generated | same answer |\n| --- | --- | --- | --- | --- | --- |")  # fmt: skip
    for name, answer in ways.items():
        done = turns[answer]
        print(f"| {name} | {sum(t.refused_repeats for t in done)} "
              f"| {sum(t.called for t in done)}/{len(done)} "
              f"| {statistics.median(t.seconds for t in done):.2f} "
              f"| {sum(t.tokens for t in done)} | {same}/{len(done)} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
