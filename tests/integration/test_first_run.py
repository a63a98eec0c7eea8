"""A new user's way to a first answer, by clicks alone: no model server answers, the
first-run screen's first button downloads the recommended model (from a stand-in for the
Hub serving the bundled model's bytes), the built-in runtime starts on it, and the first
question is answered with a tool."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPushButton

from desktop.core.events import Event, ToolResult, TurnFailed, TurnFinished
from desktop.ui.app import build
from tests.conftest import _binary_and_model
from tests.support.hub_server import FakeHub, HubFileData, HubRepoData


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_download_on_the_first_run_screen_then_a_tool_using_answer(
    qtbot: Any, qloop: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _binary, model = _binary_and_model()
    data = tmp_path / "data"
    data.mkdir()
    # A server that is not there: the app starts on its first-run screen.
    (data / "settings.json").write_text(
        json.dumps({"backend": "llamacpp", "url": f"http://127.0.0.1:{_closed_port()}"})
    )
    window, controller, session, _problem = build(data)
    controller.calibrate_on_first_use = False  # its questions would wait for the server
    qtbot.addWidget(window)
    window.show()
    controller.reconnect()
    qtbot.waitUntil(lambda: window.pane.pages.currentWidget() is window.first_run, timeout=30000)

    recommended = window.recommended
    assert recommended is not None
    hub = FakeHub(
        {recommended.repo: HubRepoData({recommended.file: HubFileData(model.read_bytes())})}
    )
    started = asyncio.ensure_future(hub.__aenter__())
    qtbot.waitUntil(started.done, timeout=5000)
    monkeypatch.setenv("HF_ENDPOINT", hub.url)

    events: list[Event] = []
    controller.event_received.connect(events.append)
    first = next(b for b in window.first_run.findChildren(QPushButton) if b.isVisible())
    assert first.text().startswith(f"Download {recommended.name} (")
    qtbot.mouseClick(first, Qt.MouseButton.LeftButton)
    try:
        qtbot.waitUntil(
            lambda: session.connection.ok and window.pane.pages.currentWidget() is window.pane.chat,
            timeout=240000,
        )
        downloaded = window.models_dir / recommended.file
        assert session.settings.runtime_model == str(downloaded)
        assert downloaded.read_bytes()[:4] == b"GGUF"
        assert not list(window.models_dir.glob("*.part"))

        qtbot.keyClicks(window.pane.composer, "What is 23 times 19?")
        qtbot.mouseClick(window.pane.composer_bar.send_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(
            lambda: any(isinstance(e, TurnFinished | TurnFailed) for e in events), timeout=240000
        )
    finally:
        closing = asyncio.ensure_future(session.close())
        qtbot.waitUntil(closing.done, timeout=30000)
        stopped = asyncio.ensure_future(hub.__aexit__())
        qtbot.waitUntil(stopped.done, timeout=5000)
    calls = [e.name for e in events if isinstance(e, ToolResult) and e.error is None]
    finished = events[-1]
    assert isinstance(finished, TurnFinished), finished
    # The model samples (the app's default temperature): its call is checked, not its words.
    assert "calculator" in calls and finished.text.strip()
