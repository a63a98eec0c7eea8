"""How long a calibration takes, side by side in one run, on the real llama-server.

    .venv/bin/python bench/calibration_speed.py [--model FILE.gguf] [--half 1|2]
                                                [--variant "" --variant "--cache-reuse 256"]

The bundled model is calibrated as `bench/accuracy.py --calibrated` does it on half 1 (or
2) of the BFCL development set's tools, once per server variant (extra llama-server arguments)
and per reading order: the questions in the order of their prompts' text (the app's), and
in their own order. Every run gets a fresh server, so no run starts from a prompt cache an
earlier one filled. Prints each run's seconds, its ratio to the first, the seconds per
question of each kind, and the bars chosen (a faster run must choose the same bars).
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.accuracy import CONTEXT_SIZE, DEFAULT_CASES, calibrate_on, read_cases
from desktop.core.calibration.card import Calibration
from desktop.core.runtime import LlamaServer, ensure_bundled_model


async def calibrate(
    model: Path, server_args: list[str], in_prompt_order: bool, cases: list[dict[str, Any]]
) -> tuple[Calibration, list[dict[str, Any]]]:
    """A calibration on a fresh server, and its answers (kind, seconds, ...)."""
    server = LlamaServer(model=model, threads=2, context_size=CONTEXT_SIZE, extra_args=server_args)
    await server.start()
    try:
        return await calibrate_on(server.base_url, cases, in_prompt_order=in_prompt_order)
    finally:
        server.stop()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help="a GGUF file (default: the bundled model)")
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--variant", action="append", metavar="ARGS",
                        help='extra llama-server arguments; repeat (default: "" only)')  # fmt: skip
    parser.add_argument("--orders", default="prompt,own", help="prompt, own, or both")
    parser.add_argument("--half", type=int, choices=(1, 2), default=1,
                        help="the half of the set whose tools calibrate")  # fmt: skip
    args = parser.parse_args()
    model = args.model or ensure_bundled_model()
    cases = read_cases(args.cases)
    half = cases[args.half - 1 :: 2]  # as bench/accuracy.py splits the set
    rows = []
    for variant in args.variant or [""]:
        for order in args.orders.split(","):
            started = time.perf_counter()
            calibration, answers = await calibrate(
                model, shlex.split(variant), order == "prompt", half
            )
            took = time.perf_counter() - started
            by_kind: dict[str, list[float]] = defaultdict(list)
            for answer in answers:
                by_kind[answer["kind"]].append(answer["seconds"])
            rows.append((variant or "(default)", order, took, calibration, by_kind))
            print(f"{variant or '(default)'}, {order} order: {took:.0f} s", file=sys.stderr)
    first = rows[0][2]
    print("| server | order | seconds | ratio | openings (s) | bars | track |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for variant, order, took, calibration, by_kind in rows:
        openings = sum(sum(v) for v in by_kind.values())
        later = calibration.later_bar
        bars = f"{calibration.bar:.3f} / " + ("-" if later is None else f"{later:.3f}")
        print(
            f"| {variant} | {order} | {took:.0f} | {took / first:.2f}x | {openings:.0f} "
            f"| {bars} | {calibration.track} |"
        )
    print("\nSeconds per question read at its opening (median, by kind):\n")
    kinds = sorted({k for row in rows for k in row[4]})
    print("| server | order | " + " | ".join(kinds) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in kinds) + " |")
    for variant, order, _, _, by_kind in rows:
        cells = [f"{statistics.median(by_kind[k]):.1f}" if by_kind[k] else "-" for k in kinds]
        print(f"| {variant} | {order} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    asyncio.run(main())
