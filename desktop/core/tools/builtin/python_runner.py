"""`run_python`: the model writes a short Python program, the person approves it, and it
runs fenced in (see `tools/sandbox.py`); what it printed comes back, and any PNG it saved is
shown and fed back like a chart. Off until the person turns it on in Settings → Tools."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from desktop.core.messages import Image, fenced
from desktop.core.tool_spec import Example
from desktop.core.tools.sandbox import Limits, Run, run_program
from desktop.core.tools.toolbox import Tool, ToolOutput

NAME = "run_python"
LIMITS = Limits()


def run_text(run: Run, limits: Limits = LIMITS) -> str:
    """What the model reads of a run: how it ended, then what it printed, quoted."""
    if run.timed_out:
        ended = f"stopped: still running after {limits.wall_s:g} s"
    elif run.exit_code is not None and run.exit_code < 0:
        ended = f"stopped by the sandbox (its {limits.cpu_s} s of CPU, or its memory, ran out)"
    else:
        ended = f"exit code {run.exit_code}"
    parts = [ended]
    if run.stdout:
        parts.append(f"output:\n{fenced(run.stdout)}")
    if run.stderr:
        parts.append(f"errors:\n{fenced(run.stderr)}")
    if not run.stdout and not run.stderr:
        parts.append("It printed nothing: print() what the answer needs.")
    if run.cut:
        parts.append(f"[{run.cut:,} more characters of output were left out.]")
    if run.images:
        parts.append(f"[{len(run.images)} image(s) it saved are shown to the person.]")
    if run.unfenced:
        parts.append(f"[On this system: {'; '.join(run.unfenced)}.]")
    return "\n".join(parts)


def run_python_tool(workspace: Path | None = None) -> Tool:
    async def run(arguments: dict[str, Any]) -> ToolOutput:
        done = await run_program(str(arguments["code"]), LIMITS, workspace)
        return ToolOutput(run_text(done), [Image.from_bytes(data) for data in done.images])

    reads = " It may read the workspace's files (not write them)." if workspace else ""
    fences = "" if sys.platform.startswith("linux") else " (Its files are not fenced here.)"
    return Tool(
        NAME,
        "Run a short Python 3 program and get what it prints: for arithmetic on many "
        "numbers, statistics, data, dates, text processing. Print the results. A PNG it "
        "saves (matplotlib) is shown. No network, no files outside its own folder; "
        f"{LIMITS.cpu_s} s of CPU at most.{reads}{fences} The user approves it first.",
        {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "the whole program"}},
            "required": ["code"],
            "additionalProperties": False,
        },
        run,
        needs_approval=True,
        timeout_s=LIMITS.wall_s + 15,
        off_by_default=True,
        approval_per_chat=True,
        examples=(
            Example(
                "What is the standard deviation of 2, 4, 4, 4, 5, 5, 7, 9?",
                {"code": "import statistics\nprint(statistics.stdev([2, 4, 4, 4, 5, 5, 7, 9]))"},
            ),
        ),
    )
