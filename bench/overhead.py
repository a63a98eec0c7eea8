"""Streamed tokens/s through Loomchat's loop against a raw httpx client, on one llama-server.

Both sides send the same request (same prompt, temperature 0, same seed, so the same
tokens) and read the stream to the end; the rounds alternate raw/loop so that drift in
the machine's speed hits both alike. Prints each side's median and their ratio. The raw
side counts the stream's pieces (one a token); the loop's tokens are the server's own
count, since the app's guards may show a few tokens as one piece.

    python -m bench overhead [--rounds 7] [--tokens 256] [--url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import AsyncGenerator
from typing import Any

import httpx

from desktop.core.events import TextDelta, Usage
from desktop.core.loop import LoopSettings, run_turn
from desktop.core.messages import Message
from desktop.core.models.library import built_in_server
from desktop.core.providers.base import RequestOptions
from desktop.core.providers.registry import make_provider
from desktop.core.runtime import ensure_bundled_model
from desktop.core.tools.toolbox import Toolbox
from desktop.core.tracks.choice import on_track

PROMPT = "Write a long story about a lighthouse keeper, in plain prose."


async def raw_contents(
    client: httpx.AsyncClient, url: str, body: dict[str, Any]
) -> AsyncGenerator[str, None]:
    """Each piece of text a streamed chat completion sends, read straight off the wire."""
    async with client.stream("POST", f"{url}/v1/chat/completions", json=body) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            for choice in json.loads(line[6:]).get("choices") or []:
                if content := (choice.get("delta") or {}).get("content"):
                    yield content


async def raw_run(url: str, tokens: int) -> tuple[int, float]:
    body = {
        "messages": [{"role": "user", "content": PROMPT}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0,
        "seed": 1,
        "max_tokens": tokens,
    }
    count = 0
    async with httpx.AsyncClient(timeout=300, trust_env=False) as client:
        started = time.perf_counter()
        async for _ in raw_contents(client, url, body):
            count += 1
        return count, time.perf_counter() - started


async def loop_run(url: str, tokens: int) -> tuple[int, float]:
    provider = make_provider("llamacpp", url)
    active, _ = on_track(provider, "emulated")
    settings = LoopSettings(options=RequestOptions(temperature=0, seed=1, max_tokens=tokens))
    pieces = written = 0
    started = time.perf_counter()
    async for event in run_turn(active, Toolbox(), [Message.user(PROMPT)], settings=settings):
        if isinstance(event, TextDelta):
            pieces += 1
        elif isinstance(event, Usage):
            written += event.completion_tokens
    elapsed = time.perf_counter() - started
    await provider.aclose()
    return written or pieces, elapsed


async def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--url", help="an already running llama-server (default: start one)")
    args = parser.parse_args()

    server = None
    url = args.url
    if not url:
        model = ensure_bundled_model()
        server = await built_in_server(model, threads=1)
        await server.start()
        url = server.base_url
    try:
        await raw_run(url, 16)  # warm up: load pages, fill the prompt cache
        raw_rates: list[float] = []
        loop_rates: list[float] = []
        for _ in range(args.rounds):
            for runner, rates in ((raw_run, raw_rates), (loop_run, loop_rates)):
                count, seconds = await runner(url, args.tokens)
                rates.append(count / seconds)
        raw = statistics.median(raw_rates)
        through_loop = statistics.median(loop_rates)
        print(f"rounds: {args.rounds}, tokens per answer: {args.tokens}")
        print(f"raw httpx client : {raw:7.2f} tokens/s (median)")
        print(f"Loomchat loop    : {through_loop:7.2f} tokens/s (median)")
        print(f"ratio loop/raw   : {through_loop / raw:.3f} (target >= 0.98)")
    finally:
        if server:
            server.stop()


def main() -> None:
    asyncio.run(run())


if __name__ == "__main__":
    main()
