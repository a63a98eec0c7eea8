"""How much memory llama-server's prompt cache takes over many different prompts, side by
side per bound on it, on the real server and the bundled model.

    .venv/bin/python bench/prompt_cache_memory.py [--prompts 60]

The server keeps every prompt it has evaluated in host memory (`--cache-ram`, llama.cpp's
default 8 GiB) so that a later request starting the same way is not evaluated again: the
calibration's questions and a chat's second look rely on it. Each bound gets a fresh server
and the same distinct prompts (a BFCL case's tools and question each, as the emulated track
writes them), one token each; printed: the server's resident memory after the first prompt
and after the last. Bounds: llama.cpp's own default; the app's (`prompt_cache_mib`, from
this machine's memory); and a small one, to show that a bound binds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.accuracy import CONTEXT_SIZE, question_of, read_cases, tools_of
from desktop.core.messages import Message
from desktop.core.runtime import (
    PROMPT_CACHE_VARIABLE,
    LlamaServer,
    ensure_bundled_model,
    prompt_cache_mib,
)
from desktop.core.tracks.prompt import emulated_history

MIB = 1024 * 1024


def prompts(count: int) -> list[list[dict[str, str]]]:
    made = []
    for case in read_cases()[:count]:
        history = emulated_history([Message.user(question_of(case))], tools_of(case)[0])
        made.append([{"role": m.role, "content": m.text} for m in history])
    return made


async def measure(bound: str | None, asked: list[list[dict[str, str]]]) -> dict[str, float]:
    env = {PROMPT_CACHE_VARIABLE: bound} if bound is not None else {}
    server = LlamaServer(
        model=ensure_bundled_model(), threads=2, context_size=CONTEXT_SIZE, environment=env
    )
    await server.start()
    assert server.process is not None
    process = psutil.Process(server.process.pid)
    row: dict[str, float] = {}
    try:
        async with httpx.AsyncClient(base_url=server.base_url, timeout=600) as client:

            async def ask(messages: list[dict[str, str]]) -> None:
                body = {"messages": messages, "max_tokens": 1, "temperature": 0}
                (await client.post("/v1/chat/completions", json=body)).raise_for_status()

            await ask(asked[0])
            row["after first (MiB)"] = process.memory_info().rss / MIB
            for messages in asked[1:]:
                await ask(messages)
            row["after all (MiB)"] = process.memory_info().rss / MIB
    finally:
        server.stop()
    return row


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=60)
    args = parser.parse_args()
    asked = prompts(args.prompts)
    memory = psutil.virtual_memory().total
    ours = prompt_cache_mib(memory)
    bounds = [("llama.cpp default (8192 MiB)", None), (f"the app's ({ours} MiB)", str(ours)),
              ("small (64 MiB)", "64")]  # fmt: skip
    rows = []
    for name, bound in bounds:
        rows.append((name, await measure(bound, asked)))
        print(f"{name}: done", file=sys.stderr)
    grown = rows[0][1]["after all (MiB)"] - rows[0][1]["after first (MiB)"]
    print(f"{len(asked)} different prompts, one token each; machine memory "
          f"{memory // MIB} MiB\n")  # fmt: skip
    print("| bound | MiB after the first | after all | growth | growth ratio |")
    print("| --- | --- | --- | --- | --- |")
    for name, row in rows:
        growth = row["after all (MiB)"] - row["after first (MiB)"]
        print(
            f"| {name} | {row['after first (MiB)']:.0f} | {row['after all (MiB)']:.0f} "
            f"| {growth:+.0f} | {growth / grown if grown else 0:.2f}x |"
        )


if __name__ == "__main__":
    os.environ.pop(PROMPT_CACHE_VARIABLE, None)  # each run sets its own
    asyncio.run(main())
