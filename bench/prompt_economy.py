"""Prompt economy of the emulated track, on the real llama-server, in one run:

1. the tool block's size in tokens against a verbose rendering of the same tools
   (pretty-printed full JSON Schemas), counted by the server's own tokenizer;
2. prompt-cache reuse on each step of a tool turn, and on each step's phases (the call
   gate's probe and the constrained call): how many of the prompt tokens llama.cpp took
   from its cache (`timings.cache_n`), i.e. how stable the prefix is.

    .venv/bin/python bench/prompt_economy.py
"""

from __future__ import annotations

import asyncio
import json

import httpx

from desktop.core.backends import make_provider, on_track
from desktop.core.builtins import builtin_tools
from desktop.core.emulation import TOOL_PROMPT_HEAD, emulated_history, render_tool_prompt
from desktop.core.loop import LoopSettings, run_turn
from desktop.core.messages import Message
from desktop.core.providers.base import RequestOptions, UsageReport
from desktop.core.runtime import LlamaServer, ensure_bundled_model
from desktop.core.tools import Toolbox
from desktop.core.trace import TracingProvider


def verbose_rendering(tools: list) -> str:  # type: ignore[type-arg]
    return "Available functions:\n\n" + "\n\n".join(
        json.dumps(t.wire_definition(), indent=4) for t in tools
    )


PHASES = {"call-odds": "call-odds probe", "constrained": "constrained call",
          "plain": "plain answer (call gate: unsure)"}  # fmt: skip


def phase_name(options: dict[str, object]) -> str:
    return PHASES.get(str(options.get("phase")), "?")


async def count_tokens(client: httpx.AsyncClient, url: str, text: str) -> int:
    response = await client.post(f"{url}/tokenize", json={"content": text})
    return len(response.json()["tokens"])


async def main() -> None:
    server = LlamaServer(model=ensure_bundled_model(), threads=2, context_size=8192)
    await server.start()
    try:
        tools = builtin_tools()
        async with httpx.AsyncClient(timeout=60) as client:
            compact = await count_tokens(client, server.base_url, render_tool_prompt(tools))
            verbose = await count_tokens(client, server.base_url, verbose_rendering(tools))
            head = await count_tokens(client, server.base_url, TOOL_PROMPT_HEAD)
        print(f"tool block, {len(tools)} tools: {compact} tokens ({head} of them the "
              f"instructions); verbose rendering: {verbose} tokens; ratio {compact / verbose:.2f}, "
              f"tools alone {(compact - head) / verbose:.2f}")  # fmt: skip

        traced = TracingProvider(make_provider("llamacpp", server.base_url))
        active, _ = on_track(traced, "emulated")
        trace = traced.start_turn("emulated")
        settings = LoopSettings(options=RequestOptions(temperature=0, seed=1, max_tokens=120))
        conversation = [Message.user("What is 1234 * 5678? Use the calculator.")]
        async for event in run_turn(active, Toolbox(tools), conversation, settings=settings):
            trace.record(event)
        for step in trace.steps:
            # A step's phases (the call gate's probe, the constrained call) reuse its prompt.
            for request in [step, *step.phases]:
                usage = request.usage or {}
                prompt, cached = usage.get("prompt_tokens", 0), usage.get("cached_tokens")
                share = f"{cached / prompt:.0%}" if prompt and cached is not None else "n/a"
                what = "" if request is step else f" {phase_name(request.options)}"
                print(f"step {step.step}{what}: prompt {prompt} tokens, "
                      f"from cache {cached} ({share})")  # fmt: skip
        # A free answer stopped at its call reports no usage; replay the first two steps'
        # prompts, one token each, for the step-to-step reuse on its own.
        provider = make_provider("llamacpp", server.base_url)
        one_token = RequestOptions(temperature=0, seed=1, max_tokens=1)
        step_ends = [1, *[i + 1 for i, m in enumerate(conversation) if m.role == "tool"][:1]]
        for number, end in enumerate(step_ends):
            history = emulated_history(conversation[:end], list(tools))
            async for event in provider.stream(history, [], one_token):
                if isinstance(event, UsageReport):
                    share = (event.cached_tokens or 0) / max(event.prompt_tokens, 1)
                    print(f"replayed step {number} prompt: {event.prompt_tokens} tokens, "
                          f"from cache {event.cached_tokens} ({share:.0%})")  # fmt: skip
        await provider.aclose()
    finally:
        server.stop()


if __name__ == "__main__":
    asyncio.run(main())
