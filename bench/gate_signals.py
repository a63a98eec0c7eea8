"""Which signal should the call gate read? Each one against the odds of a call it reads now,
side by side on the BFCL development set, through the real llama-server.

    .venv/bin/python bench/gate_signals.py [--model FILE.gguf] [--limit N]

For each case the model answers once on the ungated track (was its call right?), then
these one-token probes are read:
- `odds`: the probability that the answer opens a call (`{`, `[` or a fence): the gate's
  signal today;
- `contrast`: that probability's log-odds less those of the same request offered an
  unrelated tool instead (the mean over three), which would take out how much a request
  looks like one for a tool whatever the tool;
- `odds with reply`: the odds of a call with a `reply` tool ("answer in your own words")
  among the tools;
- `not reply`: with the call opened (`{"name": "` prefilled), the probability that it
  does not name `reply`;
- `odds x not reply`.
For each it prints the best bar on the whole set (an upper bound, chosen by hand after the
fact) with the cases right, irrelevance and simple cases right.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from accuracy import CONTEXT_SIZE, DEFAULT_CASES, ask, load_checker, read_cases, tools_of

from desktop.core.events import TokenOdds
from desktop.core.messages import Message
from desktop.core.providers.base import Provider, RequestOptions
from desktop.core.providers.registry import make_provider
from desktop.core.runtime import LlamaServer, ensure_bundled_model
from desktop.core.tool_spec import ToolSpec
from desktop.core.tracks.constrained import ConstrainedTools
from desktop.core.tracks.odds import call_odds
from desktop.core.tracks.prompt import emulated_history


def _spec(name: str, description: str, **types: str) -> ToolSpec:
    properties = {key: {"type": kind} for key, kind in types.items()}
    return ToolSpec(
        name, description, {"type": "object", "properties": properties, "required": list(types)}
    )


UNRELATED = [
    _spec("water_houseplant", "Log that a houseplant was watered.", plant="string", ml="integer"),
    _spec("set_thermostat", "Set a room's thermostat.", room="string", celsius="number"),
    _spec("feed_aquarium_fish", "Drop food into an aquarium.", tank="string", grams="number"),
]
REPLY = _spec(
    "reply",
    "Answer the user in your own words. Use it when no other tool does what the user asks.",
    text="string",
)
PROBE = RequestOptions(temperature=0, seed=7, max_tokens=1, top_logprobs=20)


async def first_token(provider: Provider, history: Sequence[Message]) -> list[tuple[str, float]]:
    alternatives: list[tuple[str, float]] = []
    async for event in provider.stream(list(history), [], PROBE):
        if isinstance(event, TokenOdds) and not alternatives:
            alternatives = event.alternatives
    return alternatives


def logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


async def signals(
    provider: Provider, messages: list[Message], tools: list[ToolSpec]
) -> dict[str, float]:
    async def odds(offered: list[ToolSpec]) -> float:
        return call_odds(await first_token(provider, emulated_history(messages, offered)))

    real = await odds(tools)
    unrelated = [await odds([t]) for t in UNRELATED]
    with_reply = emulated_history(messages, [*tools, REPLY])
    opened = call_odds(await first_token(provider, with_reply))
    names = await first_token(provider, [*with_reply, Message.assistant('{"name": "')])
    reply = sum(p for t, p in names if t.strip() and "reply".startswith(t.strip().lower()))
    return {
        "odds": real,
        "contrast": logit(real) - sum(map(logit, unrelated)) / len(unrelated),
        "odds with reply": opened,
        "not reply": 1 - reply,
        "odds x not reply": opened * (1 - reply),
    }


Signal = Callable[[dict[str, Any]], float]


def right_at(rows: list[dict[str, Any]], signal: Signal, bar: float) -> int:
    """Cases right with this bar: a call right and passed, or turned to text where no call
    was due (a case the model answered in text is as it was)."""
    return sum(
        r["ok"] if not r["called"] or signal(r) >= bar else r["category"] == "irrelevance"
        for r in rows
    )


def best_bar(rows: list[dict[str, Any]], signal: Signal) -> float:
    values = sorted({signal(r) for r in rows})
    bars = [values[0] - 1, *((a + b) / 2 for a, b in itertools.pairwise(values)), values[-1] + 1]
    return max(bars, key=lambda bar: right_at(rows, signal, bar))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path)
    parser.add_argument("--limit", type=int, help="only the first N cases")
    parser.add_argument("--out", type=Path, default=Path("bench/results/gate-signals.jsonl"))
    args = parser.parse_args()
    checker = load_checker(DEFAULT_CASES)
    cases = read_cases()
    cases = cases[: args.limit] if args.limit else cases
    server = LlamaServer(
        model=args.model or ensure_bundled_model(), threads=2, context_size=CONTEXT_SIZE
    )
    await server.start()
    base = make_provider("llamacpp", server.base_url)
    rows: list[dict[str, Any]] = []
    try:
        for case in cases:
            tools, names = tools_of(case)
            reply, _, _ = await ask(ConstrainedTools(base), case, list(tools))
            calls = [{"name": c.name, "arguments": c.arguments} for c in reply.tool_calls]
            ok, _ = checker.check(
                {**case, "name_map": {**case.get("name_map", {}), **names}}, calls
            )
            messages = [Message.user(m["content"]) for m in case["question"]]
            row = {"id": case["id"], "category": case["category"], "ok": ok, "called": bool(calls)}
            rows.append(row | await signals(base, messages, list(tools)))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    finally:
        await base.aclose()
        server.stop()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    irrelevance = [r for r in rows if r["category"] == "irrelevance"]
    simple = [r for r in rows if r["category"] == "simple"]
    perfect = sum(r["ok"] or r["category"] == "irrelevance" for r in rows)
    print(f"{len(rows)} cases; no gate: {sum(r['ok'] for r in rows)}; a perfect gate: {perfect}")
    print("| signal | best bar | right | irrelevance | simple |\n| --- | --- | --- | --- | --- |")
    for name in ("odds", "contrast", "odds with reply", "not reply", "odds x not reply"):

        def signal(r: dict[str, Any], name: str = name) -> float:
            return float(r[name])

        bar = best_bar(rows, signal)
        print(
            f"| {name} | {bar:.3f} | {right_at(rows, signal, bar)}/{len(rows)} "
            f"| {right_at(irrelevance, signal, bar)}/{len(irrelevance)} "
            f"| {right_at(simple, signal, bar)}/{len(simple)} |"
        )


if __name__ == "__main__":
    asyncio.run(main())
