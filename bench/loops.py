"""Answers that go round in circles: the app's answer against the server's, side by side.

    python -m bench loops [--seeds 3] [--requantize Q3_K_S] [--model FILE.gguf] [--url URL]

Asks the bundled model (or `--model`, or the bundled model requantized) requests that invite
a small model to write a list or a paragraph, greedily and at the server's own temperature
with a seed per round: once through Loomchat's loop (the emulated track, nothing offered, as
a chat with no tools asks), and once straight to the server with the same prompt, seed and
token budget (the app's answer budget in the built-in server's context). Prints each
answer's characters and seconds on both sides, and whether the server's went round in
circles (as the app's own guard reads it, after the fact); then, over the answers that did,
the median of the app's seconds over the server's, and how many of them the app ended after
their first saying.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

import httpx

from bench.accuracy import development_model
from bench.overhead import raw_contents
from desktop.core.events import TurnFinished, TurnWarning
from desktop.core.loop import LoopSettings, run_turn
from desktop.core.messages import Message
from desktop.core.providers.base import RequestOptions
from desktop.core.providers.registry import make_provider
from desktop.core.runtime import LlamaServer
from desktop.core.tools.toolbox import Toolbox
from desktop.core.tracks.choice import on_track
from desktop.core.tracks.fitting import answer_budget
from desktop.core.tracks.repeats import NOTICE, RepeatGuard

BUDGET = answer_budget(LlamaServer.context_size)
REQUESTS = (
    "What should I prepare for a job interview?",
    "Give me tips for sleeping better.",
    "What should I pack for a beach holiday?",
    "How can I save money on groceries?",
    # Explanations, which a small model may write as one paragraph that loops.
    "How does a bicycle gear work?",
    "Explain how a volcano erupts.",
)


def options(seed: int | None) -> dict[str, object]:
    """The request's sampling: greedy, or the server's own temperature with a seed."""
    return {"temperature": 0} if seed is None else {"seed": seed}


async def server_answer(url: str, request: str, seed: int | None) -> tuple[str, float]:
    body = {"messages": [{"role": "user", "content": request}], "stream": True,
            "max_tokens": BUDGET, **options(seed)}  # fmt: skip
    text = ""
    async with httpx.AsyncClient(timeout=600, trust_env=False) as client:
        started = time.perf_counter()
        async for content in raw_contents(client, url, body):
            text += content
        return text, time.perf_counter() - started


async def app_answer(url: str, request: str, seed: int | None) -> tuple[str, float, bool]:
    """The answer through the loop, its seconds, and whether the app said it looped."""
    provider = make_provider("llamacpp", url)
    active, _ = on_track(provider, "emulated")
    sampling = RequestOptions(temperature=0 if seed is None else None, seed=seed,
                              max_tokens=BUDGET)  # fmt: skip
    text, warned = "", False
    started = time.perf_counter()
    turn = run_turn(active, Toolbox(), [Message.user(request)],
                    settings=LoopSettings(options=sampling))  # fmt: skip
    async for event in turn:
        match event:
            case TurnWarning():
                warned = warned or event.message == NOTICE
            case TurnFinished():
                text = event.text
            case _:
                pass
    elapsed = time.perf_counter() - started
    await provider.aclose()
    return text, elapsed, warned


def looped(text: str) -> bool:
    guard = RepeatGuard()
    guard.feed(text)
    guard.flush()
    return guard.cut is not None


async def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3, help="sampled rounds per request")
    parser.add_argument("--model", type=Path, help="a GGUF file (default: the bundled model)")
    parser.add_argument("--requantize", metavar="TYPE", help="the bundled model requantized")
    parser.add_argument("--url", help="an already running llama-server (default: start one)")
    args = parser.parse_args()
    server = None
    url = args.url
    if not url:
        server = LlamaServer(model=development_model(args.requantize, args.model))
        await server.start()
        url = server.base_url
    ratios: list[float] = []
    ended = 0
    try:
        await server_answer(url, "Hi", None)  # load the model's pages
        for request in REQUESTS:
            for seed in [None, *range(1, args.seeds + 1)]:
                raw, raw_s = await server_answer(url, request, seed)
                text, app_s, warned = await app_answer(url, request, seed)
                loop = looped(raw)
                if loop:
                    ratios.append(app_s / raw_s)
                    ended += warned
                print(f"{request[:40]:40} {'greedy' if seed is None else f'seed {seed}':7} "
                      f"server {len(raw):6} chars {raw_s:6.1f} s{' looped' if loop else '       '}"
                      f"  app {len(text):6} chars {app_s:6.1f} s{' ended' if warned else ''}",
                      flush=True)  # fmt: skip
    finally:
        if server:
            server.stop()
    if ratios:
        print(f"answers that looped: {len(ratios)}; ended by the app after their first saying: "
              f"{ended}; the app's seconds ÷ the server's (median): "
              f"{statistics.median(ratios):.2f}")  # fmt: skip
    else:
        print("no answer looped")


def main() -> None:
    asyncio.run(run())


if __name__ == "__main__":
    main()
