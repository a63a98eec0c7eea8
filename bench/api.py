"""The local API (`desktop serve`) against llama-server's own API, with the same plain
`openai` client, side by side in one run on the bundled model.

    .venv/bin/python -m bench api [--requantize Q3_K_S] [--runs 20]

1. Tool-call accuracy on the BFCL development set: each case's question and tools sent
   with `tools=` by the client, the `tool_calls` it gets back scored by the set's checker.
   Through Loomchat's API the model is calibrated as `bench accuracy --modes calibrated`
   does it (on one half of the set, measured on the other, then swapped); llama-server's
   own API is what any OpenAI client gets from it.
2. The API's added latency: the same short answer (no tools, 16 tokens, greedy) asked
   directly and through the API, alternately; p50 and p95 of each and their ratio.

Writes `bench/results/api.md`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import openai

from bench.accuracy import (
    CATEGORIES,
    CONTEXT_SIZE,
    DEFAULT_CASES,
    calibrate_on,
    development_model,
    halves,
    load_checker,
    read_cases,
    tools_of,
)
from bench.report import percentiles, write_table
from desktop.api.server import ApiServer, Backend, ChatApi
from desktop.core.models.library import built_in_server
from desktop.core.providers.probing import CapabilityCache
from desktop.core.providers.registry import make_provider
from desktop.core.tracks.choice import on_track

TOKEN = "bench"


def wire_tools(case: dict[str, Any]) -> list[Any]:
    return [{"type": "function", "function": {"name": t.name, "description": t.description,
                                              "parameters": t.parameters}}
            for t in tools_of(case)[0]]  # fmt: skip


async def score(client: openai.AsyncOpenAI, cases: list[dict[str, Any]],
                checker: Any) -> list[dict[str, Any]]:  # fmt: skip
    rows = []
    for case in cases:
        names = tools_of(case)[1]
        started = time.perf_counter()
        answer = await client.chat.completions.create(
            model="m", messages=case["question"], tools=wire_tools(case),
            temperature=0, seed=7, max_tokens=384,
        )  # fmt: skip
        seconds = time.perf_counter() - started
        made = answer.choices[0].message.tool_calls or []
        calls = [{"name": c.function.name, "arguments": c.function.arguments}
                 for c in made if c.type == "function"]  # fmt: skip
        ok, _reason = checker.check({**case, "name_map": {**case.get("name_map", {}), **names}},
                                    calls)  # fmt: skip
        rows.append({"category": case["category"], "ok": ok, "seconds": seconds})
    return rows


async def through_api(url: str, cases: list[dict[str, Any]], checker: Any) -> list[dict[str, Any]]:
    rows = []
    for measured, half in enumerate(halves(cases)):
        calibration, _ = await calibrate_on(url, halves(cases)[1 - measured])
        base = make_provider("llamacpp", url)
        base.capabilities = (await CapabilityCache().capabilities(base)).capabilities
        active = on_track(base, "auto", calibration)[0]
        server = ApiServer(ChatApi(Backend.fixed(active, "bench"), TOKEN))
        await server.start()
        client = openai.AsyncOpenAI(api_key=TOKEN, base_url=server.url, max_retries=0,
                                    timeout=600)  # fmt: skip
        try:
            rows += await score(client, half, checker)
        finally:
            await client.close()
            await server.stop()
            await base.aclose()
        print(f"half {measured + 1}: {sum(r['ok'] for r in rows)}/{len(rows)} so far", flush=True)
    return rows


async def latency(url: str, runs: int) -> dict[str, list[float]]:
    base = make_provider("llamacpp", url)
    base.capabilities = (await CapabilityCache().capabilities(base)).capabilities
    active = on_track(base, "emulated")[0]
    server = ApiServer(ChatApi(Backend.fixed(active, "bench"), TOKEN))
    await server.start()
    clients = {
        "llama-server's API": openai.AsyncOpenAI(api_key="none", base_url=f"{url}/v1"),
        "Loomchat's API": openai.AsyncOpenAI(api_key=TOKEN, base_url=server.url),
    }
    times: dict[str, list[float]] = defaultdict(list)
    message: Any = [{"role": "user", "content": "Say hello in five words."}]
    try:
        for _ in range(runs + 1):  # the first round warms the server's cache: not counted
            for name, client in clients.items():
                started = time.perf_counter()
                await client.chat.completions.create(
                    model="m", messages=message, temperature=0, seed=7, max_tokens=16
                )
                times[name].append((time.perf_counter() - started) * 1000)
    finally:
        for client in clients.values():
            await client.close()
        await server.stop()
        await base.aclose()
    return {name: values[1:] for name, values in times.items()}


def accuracy_line(name: str, rows: list[dict[str, Any]]) -> tuple[str, str]:
    by = {c: [r["ok"] for r in rows if r["category"] == c] for c in CATEGORIES}
    parts = ", ".join(f"{c} {sum(v)}/{len(v)}" for c, v in by.items() if v)
    right = sum(r["ok"] for r in rows)
    seconds = sorted(r["seconds"] for r in rows)[len(rows) // 2]
    return (name, f"{right}/{len(rows)} ({right / len(rows):.0%}): {parts}; "
                  f"{seconds:.1f} s per case (median)")  # fmt: skip


async def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--requantize", metavar="TYPE")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("bench/results/api.md"))
    args = parser.parse_args()
    cases, checker = read_cases(args.cases), load_checker(args.cases)
    model = development_model(args.requantize)
    server = await built_in_server(model, threads=2, context_size=CONTEXT_SIZE)
    await server.start()
    try:
        timing = await latency(server.base_url, args.runs)
        direct = openai.AsyncOpenAI(api_key="none", base_url=f"{server.base_url}/v1",
                                    max_retries=0, timeout=600)  # fmt: skip
        try:
            native = await score(direct, cases, checker)
        finally:
            await direct.close()
        print(f"llama-server's API: {sum(r['ok'] for r in native)}/{len(native)}", flush=True)
        ours = await through_api(server.base_url, cases, checker)
    finally:
        server.stop()
    rows = [accuracy_line(f"BFCL dev through Loomchat's API, {model.stem} (calibrated on "
                          "the other half)", ours),
            accuracy_line("BFCL dev through llama-server's own API", native)]  # fmt: skip
    p = {name: percentiles(values) for name, values in timing.items()}
    for name, (p50, p95) in p.items():
        rows.append((f"a 16-token answer through {name}, p50 / p95", f"{p50:.0f} / {p95:.0f} ms"))
    ratio = p["Loomchat's API"][0] / p["llama-server's API"][0]
    rows.append(("Loomchat's API over llama-server's, p50 ratio", f"{ratio:.2f}"))
    write_table(rows, args.out)
    args.out.with_suffix(".json").write_text(json.dumps({"ours": ours, "native": native,
                                                         "timing": timing}))  # fmt: skip


def main() -> None:
    asyncio.run(run())


if __name__ == "__main__":
    main()
