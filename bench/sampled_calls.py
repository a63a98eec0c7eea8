"""Calls written at the chat's temperature or greedily: the BFCL development set asked as
the app asks by default (no temperature: the server's own sampling, 0.8 for llama-server),
on the uncalibrated emulated track, the constrained calls sampled (before) or greedy (now).
Side by side on the real llama-server, each case both ways in turn, the order alternating.

    .venv/bin/python bench/sampled_calls.py [--model FILE.gguf] [--seeds 1] [--first-seed 1]

The free answer, whose opening decides whether a call is made, is sampled both ways: only
how the call is written differs.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from accuracy import ASKED, CATEGORIES, CONTEXT_SIZE, ask, load_checker, read_cases, tools_of

from desktop.core.providers.registry import make_provider
from desktop.core.runtime import LlamaServer, ensure_bundled_model
from desktop.core.tracks.constrained import ConstrainedTools

WAYS = {"before: calls sampled": False, "now: calls greedy": True}


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--seeds", type=int, default=1, help="samples of each case, each way")
    parser.add_argument("--first-seed", type=int, default=1, help="the first sample's seed")
    args = parser.parse_args()
    cases = read_cases()
    checker = load_checker(Path(__file__).resolve().parent / "data" / "bfcl-dev" / "cases.jsonl")
    server = LlamaServer(
        model=args.model or ensure_bundled_model(), threads=2, context_size=CONTEXT_SIZE
    )
    await server.start()
    base = make_provider("llamacpp", server.base_url)
    right: dict[bool, dict[str, int]] = {way: defaultdict(int) for way in WAYS.values()}
    asked: dict[str, int] = defaultdict(int)
    try:
        for number, case in enumerate(cases):
            tools, names = tools_of(case)
            named = {**case, "name_map": {**case.get("name_map", {}), **names}}
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                options = replace(ASKED, temperature=None, seed=seed)  # as the app asks
                asked[case["category"]] += 1
                order = [False, True] if (number + seed) % 2 == 0 else [True, False]
                for greedy in order:
                    track = ConstrainedTools(base, greedy_calls=greedy)
                    reply, _, _ = await ask(track, case, list(tools), options=options)
                    calls = [{"name": c.name, "arguments": c.arguments} for c in reply.tool_calls]
                    ok, reason = checker.check(named, calls)
                    right[greedy][case["category"]] += ok
                    way = "greedy" if greedy else "sampled"
                    verdict = "ok" if ok else reason[:90]
                    print(f"[{way}] {case['id']} seed {seed}: {verdict}", file=sys.stderr)
    finally:
        await base.aclose()
        server.stop()
    print("| calls written | " + " | ".join(CATEGORIES) + " | all |")
    print("| --- " * (len(CATEGORIES) + 2) + "|")
    total = sum(asked.values())
    for name, greedy in WAYS.items():
        shares = [f"{right[greedy][c]}/{asked[c]}" for c in CATEGORIES]
        done = sum(right[greedy].values())
        print(f"| {name} | " + " | ".join(shares) + f" | **{done}/{total}** ({done / total:.0%}) |")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
