"""Prompt economy of the emulated track, on the real llama-server, in one run:

1. the tool block's size in tokens against a verbose rendering of the same tools
   (pretty-printed full JSON Schemas), counted by the server's own tokenizer;
2. prompt-cache reuse on each step of a tool turn, and on each step's phases (the call
   gate's probe and the constrained call): how many of the prompt tokens llama.cpp took
   from its cache (`timings.cache_n`), i.e. how stable the prefix is;
3. the answers that may not call (a plain answer after a call the gate turned down, and
   the last step once tools are withdrawn), side by side: keeping the tool prompt with a
   grammar that forbids a call, against dropping the tool block;
4. a conversation's second turn with a system prompt (a preset's) and without: the tool
   block follows the system prompt, so the prefix stays stable from turn to turn and the
   reuse must not drop.

    .venv/bin/python bench/prompt_economy.py
"""

from __future__ import annotations

import asyncio
import json

import httpx

from desktop.core.events import TurnFinished, UsageReport
from desktop.core.loop import LoopSettings, run_turn
from desktop.core.messages import Message
from desktop.core.providers.base import RequestOptions
from desktop.core.providers.registry import make_provider
from desktop.core.runtime import LlamaServer, ensure_bundled_model
from desktop.core.tools.builtin import builtin_tools
from desktop.core.tools.toolbox import Toolbox
from desktop.core.tracing import TracingProvider
from desktop.core.tracks.choice import on_track
from desktop.core.tracks.constrained import ConstrainedTools
from desktop.core.tracks.prompt import TOOL_PROMPT_HEAD, emulated_history, render_tool_prompt


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
        await answers_without_calls(server.base_url, tools)
        await second_turn_with_a_system_prompt(server.base_url, tools)
    finally:
        server.stop()


async def answers_without_calls(url: str, tools: list) -> None:  # type: ignore[type-arg]
    """Cache reuse of the answers that may not call, prefix kept against dropped."""
    print("\nanswers that may not call | tool prompt kept (grammar) | tool block dropped")
    rows: dict[str, list[str]] = {}
    for keep in (True, False):
        provider = make_provider("llamacpp", url)
        traced = TracingProvider(provider)
        options = RequestOptions(temperature=0, seed=1, max_tokens=60)
        # The gate turns every call down (bar above any odds): the plain answer follows.
        unsure = ConstrainedTools(traced, min_call_odds=1.01, keep_prefix=keep)
        trace = traced.start_turn("emulated")
        question = [Message.user("What is 1234 * 5678? Use the calculator.")]
        async for event in run_turn(unsure, Toolbox(tools), question,
                                    settings=LoopSettings(options=options)):  # fmt: skip
            trace.record(event)
        plain = next(p for s in trace.steps for p in s.phases if p.options.get("phase") == "plain")
        rows.setdefault("plain answer after an unsure call", []).append(_reuse(plain.usage))
        answer = trace.outcome.text if isinstance(trace.outcome, TurnFinished) else ""
        rows.setdefault("  its answer", []).append(repr(answer[:60]))
        # One call allowed: the second step is the last, its tools withdrawn.
        sure = ConstrainedTools(traced, min_call_odds=0.0, keep_prefix=keep)
        trace = traced.start_turn("emulated")
        question = [Message.user("What is 1234 * 5678? Use the calculator.")]
        settings = LoopSettings(max_tool_calls=1, options=options)
        async for event in run_turn(sure, Toolbox(tools), question, settings=settings):
            trace.record(event)
        last = trace.steps[-1]
        rows.setdefault("last step, tools withdrawn", []).append(_reuse(last.usage))
        answer = trace.outcome.text if isinstance(trace.outcome, TurnFinished) else ""
        rows.setdefault("  its answer", []).append(repr(answer[:60]))
        await provider.aclose()
    for name, cells in rows.items():
        print(f"{name} | " + " | ".join(cells))


async def second_turn_with_a_system_prompt(url: str, tools: list) -> None:  # type: ignore[type-arg]
    """Cache reuse on a conversation's second turn, without and with a system prompt."""
    print("\nsecond turn of a conversation | no system prompt | with a system prompt")
    rows: dict[str, list[str]] = {}
    for system in ("", "You are a patient tutor. Answer briefly and plainly."):
        provider = make_provider("llamacpp", url)
        traced = TracingProvider(provider)
        active, _ = on_track(traced, "emulated")
        options = RequestOptions(temperature=0, seed=1, max_tokens=60)
        conversation = [*([Message.system(system)] if system else []),
                        Message.user("What is 1234 * 5678? Use the calculator.")]  # fmt: skip
        traces = []
        for turn in range(2):
            trace = traced.start_turn("emulated")
            async for event in run_turn(active, Toolbox(tools), conversation,
                                        settings=LoopSettings(options=options)):  # fmt: skip
                trace.record(event)
            traces.append(trace)
            if turn == 0:
                conversation.append(Message.user("Now divide that by 2."))
        first = trace.steps[0]
        usages = [r.usage for r in [first, *first.phases] if r.usage]
        rows.setdefault("first step of turn 2", []).append(_reuse(usages[0] if usages else None))
        # The free answer is stopped once it opens a call, so the server reports no timings
        # for it: the prefix it can reuse is counted on the two prompts instead.
        last = traces[0].steps[-1]
        last = (last.phases or [last])[-1]
        same, total = await shared_prefix(url, last.messages, first.messages)
        rows.setdefault("turn 2's first prompt: tokens shared with turn 1's last", []).append(
            f"{same}/{total} ({same / max(total, 1):.0%})"
        )
        await provider.aclose()
    for name, cells in rows.items():
        print(f"{name} | " + " | ".join(cells))


async def shared_prefix(
    url: str, before: list[dict[str, object]], after: list[dict[str, object]]
) -> tuple[int, int]:
    """How many tokens the second prompt shares, from its start, with the first (what the
    server's prompt cache can keep), and its length; both through the model's template."""
    tokens = []
    async with httpx.AsyncClient(timeout=60) as client:
        for messages in (before, after):
            chat = [{"role": m["role"], "content": _text(m)} for m in messages]
            rendered = await client.post(f"{url}/apply-template", json={"messages": chat})
            prompt = rendered.json()["prompt"]
            tokenized = await client.post(f"{url}/tokenize", json={"content": prompt})
            tokens.append(tokenized.json()["tokens"])
    same = next(
        (i for i, (a, b) in enumerate(zip(*tokens, strict=False)) if a != b), min(map(len, tokens))
    )
    return same, len(tokens[1])


def _text(message: dict[str, object]) -> str:
    parts = message.get("parts") or []
    return "".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))  # type: ignore[union-attr]


def _reuse(usage: dict[str, int] | None) -> str:
    usage = usage or {}
    prompt, cached = usage.get("prompt_tokens", 0), usage.get("cached_tokens") or 0
    return f"{cached}/{prompt} from cache ({cached / max(prompt, 1):.0%})"


if __name__ == "__main__":
    asyncio.run(main())
