"""The local API while the window is open: started from the settings, answered by the
model the chat uses (its requests in a trace of their own, shown from View → Local API
requests), the token copied from Settings, and stopped with the window."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import httpx
from PySide6.QtGui import QGuiApplication

from desktop.api.token import TOKEN_NAME
from desktop.ui.menus import show_api_requests
from desktop.ui.settings_dialog import SettingsDialog
from tests.ui.conftest import WindowFactory


def test_the_window_serves_the_chat_model_and_shows_the_requests(
    qtbot: Any, make_window: WindowFactory
) -> None:
    window, provider = make_window(["Hello from the model."])
    controller = window.controller
    assert controller.api.server is None  # off until the person turns it on
    window.session.apply_settings(replace(window.session.settings, api_enabled=True, api_port=0))
    started = controller.tasks.start(controller.api.apply())
    qtbot.waitUntil(started.done, timeout=10000)
    assert controller.api.url.startswith("http://127.0.0.1:")
    token = window.session.secrets.get(TOKEN_NAME)
    assert token

    async def ask() -> httpx.Response:
        async with httpx.AsyncClient() as http:
            return await http.post(f"{controller.api.url}/chat/completions", json={
                "messages": [{"role": "user", "content": "Hi"}]},
                headers={"Authorization": f"Bearer {token}"}, timeout=20)  # fmt: skip

    asking = controller.tasks.start(ask())
    qtbot.waitUntil(asking.done, timeout=20000)
    answer = asking.result()
    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["message"]["content"] == "Hello from the model."
    assert provider.requests[0].messages[-1].text == "Hi"
    assert window.session.traces == {}  # the chat's traces untouched
    (trace,) = controller.api.traces
    assert trace.steps and trace.steps[0].messages[-1]["parts"] == [{"kind": "text", "text": "Hi"}]
    show_api_requests(window)
    assert window.inspector_dock.isVisible()
    assert window.inspector.current_trace() is trace

    window.session.apply_settings(replace(window.session.settings, api_enabled=False))
    stopping = controller.tasks.start(controller.api.apply())
    qtbot.waitUntil(stopping.done, timeout=10000)
    assert controller.api.server is None


def test_settings_turn_it_on_and_copy_the_token(qtbot: Any, make_window: WindowFactory) -> None:
    window, _ = make_window([])
    dialog = SettingsDialog(window.session.settings, [], window.session.secrets)
    qtbot.addWidget(dialog)
    dialog.api_settings.setChecked(True)
    dialog.api_settings.port.setValue(9123)
    assert dialog.api_settings.address.text() == "http://127.0.0.1:9123/v1"
    chosen = dialog.settings()
    assert (chosen.api_enabled, chosen.api_port) == (True, 9123)
    dialog.api_settings.copy_token()
    assert QGuiApplication.clipboard().text() == window.session.secrets.get(TOKEN_NAME)


def test_a_port_already_taken_is_said_in_the_chat(qtbot: Any, make_window: WindowFactory) -> None:
    import socket

    from tests.ui.test_attachments import notes

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        window, _ = make_window([])
        controller = window.controller
        window.session.apply_settings(
            replace(
                window.session.settings,
                backend="openai",
                url="http://127.0.0.1:9",
                api_enabled=True,
                api_port=port,
            )
        )
        controller.reconnect()
        qtbot.waitUntil(lambda: bool(controller.api.problem), timeout=20000)
        assert f"cannot listen on port {port}" in controller.api.problem
        qtbot.waitUntil(lambda: any(str(port) in n.text() for n in notes(window)), timeout=10000)
        assert controller.api.server is None
    finally:
        taken.close()
