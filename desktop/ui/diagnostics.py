"""Hooks for the benches and the installer test, run by the real app when their
environment variable is set: LOOMCHAT_BENCH_STARTUP (bench/gui.py: time to the window
shown, memory once idle) and LOOMCHAT_SELF_CHECK (packaging/test-package.sh: the tools and
one question through the window; with LOOMCHAT_SELF_CHECK_FIRST_RUN=download, the model is
reached as a new user would: the first-run screen's Download button, then the chat)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QApplication, QPushButton

from desktop.core.connection import Connection
from desktop.core.events import Event, ToolResult, TurnFailed, TurnFinished
from desktop.core.messages import ToolCall
from desktop.core.session import Session
from desktop.ui.main_window import MainWindow


async def report_startup(app: QApplication) -> None:
    """For bench/gui.py: how long from launch to the window shown, and memory once idle."""
    import resource as rusage  # POSIX only, as is this bench

    await asyncio.sleep(0)  # let the first paint happen
    shown_ms = (time.time_ns() - int(os.environ["LOOMCHAT_BENCH_STARTUP"])) / 1e6
    await asyncio.sleep(3)  # settle: connection attempt done, nothing running
    rss_kb = int(
        next(
            line.split()[1]
            for line in Path("/proc/self/status").read_text().splitlines()
            if line.startswith("VmRSS:")
        )
    )
    peak_kb = rusage.getrusage(rusage.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {"shown_ms": shown_ms, "idle_rss_mb": rss_kb / 1024, "peak_rss_mb": peak_kb / 1024}
        )
    )
    app.quit()


class _Connections:
    """The connection attempts' outcomes as they settle ("Connecting…" is not one)."""

    def __init__(self, window: MainWindow) -> None:
        self.settled: asyncio.Queue[Connection] = asyncio.Queue()
        window.controller.connection_changed.connect(self._changed)

    def _changed(self, connection: Connection) -> None:
        if connection.message != "Connecting…":
            self.settled.put_nowait(connection)

    async def next(self, timeout_s: float) -> Connection:
        return await asyncio.wait_for(self.settled.get(), timeout_s)


async def _download_from_first_run(
    window: MainWindow, connections: _Connections, report: dict[str, Any]
) -> Connection:
    """What a new user does with no model server: the first-run screen's first button
    (Download <recommended model>), then wait for the chat, with no other click."""
    first = await connections.next(60)
    shown = window.pane.pages.currentWidget() is window.first_run
    buttons = [b for b in window.first_run.findChildren(QPushButton) if b.isVisible()]
    report["first_run"] = {"shown": shown and not first.ok,
                           "first_button": buttons[0].text() if buttons else None}  # fmt: skip
    if not report["first_run"]["shown"] or not buttons[0].text().startswith("Download "):
        return first
    started = time.monotonic()
    buttons[0].click()
    connection = await connections.next(1800)  # the download, then the runtime's start
    report["first_run"] |= {
        "seconds_to_chat": round(time.monotonic() - started, 1),
        "model": window.session.settings.runtime_model,
        "chat_shown": window.pane.pages.currentWidget() is window.pane.chat,
    }
    return connection


async def self_check(window: MainWindow, session: Session, question: str) -> int:
    """For the installer test (packaging/test-package.sh): with the window shown, run each
    tool on its example, and once a backend answers ask `question` through the window;
    print what happened as one JSON line, and say whether all went well (0) or not (1)."""
    report: dict[str, Any] = {"window_shown": window.isVisible()}
    connections = _Connections(window)
    # Each tool on its own first example, with no model in the way: a bundle that lost a
    # library (numpy for charts, say) fails here, not in a user's chat.
    tools: dict[str, str] = {}
    toolbox = session.toolbox()
    for tool in toolbox:
        if tool.examples and not tool.needs_approval:
            call = ToolCall(f"check-{tool.name}", tool.name, tool.examples[0].arguments)
            outcome = await toolbox.run(call)
            tools[tool.name] = f"error: {outcome.error}" if outcome.error else "ok"
    report["tools"] = tools
    # Tool selection's libraries load only when many tools are offered: load them here.
    from desktop.core.tools.selection import ToolSelector

    try:
        picked = ToolSelector(list(toolbox)).select("What is 23 times 19?").tools
        report["tool_selection"] = "ok" if picked else "error: nothing selected"
    except Exception as exc:
        report["tool_selection"] = f"error: {exc!r}"
    if os.environ.get("LOOMCHAT_SELF_CHECK_FIRST_RUN") == "download":
        connection = await _download_from_first_run(window, connections, report)
    else:  # the built-in runtime may take a while to load its model
        connection = await connections.next(600)
    report |= {"connected": connection.ok, "status": connection.message,
               "backend": connection.backend, "model": connection.model}  # fmt: skip
    report["offered"] = [tool.name for tool in session.toolbox()]
    if session.runtime is not None:  # which llama-server the built-in runtime started
        report["runtime"] = session.runtime.command()[0]
    if connection.ok:
        answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        report["tool_calls"] = []

        def settle(text: str) -> None:
            if not answer.done():
                answer.set_result(text)

        def settle_on_end(event: Event) -> None:
            if isinstance(event, ToolResult) and event.error is None:
                report["tool_calls"].append(event.name)
            elif isinstance(event, TurnFinished):
                settle(event.text)
            elif isinstance(event, TurnFailed):
                settle(f"failed: {event.message}")

        window.controller.event_received.connect(settle_on_end)
        window.pane.composer.setPlainText(question)
        window.pane.send()
        try:
            report["answer"] = await asyncio.wait_for(answer, 300)
        except TimeoutError:
            report["answer"] = "failed: no answer within 300 s"
    if target := os.environ.get("LOOMCHAT_SELF_CHECK_REPORT"):  # a window app on Windows
        Path(target).write_text(json.dumps(report), encoding="utf-8")  # has no stdout
    else:
        print(json.dumps(report), flush=True)
    answered = bool(report.get("answer")) and not report["answer"].startswith("failed")
    tools_ok = all(result == "ok" for result in tools.values())
    tools_ok = tools_ok and report["tool_selection"] == "ok"
    return 0 if report["window_shown"] and answered and tools_ok else 1
