"""The code runner's cost and its limits, measured side by side in one run.

    .venv/bin/python -m bench code_runner [--runs 30]

- round trip of `print(1 + 1)` through `run_program` (the fences put up, the program run,
  its output read, its folder removed) against the same program in a plain `python -I -c`
  child, p50 and p95 of each and their ratio;
- each hostile program of the tests (a loop, a fork bomb, 10 GB, a connect, a write
  outside), the seconds until it ended, against its limit;
- the event loop's longest stall while the hostile programs run (a 10 ms ticker).

Writes `bench/results/code_runner.md`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

from bench.report import percentiles, write_table
from desktop.core.tools.sandbox import Limits, run_program

HOSTILE = {
    "while True": "while True: pass",
    "fork bomb": "import os\nwhile True:\n    try:\n        os.fork()\n"
    "    except OSError:\n        pass",
    "10 GB": "b = bytearray(10 * 1024**3)",
    "connect": "import socket\nsocket.create_connection(('127.0.0.1', 9), 2)",
    "write outside": "open('/tmp/loomchat-bench-outside', 'w').write('x')",
}
LIMITS = Limits(cpu_s=5, wall_s=15)


async def plain(code: str) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-I", "-c", code, stdout=asyncio.subprocess.PIPE
    )
    await process.communicate()


async def measure(runs: int) -> list[tuple[str, str]]:
    rows = []
    fenced, bare = [], []
    for _ in range(runs):  # interleaved: the machine's noise falls on both alike
        started = time.perf_counter()
        run = await run_program("print(1 + 1)")
        fenced.append((time.perf_counter() - started) * 1000)
        assert run.stdout == "2\n", run
        started = time.perf_counter()
        await plain("print(1 + 1)")
        bare.append((time.perf_counter() - started) * 1000)
    (f50, f95), (b50, b95) = percentiles(fenced), percentiles(bare)
    rows.append(("print(1 + 1), fenced: p50 / p95", f"{f50:.0f} / {f95:.0f} ms"))
    rows.append(("the same in a plain python -I child: p50 / p95", f"{b50:.0f} / {b95:.0f} ms"))
    rows.append(("fenced ÷ plain (p50)", f"{f50 / b50:.2f}"))
    stall = 0.0

    async def ticker() -> None:
        nonlocal stall
        while True:
            before = time.perf_counter()
            await asyncio.sleep(0.01)
            stall = max(stall, time.perf_counter() - before - 0.01)

    ticking = asyncio.ensure_future(ticker())
    for name, code in HOSTILE.items():
        started = time.perf_counter()
        run = await run_program(code, LIMITS)
        seconds = time.perf_counter() - started
        how = "timed out" if run.timed_out else f"exit {run.exit_code}"
        rows.append((f"hostile: {name}", f"ended in {seconds:.1f} s ({how}); limit "
                     f"{LIMITS.cpu_s} s CPU, {LIMITS.wall_s:g} s wall"))  # fmt: skip
    ticking.cancel()
    rows.append(("event loop's longest stall meanwhile", f"{stall * 1000:.1f} ms"))
    leaked = Path("/tmp/loomchat-bench-outside").exists()
    rows.append(("file written outside", "yes" if leaked else "no"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--out", type=Path, default=Path("bench/results/code_runner.md"))
    args = parser.parse_args()
    rows = asyncio.run(measure(args.runs))
    write_table(rows, args.out)


if __name__ == "__main__":
    main()
