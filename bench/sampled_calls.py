"""Calls written at the chat's temperature or greedily: the BFCL development set asked as
the app asks by default (no temperature: the server's own sampling, 0.8 for llama-server),
on the uncalibrated emulated track, side by side on the real llama-server, each case every
way in turn, the order alternating.

    .venv/bin/python bench/sampled_calls.py [--model FILE.gguf] [--seeds 1] [--first-seed 1]
                                            [--compare calls|opening] [--server-temp T]

`--compare calls` (the default): the constrained calls sampled (before) or greedy (now);
the free answer, whose opening decides whether a call is made, is sampled both ways.
`--compare opening`: the calls greedy both ways; whether the answer opens a call sampled
(before) or decided as at temperature 0 (now: a one-token probe first, the free answer
greedy where the likeliest first token opens a call).
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

COMPARED = {
    "calls": {
        "before: calls sampled": {"greedy_calls": False, "greedy_opening": False},
        "now: calls greedy": {"greedy_calls": True, "greedy_opening": False},
    },
    "opening": {
        "before: opening sampled": {"greedy_calls": True, "greedy_opening": False},
        "now: opening greedy": {"greedy_calls": True, "greedy_opening": True},
    },
}


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--seeds", type=int, default=1, help="samples of each case, each way")
    parser.add_argument("--first-seed", type=int, default=1, help="the first sample's seed")
    parser.add_argument("--compare", choices=sorted(COMPARED), default="calls")
    parser.add_argument(
        "--server-temp",
        type=float,
        metavar="T",
        help="the server's default temperature (the bundled model's: 0.3)",
    )
    args = parser.parse_args()
    ways = COMPARED[args.compare]
    cases = read_cases()
    checker = load_checker(Path(__file__).resolve().parent / "data" / "bfcl-dev" / "cases.jsonl")
    server = LlamaServer(
        model=args.model or ensure_bundled_model(),
        threads=2,
        context_size=CONTEXT_SIZE,
        extra_args=() if args.server_temp is None else ("--temp", str(args.server_temp)),
    )
    await server.start()
    base = make_provider("llamacpp", server.base_url)
    right: dict[str, dict[str, int]] = {way: defaultdict(int) for way in ways}
    asked: dict[str, int] = defaultdict(int)
    try:
        for number, case in enumerate(cases):
            tools, names = tools_of(case)
            named = {**case, "name_map": {**case.get("name_map", {}), **names}}
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                options = replace(ASKED, temperature=None, seed=seed)  # as the app asks
                asked[case["category"]] += 1
                order = list(ways) if (number + seed) % 2 == 0 else list(reversed(ways))
                for way in order:
                    track = ConstrainedTools(base, **ways[way])
                    reply, _, _ = await ask(track, case, list(tools), options=options)
                    calls = [{"name": c.name, "arguments": c.arguments} for c in reply.tool_calls]
                    ok, reason = checker.check(named, calls)
                    right[way][case["category"]] += ok
                    verdict = "ok" if ok else reason[:90]
                    print(f"[{way}] {case['id']} seed {seed}: {verdict}", file=sys.stderr)
    finally:
        await base.aclose()
        server.stop()
    print(f"| {args.compare} | " + " | ".join(CATEGORIES) + " | all |")
    print("| --- " * (len(CATEGORIES) + 2) + "|")
    total = sum(asked.values())
    for name in ways:
        shares = [f"{right[name][c]}/{asked[c]}" for c in CATEGORIES]
        done = sum(right[name].values())
        print(f"| {name} | " + " | ".join(shares) + f" | **{done}/{total}** ({done / total:.0%}) |")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
