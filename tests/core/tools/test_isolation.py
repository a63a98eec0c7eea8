"""CPU-bound tool work runs in a child process that a timeout or a stop really ends."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from desktop.core.messages import ToolCall
from desktop.core.tools.isolation import WorkerCrashed, run_isolated
from desktop.core.tools.toolbox import Tool, Toolbox


def square(x: int) -> int:
    return x * x


def refuse(message: str) -> None:
    raise ValueError(message)


def spin_forever(pid_file: str) -> None:
    Path(pid_file).write_text(str(os.getpid()))
    while True:
        pass


def die() -> None:
    os._exit(3)


def spin_for(seconds: float) -> str:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass
    return "done"


async def gone(pid: int, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        await asyncio.sleep(0.05)
    return False


async def wait_for_pid(pid_file: Path) -> int:
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text():
            return int(pid_file.read_text())
        await asyncio.sleep(0.05)
    raise AssertionError("the child never started")


async def test_returns_the_value_and_raises_the_error() -> None:
    assert await run_isolated(square, 12) == 144
    with pytest.raises(ValueError, match="no thanks"):
        await run_isolated(refuse, "no thanks")


async def test_a_timeout_kills_the_child(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    task = asyncio.ensure_future(run_isolated(spin_forever, str(pid_file)))
    pid = await wait_for_pid(pid_file)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(task, 0.2)
    assert await gone(pid), "the worker kept running after its timeout"


async def test_a_child_that_dies_is_reported() -> None:
    with pytest.raises(WorkerCrashed, match="without an answer"):
        await run_isolated(die)


async def test_the_event_loop_runs_while_the_child_computes() -> None:
    ticks = 0

    async def heartbeat() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.02)
            ticks += 1

    beating = asyncio.ensure_future(heartbeat())
    assert await run_isolated(spin_for, 0.6) == "done"
    beating.cancel()
    assert ticks >= 10  # 0.6 s of CPU work left the loop free (about 30 ticks)


async def test_a_tool_timeout_stops_its_worker(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"

    async def handler(arguments: dict[str, object]) -> None:
        await run_isolated(spin_forever, str(pid_file))

    tool = Tool("spin", "spins", {"type": "object"}, handler, timeout_s=0.5)
    outcome = await Toolbox([tool]).run(ToolCall("c1", "spin", {}))
    assert outcome.error == "Tool spin timed out after 0.5 s."
    assert await gone(int(pid_file.read_text()))


FIRST_CALLS = """
import asyncio, dataclasses, json
from desktop.core.messages import ToolCall
from desktop.core.tools.builtin.calculator import CALCULATOR, calculate_now
from desktop.core.tools.isolation import run_isolated
from desktop.core.tools.toolbox import Toolbox

async def main():
    tool = dataclasses.replace(CALCULATOR, timeout_s={timeout})
    outcome = await Toolbox([tool]).run(ToolCall("c1", tool.name, {{"expression": "2+3"}}))
    value = await run_isolated(calculate_now, "4*5", timeout_s={timeout})
    print(json.dumps([outcome.error, outcome.content, value["result"]]))

if __name__ == "__main__":
    asyncio.run(main())
"""


def test_the_worker_servers_start_is_not_counted_in_a_timeout(tmp_path: Path) -> None:
    # A fresh interpreter: its first call must start the worker server (importing the
    # tools' libraries takes far longer than this timeout) and still succeed.
    script = tmp_path / "first_calls.py"
    script.write_text(FIRST_CALLS.format(timeout=0.5))
    checkout = Path(__file__).resolve().parents[3]  # this code, not an installed copy
    done = subprocess.run(
        [sys.executable, str(script)],
        env={**os.environ, "PYTHONPATH": str(checkout)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    error, content, value = json.loads(done.stdout.strip().splitlines()[-1])
    assert error is None
    assert '"result": 5' in content
    assert value == 20
