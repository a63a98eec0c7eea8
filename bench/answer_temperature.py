"""What the answers after the built-in tools look like at a few temperatures: the app's
default until now (none sent: llama-server samples at 0.8) beside lower ones, on the real
llama-server, each prompt asked at every temperature in turn with the same seeds.

    .venv/bin/python bench/answer_temperature.py [--model FILE.gguf] [--seeds 3]
                                                [--temperatures server,0.5,0.3]

Prompts: bench/after_tool.py's, bench/repeats.py's, and bench/calculator_answers.py's
questions (whose result is known). Counted per temperature: the tool called; answers
wrapped like JSON (`["The result is 7006652"]`); answers that copy Loomchat's words
(after_tool.parrots), or that are only the header of a result in the prompt ("[Result of
calculator]"); calculator answers that state the result.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from after_tool import CASES, one, ours, parrots
from calculator_answers import QUESTIONS, states
from repeats import MORE_CASES

from desktop.core import loop
from desktop.core.providers.base import RequestOptions
from desktop.core.runtime import LlamaServer, ensure_bundled_model

PROMPTS: list[tuple[str, str, Fraction | None]] = [
    *((tool, prompt, None) for tool, prompt in [*CASES, *MORE_CASES]),
    *(("calculator", question, value) for question, value in QUESTIONS),
]


def wrapped(answer: str) -> bool:
    return answer.strip().startswith(("[", "{", '"'))


def header_only(answer: str, called: list[str]) -> bool:
    """The answer is the line Loomchat puts above a tool's result, and nothing else."""
    bare = answer.strip().strip("[]\"'.").lower()
    return any(bare == f"result of {name}" for name in called)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--temperatures", default="server,0.5,0.3")
    args = parser.parse_args()
    temperatures = [None if t == "server" else float(t) for t in args.temperatures.split(",")]
    server = LlamaServer(model=args.model or ensure_bundled_model(), threads=2)
    await server.start()
    # called, wrapped, parrots, asked; calculator answers right, calculator questions
    tally = {t: [0, 0, 0, 0, 0, 0] for t in temperatures}
    try:
        for number, (tool, prompt, value) in enumerate(PROMPTS):
            for seed in range(1, args.seeds + 1):
                order = temperatures if number % 2 == 0 else list(reversed(temperatures))
                for temperature in order:
                    options = RequestOptions(temperature=temperature, seed=seed, max_tokens=200)
                    answer, conversation, called = await one(server.base_url, prompt, options)
                    counts = tally[temperature]
                    counts[0] += tool in called
                    counts[1] += wrapped(answer)
                    copied = parrots(answer, ours(loop.NOT_SEEN, conversation))
                    counts[2] += copied or header_only(answer, called)
                    counts[3] += 1
                    if value is not None:
                        counts[4] += states(answer, value)
                        counts[5] += 1
                    name = "server" if temperature is None else temperature
                    print(f"[{name}] {tool:12} {answer[:90]!r}", flush=True)
    finally:
        server.stop()
    print("\n| temperature | tool called | wrapped like JSON | copies Loomchat's words "
          "| calculator results stated |")  # fmt: skip
    print("| --- | --- | --- | --- | --- |")
    for temperature, (called, wraps, copies, asked, right, questions) in tally.items():
        name = "none sent (server: 0.8)" if temperature is None else f"{temperature}"
        print(f"| {name} | {called}/{asked} | {wraps}/{asked} | {copies}/{asked} "
              f"| {right}/{questions} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
