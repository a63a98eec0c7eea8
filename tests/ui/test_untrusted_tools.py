"""Untrusted tools in the real window: an MCP server whose schemas point at a web address
and at local files (the tool is left out, said once in the chat, nothing fetched; the
server's other tool is called in a turn), and the cooldown switch deciding whether an
exact repeat runs."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from desktop.core.messages import ToolCall
from desktop.core.tools.toolbox import Tool
from tests.faults.test_hostile_mcp import RAW, tool, with_ref
from tests.support.fakes import Step
from tests.ui.conftest import WindowFactory
from tests.ui.test_attachments import notes
from tests.ui.test_main_window import type_and_send


def test_a_tool_whose_schema_fetches_is_left_out_and_the_rest_work(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    hits: list[str] = []

    async def count(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        hits.append("connected")
        writer.close()

    listening = asyncio.ensure_future(asyncio.start_server(count, "127.0.0.1", 0))
    qtbot.waitUntil(listening.done, timeout=5000)
    listener = listening.result()
    url = f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}/s.json"
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"tools": [
        tool("fetcher", with_ref(url)), tool("reader", with_ref("file:///etc/hostname")),
        tool("add", {"type": "object", "properties": {"a": {"type": "integer"}}}),
    ]}))  # fmt: skip
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"remote": {
        "command": sys.executable, "args": [RAW, str(spec)], "trusted": True}}}))  # fmt: skip
    data = tmp_path / "data"
    data.mkdir()
    (data / "settings.json").write_text(json.dumps({"mcp_config": str(config)}))
    script = [Step(tool_calls=[ToolCall("c1", "remote__add", {"a": 2})]), "Added."]
    window, provider = make_window(script, folder=data)
    started = asyncio.ensure_future(window.session.start_mcp())  # as connect() does
    qtbot.waitUntil(started.done, timeout=30000)
    window.session.use_provider(provider)
    window.controller.connection_changed.emit(window.session.connection)
    said = [w.text() for w in notes(window)]
    assert any("tool 'fetcher' was left out" in n and url in n for n in said)
    assert any("tool 'reader' was left out" in n for n in said)
    assert [t.name for t in window.session.tools.all if t.name.startswith("remote__")] == [
        "remote__add"
    ]
    type_and_send(qtbot, window, "Add two")
    qtbot.waitUntil(
        lambda: not window.controller.busy and window.pane.chat.cards != {}, timeout=10000
    )
    assert window.pane.chat.cards["c1"].state == "done"
    window.controller.connection_changed.emit(window.session.connection)  # a reconnect
    again = [w.text() for w in notes(window)]
    assert sum("tool 'fetcher' was left out" in n for n in again) == 1  # said once
    closing = asyncio.ensure_future(window.session.tools.mcp.close())
    qtbot.waitUntil(closing.done, timeout=10000)
    listener.close()
    assert hits == []


def test_switched_off_the_same_ticket_twice_runs_twice(
    qtbot: Any, make_window: WindowFactory
) -> None:
    """The cooldown switch off: "create 2 tickets" with the same arguments runs both."""
    made: list[dict[str, Any]] = []

    async def create_ticket(arguments: dict[str, Any]) -> str:
        made.append(arguments)
        return f"ticket {len(made)}"

    same = {"title": "Printer broken"}
    window, _provider = make_window(
        [Step(tool_calls=[ToolCall("a", "create_ticket", same), ToolCall("b", "create_ticket", same)]),
         "Two tickets made."]
    )  # fmt: skip
    window.session.tools.extra.append(
        Tool(
            "create_ticket",
            "Create a ticket",
            {"type": "object", "properties": {"title": {"type": "string"}}},
            create_ticket,
        )
    )
    window.apply_settings(type(window.session.settings)(cooldown_enabled=False))
    type_and_send(qtbot, window, "Make two tickets for the printer")
    qtbot.waitUntil(
        lambda: not window.controller.busy and len(window.pane.chat.cards) == 2, timeout=5000
    )
    reasons = [c.reason_label.text() for c in window.pane.chat.cards.values()]
    assert [c.state for c in window.pane.chat.cards.values()] == ["done", "done"], reasons
    assert made == [same, same]


def test_a_program_to_approve_reads_as_its_lines() -> None:
    from desktop.ui.tool_card import format_arguments

    shown = format_arguments({"code": "import statistics\nprint(statistics.mean([1, 2]))",
                              "label": "a\\nb", "n": 3})  # fmt: skip
    assert shown == (
        'code:\n    import statistics\n    print(statistics.mean([1, 2]))\nlabel: "a\\\\nb"\nn: 3'
    )


def test_always_for_the_code_runner_holds_in_its_chat_alone(
    qtbot: Any, make_window: WindowFactory
) -> None:
    from dataclasses import replace

    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QPushButton

    first = ToolCall("p1", "run_python", {"code": "print(6 * 7)"})
    second = ToolCall("p2", "run_python", {"code": "print(6 * 8)"})
    elsewhere = ToolCall("p3", "run_python", {"code": "print(6 * 9)"})
    window, _ = make_window([Step(tool_calls=[first]), "42.", Step(tool_calls=[second]), "48.",
                             Step(tool_calls=[elsewhere]), "54."])  # fmt: skip
    window.controller.reconnect = lambda: None  # type: ignore[method-assign]
    window.apply_settings(replace(window.session.settings, tools_enabled={"run_python": True}))

    def asked(call_id: str) -> bool:
        card = window.pane.chat.cards.get(call_id)
        return card is not None and card.approval is not None

    type_and_send(qtbot, window, "Six times seven, in Python")
    qtbot.waitUntil(lambda: asked("p1"), timeout=10000)
    always = window.pane.chat.cards["p1"].findChild(QPushButton, "approve_always")
    assert always is not None and always.text() == "Always in this chat"
    qtbot.mouseClick(always, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not window.controller.busy, timeout=20000)
    assert "42" in window.pane.chat.cards["p1"].result_text
    assert window.session.settings.tool_permissions == {}  # nothing kept beyond this chat

    type_and_send(qtbot, window, "And six times eight")  # the same chat: no question
    qtbot.waitUntil(lambda: not window.controller.busy and "p2" in window.pane.chat.cards,
                    timeout=20000)  # fmt: skip
    assert window.pane.chat.cards["p2"].approval is None
    assert "48" in window.pane.chat.cards["p2"].result_text

    window.new_conversation()  # another chat asks again
    type_and_send(qtbot, window, "Six times nine")
    qtbot.waitUntil(lambda: asked("p3"), timeout=10000)
    deny = window.pane.chat.cards["p3"].findChild(QPushButton, "approve_deny")
    qtbot.mouseClick(deny, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not window.controller.busy, timeout=10000)
