"""The code runner against the calculator: the same questions (ten of arithmetic, ten about
data a calculator cannot do: statistics, dates, counting) asked through the app's session
with one of the two tools offered, side by side, after the app's calibration on that tool.

    .venv/bin/python -m bench code_answers [--requantize Q3_K_S] [--only calculator|run_python]

Right: the answer's last number, or one not in the question, within 0.5% (or 0.01) of the
right value. Called: the turn
ran the offered tool. Each question is asked in a new conversation; the program runs in the
real sandbox, allowed without asking (as after "always allow").
Questions: `bench/data/code/questions.json`. Writes `bench/results/code_answers.md`.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import math
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.accuracy import development_model
from bench.everyday import CONTEXT_SIZE, Seeded
from desktop.core.calibration.store import CalibrationStore
from desktop.core.events import ToolResult, TurnFailed, TurnFinished
from desktop.core.models.library import built_in_server
from desktop.core.providers.probing import CapabilityCache
from desktop.core.providers.registry import make_provider
from desktop.core.session import Session
from desktop.core.storage.chats import ChatStore
from desktop.core.storage.keychain import SecretStore
from desktop.core.storage.settings import Settings

QUESTIONS = Path(__file__).resolve().parent / "data" / "code" / "questions.json"
TOOLS = ("calculator", "run_python")
BUILT_IN = ("calculator", "current_time", "create_chart", "run_python", "fetch_url")
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?")


def right_values(question: dict[str, Any]) -> list[float]:
    scope = {"math": math, "statistics": statistics, "datetime": datetime}
    return [float(eval(e, scope)) for e in [question["answer"], *question.get("also", [])]]


def numbers(text: str) -> list[float]:
    found = []
    for match in _NUMBER.findall(text):
        try:
            found.append(float(match.replace(",", "")))
        except ValueError:
            continue
    return found


def is_right(reply: str, values: list[float], question: str = "") -> bool:
    """Whether the answer gives a right value: its last number, or one the question does
    not hold (a question's own numbers echoed back prove nothing)."""
    said = numbers(reply)
    given = set(numbers(question))
    candidates = [n for n in said if n not in given] + said[-1:]
    return any(abs(n - v) <= max(0.01, 0.005 * abs(v)) for n in candidates for v in values)


async def ask(session: Session, text: str) -> tuple[str, list[str], float]:
    conversation = session.new_conversation()
    reply, calls = "", []
    started = time.perf_counter()
    async for event in session.send(conversation, text):
        match event:
            case ToolResult():
                calls.append(event.name)
            case TurnFinished():
                reply = event.text
            case TurnFailed():
                reply = f"(failed: {event.message})"
            case _:
                pass
    return reply, calls, time.perf_counter() - started


async def measure(url: str, questions: list[dict[str, Any]], tools: list[str],
                  seed: int) -> list[dict[str, Any]]:  # fmt: skip
    base = make_provider("llamacpp", url)
    base.model = (await base.list_models() or [""])[0]
    await CapabilityCache().apply(base)
    provider = Seeded(base, seed)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for tool in tools:
            enabled = {name: name == tool for name in BUILT_IN}
            settings = Settings(backend="llamacpp", url=url, tools_enabled=enabled,
                                tool_permissions={tool: "allow"})  # fmt: skip
            store = ChatStore(Path(scratch) / f"chats-{tool}.db")
            session = Session(settings, store, SecretStore(), calibrations=CalibrationStore(None))
            session.use_provider(provider, "llamacpp")
            card = session.calibration or await session.calibrate()
            print(f"{tool}: calibrated, misses calls: {card.misses_calls}", flush=True)
            for question in questions:
                reply, calls, seconds = await ask(session, question["question"])
                right = is_right(reply, right_values(question), question["question"])
                print(f"  {tool:10} {'ok ' if right else 'BAD'} {question['kind']:10} "
                      f"{calls} {reply[:60]!r}", flush=True)  # fmt: skip
                rows.append({"tool": tool, "kind": question["kind"], "right": right,
                             "called": tool in calls, "seconds": seconds,
                             "question": question["question"], "answer": reply})  # fmt: skip
            await session.close()
    await base.aclose()
    return rows


def summary(label: str, rows: list[dict[str, Any]]) -> str:
    lines = ["| model | tool offered | arithmetic right | data right | called the tool | "
             "s per question (median) |", "| --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for tool in TOOLS:
        mine = [r for r in rows if r["tool"] == tool]
        if not mine:
            continue
        counts = {}
        for kind in ("arithmetic", "data"):
            of_kind = [r for r in mine if r["kind"] == kind]
            counts[kind] = f"{sum(r['right'] for r in of_kind)}/{len(of_kind)}"
        called = sum(r["called"] for r in mine)
        seconds = sorted(r["seconds"] for r in mine)[len(mine) // 2]
        lines.append(f"| {label} | {tool} | {counts['arithmetic']} | {counts['data']} | "
                     f"{called}/{len(mine)} | {seconds:.1f} |")  # fmt: skip
    return "\n".join(lines)


async def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requantize", metavar="TYPE")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--only", choices=TOOLS, action="append", help="this tool only")
    parser.add_argument("--out", type=Path, default=Path("bench/results/code_answers.md"))
    args = parser.parse_args()
    questions = json.loads(QUESTIONS.read_text())["questions"]
    model = development_model(args.requantize)
    server = await built_in_server(model, threads=2, context_size=CONTEXT_SIZE)
    await server.start()
    try:
        rows = await measure(server.base_url, questions, args.only or list(TOOLS), args.seed)
    finally:
        server.stop()
    text = summary(model.stem, rows)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text + "\n")
    args.out.with_suffix(".json").write_text(json.dumps(rows, indent=1))


def main() -> None:
    asyncio.run(run())


if __name__ == "__main__":
    main()
