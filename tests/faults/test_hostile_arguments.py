"""Hostile tool arguments from a model, through the whole loop and the real built-in tools:
huge numbers, deep nesting, huge arrays and strings, wrong types, paths that climb out.
Each turn ends with an answer or a message, within seconds; a call that breaks its
schema never reaches its handler."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from desktop.core.events import ToolResult, TurnFailed, TurnFinished, event_to_dict
from desktop.core.loop import run_turn
from desktop.core.messages import Message, ToolCall
from desktop.core.providers.base import Provider
from desktop.core.tools.builtin import builtin_tools
from desktop.core.tools.toolbox import Tool, Toolbox, validate_arguments
from desktop.core.tracks.emulated import EmulatedTools
from tests.support.fakes import ScriptedProvider, Step


def deep(levels: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


BIG = "x" * 5_000_000
HOSTILE: dict[str, tuple[str, Any]] = {
    "5,000-digit number as text": ("calculator", {"expression": "9" * 5000}),
    "a power tower": ("calculator", {"expression": "((1/3)**10000)**10000"}),
    "5 MB expression": ("calculator", {"expression": BIG}),
    "expression as a list": ("calculator", {"expression": ["1+1"]}),
    "expression nested 100,000 deep": ("calculator", {"expression": deep(100_000)}),
    "expression null": ("calculator", {"expression": None}),
    "400-digit integer where a number goes": ("create_chart", {
        "type": "bar", "title": "t", "labels": ["a"], "values": ["1" + "0" * 400]}),
    "a million points": ("create_chart", {
        "type": "bar", "title": "t", "labels": ["a"] * 1_000_000, "values": [1] * 1_000_000}),
    "infinite and NaN values": ("create_chart", {
        "type": "line", "title": "t", "labels": ["a", "b"], "values": [float("inf"), float("nan")]}),
    "1e308 values": ("create_chart", {
        "type": "pie", "title": "t", "labels": ["a", "b"], "values": [1e308, 1e308]}),
    "series nested deep": ("create_chart", {
        "type": "bar", "title": "t", "labels": ["a"], "values": [1],
        "more_series": deep(50, {"name": "n", "values": [1]})}),
    "5 MB title": ("create_chart", {"type": "bar", "title": BIG, "labels": ["a"], "values": [1]}),
    "time zone climbing out": ("current_time", {"timezone": "../../../../etc/passwd"}),
    "time zone with NUL": ("current_time", {"timezone": "Europe/\x00Paris"}),
    "5 MB time zone": ("current_time", {"timezone": BIG}),
    "path with NUL": ("read_file", {"path": "notes\x00.txt"}),
    "path climbing 1,000 levels": ("read_file", {"path": "../" * 1000 + "etc/passwd"}),
    "5 MB path": ("read_file", {"path": BIG}),
    "path as an object": ("list_files", {"path": {"..": ".."}}),
    "write outside": ("write_file", {"path": "../escaped.txt", "content": "x"}),
    "5 MB content": ("write_file", {"path": "big.txt", "content": BIG}),
    "content with a lone surrogate": ("write_file", {"path": "half.txt", "content": "a\ud83db"}),
    "unknown tool with huge arguments": ("no_such_tool", {"a": deep(10_000)}),
    "a file URL": ("fetch_url", {"url": "file:///etc/passwd"}),
    "the cloud metadata address": ("fetch_url", {"url": "http://169.254.169.254/latest/"}),
    "this machine by name": ("fetch_url", {"url": "http://localhost:22/"}),
    "5 MB URL": ("fetch_url", {"url": "https://example.org/" + BIG}),
    "URL with NUL": ("fetch_url", {"url": "http://example.org/\x00"}),
}  # fmt: skip


class Spy:
    """The built-in tools, each handler wrapped to record the arguments it was run with."""

    def __init__(self, workspace: Path) -> None:
        self.ran: list[tuple[Tool, dict[str, Any]]] = []
        self.tools = [self._wrapped(t) for t in builtin_tools(workspace)]

    def _wrapped(self, tool: Tool) -> Tool:
        from dataclasses import replace

        async def handler(arguments: dict[str, Any]) -> Any:
            self.ran.append((tool, arguments))
            return await tool.handler(arguments)

        return replace(tool, handler=handler, timeout_s=min(tool.timeout_s, 20))


async def approve(call: ToolCall, tool: Tool) -> bool:
    return True


async def check_turn(provider: Provider, spy: Spy, tmp_path: Path) -> None:
    conversation = [Message.user("Do it.")]
    started = time.monotonic()
    turn = run_turn(provider, Toolbox(spy.tools), conversation, approver=approve)
    events = await asyncio.wait_for(_collect(turn), 60)
    assert time.monotonic() - started < 30
    end = events[-1]
    assert isinstance(end, TurnFinished | TurnFailed)
    for tool, arguments in spy.ran:  # nothing that breaks its schema ran
        assert validate_arguments(tool, arguments) is None
    for result in (e for e in events if isinstance(e, ToolResult)):
        assert len(result.content) <= 20_000  # results are capped
    assert not (tmp_path / "escaped.txt").exists()
    for message in conversation:  # everything kept can be stored, sent and shown
        json.dumps(message.to_dict(), ensure_ascii=False).encode("utf-8")
    for event in events:  # and printed as JSON lines by the CLI
        json.dumps(event_to_dict(event), ensure_ascii=False).encode("utf-8")


async def _collect(turn: Any) -> list[Any]:
    return [event async for event in turn]


@pytest.fixture
def spy(tmp_path: Path) -> Spy:
    workspace = tmp_path / "work"
    workspace.mkdir()
    return Spy(workspace)


@pytest.mark.parametrize("case", HOSTILE, ids=HOSTILE.keys())
async def test_native_hostile_call(case: str, spy: Spy, tmp_path: Path) -> None:
    name, arguments = HOSTILE[case]
    provider = ScriptedProvider([Step(tool_calls=[ToolCall("c1", name, arguments)]), "Done."])
    await check_turn(provider, spy, tmp_path)


EMULATED = {
    "number of 400 digits": '{"name": "calculator", "arguments": {"expression": 1'
    + "0" * 400
    + "}}",
    "1e999 (inf once parsed)": '{"name": "create_chart", "arguments": {"type": "bar", '
    '"title": "t", "labels": ["a"], "values": [1e999]}}',
    "NaN and Infinity literals": '{"name": "create_chart", "arguments": {"type": "bar", '
    '"title": "t", "labels": ["a", "b"], "values": [NaN, -Infinity]}}',
    "20,000 unclosed brackets": '{"name": "calculator", "arguments": ' + "[" * 20_000,
    "arguments nested 5,000 deep": '{"name": "calculator", "arguments": {"expression": '
    + "[" * 5000
    + "]" * 5000
    + "}}",
    "a call in 1,000 fences": "```json\n" * 1000 + '{"name": "current_time", "arguments": {}}',
    "escaped lone surrogate": '{"name": "write_file", "arguments": {"path": "s.txt", '
    '"content": "\\ud83d"}}',
}


@pytest.mark.parametrize("case", EMULATED, ids=EMULATED.keys())
async def test_emulated_hostile_answer(case: str, spy: Spy, tmp_path: Path) -> None:
    provider = EmulatedTools(ScriptedProvider([EMULATED[case], "Done."]))
    await check_turn(provider, spy, tmp_path)
