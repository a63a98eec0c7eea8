"""Several servers at once: saved by name in Settings → Backend, chosen per conversation in
the chat's header (or by its preset), and the window connected to the conversation's own
as it is opened: two OpenAI-compatible servers over real HTTP."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QInputDialog

from desktop.core.storage.keychain import SecretStore
from desktop.core.storage.servers import in_use, key_name, saved_as
from desktop.core.storage.settings import Settings
from desktop.ui.settings_dialog import SettingsDialog
from tests.ui.conftest import WindowFactory


class ChatServer(ThreadingHTTPServer):
    """An OpenAI-compatible server that answers every chat with its own name."""

    def __init__(self, name: str) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.name = name
        self.keys: list[str | None] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(BaseHTTPRequestHandler):
    server: ChatServer

    def do_GET(self) -> None:
        if self.path != "/v1/models":
            return self._send(404, "application/json", b"{}")
        models = {
            "object": "list",
            "data": [{"id": f"{self.server.name}-model", "object": "model"}],
        }
        self._send(200, "application/json", json.dumps(models).encode())

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.keys.append(self.headers.get("Authorization"))
        delta = {"choices": [{"index": 0, "delta": {"content": f"From the {self.server.name}."},
                              "finish_reason": None}]}  # fmt: skip
        end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        body = f"data: {json.dumps(delta)}\n\ndata: {json.dumps(end)}\n\ndata: [DONE]\n\n"
        self._send(200, "text/event-stream", body.encode())

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def answers(window: Any) -> str:
    return " ".join(b.body.text for b in window.pane.chat.bubbles() if b.role == "assistant")


@pytest.fixture
def servers() -> Iterator[tuple[ChatServer, ChatServer]]:
    running = [ChatServer("laptop"), ChatServer("GPU box")]
    for server in running:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield running[0], running[1]
    for server in running:
        server.shutdown()
        server.server_close()


def test_settings_save_choose_and_remove_servers(qtbot: Any, monkeypatch: Any) -> None:
    secrets = SecretStore()
    dialog = SettingsDialog(Settings(backend="llamacpp", url="http://laptop:8080"), [], secrets)
    qtbot.addWidget(dialog)
    row = dialog.saved_servers
    assert row.name() == "" and not row.remove_button.isEnabled()
    monkeypatch.setattr(QInputDialog, "getText", lambda *a, **k: ("Laptop", True))
    qtbot.mouseClick(row.save_button, Qt.MouseButton.LeftButton)
    assert row.name() == "Laptop" and row.servers["Laptop"]["url"] == "http://laptop:8080"
    dialog.backend.setCurrentIndex(dialog.backend.findData("vllm"))
    dialog.url.setText("https://gpu.example:8000")
    dialog.connection_options.setChecked(True)
    dialog.connection_options.headers.setPlainText("X-Team: ml")
    assert row.save_as("GPU box") == ""
    dialog.api_key.setText("gpu-token")
    assert dialog.save_key() is not None
    assert secrets.get(key_name("GPU box")) == "gpu-token" and secrets.get("vllm") is None

    row.combo.setCurrentIndex(row.combo.findData("Laptop"))
    row.combo.activated.emit(row.combo.currentIndex())
    assert dialog.backend.currentData() == "llamacpp" and dialog.url.text() == "http://laptop:8080"
    assert not dialog.connection_options.isChecked() and dialog.api_key.text() == ""
    chosen = dialog.settings()
    assert chosen.server == "Laptop" and in_use(chosen) == "Laptop"
    assert chosen.servers["GPU box"]["headers"] == {"X-Team": "ml"}
    row.combo.setCurrentIndex(row.combo.findData("GPU box"))
    row.combo.activated.emit(row.combo.currentIndex())
    assert dialog.url.text() == "https://gpu.example:8000" and dialog.api_key.text() == "gpu-token"
    assert dialog.connection_options.headers.toPlainText() == "X-Team: ml"
    qtbot.mouseClick(row.remove_button, Qt.MouseButton.LeftButton)
    assert set(dialog.settings().servers) == {"Laptop"} and dialog.settings().server == ""
    monkeypatch.setattr(QInputDialog, "getText", lambda *a, **k: ("x" * 81, True))
    qtbot.mouseClick(row.save_button, Qt.MouseButton.LeftButton)
    assert "1 to 80 characters" in row.problem.text()


def test_each_conversation_is_answered_by_its_own_server(
    qtbot: Any, make_window: WindowFactory, servers: tuple[ChatServer, ChatServer]
) -> None:
    laptop, gpu = servers
    window, _ = make_window([])
    session = window.session
    settings = saved_as(Settings(backend="openai", url=laptop.url), "Laptop")
    settings = saved_as(replace(settings, url=gpu.url), "GPU box")
    session.secrets.set(key_name("GPU box"), "gpu-token")
    window.apply_settings(replace(session.settings, **{
        k: getattr(settings, k) for k in ("backend", "url", "servers", "server")}))  # fmt: skip
    qtbot.waitUntil(lambda: session.connection.ok and session.connection.url == gpu.url,
                    timeout=10000)  # fmt: skip

    window.new_conversation()
    header = window.pane.header
    assert header.server.isVisible()
    assert [header.server.itemText(i) for i in range(header.server.count())] == [
        "Server: the one in use",
        "Server: Laptop",
        "Server: GPU box",
    ]
    on_laptop = window.conversation_id
    header.server.setCurrentIndex(header.server.findData("Laptop"))
    header.server.activated.emit(header.server.currentIndex())
    assert on_laptop is not None and session.store.server(on_laptop) == "Laptop"
    qtbot.waitUntil(lambda: session.connection.ok and session.connection.url == laptop.url,
                    timeout=10000)  # fmt: skip
    window.pane.composer.setPlainText("Hi")
    qtbot.keyClick(window.pane.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: "From the laptop." in answers(window), timeout=10000)

    window.new_conversation()
    on_gpu = window.conversation_id
    assert on_gpu is not None
    session.store.set_server(on_gpu, "GPU box")
    window.open_conversation(on_laptop)  # the laptop's conversation: already connected
    window.open_conversation(on_gpu)
    qtbot.waitUntil(lambda: session.connection.url == gpu.url and session.connection.ok,
                    timeout=10000)  # fmt: skip
    assert window.pane.header.server.currentData() == "GPU box"
    assert window.status.backend_label.text().startswith("● GPU box · ")
    window.pane.composer.setPlainText("Hi")
    qtbot.keyClick(window.pane.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: "From the GPU box." in answers(window), timeout=10000)
    assert set(gpu.keys) == {"Bearer gpu-token"} and set(laptop.keys) == {None}
    window.open_conversation(on_laptop)
    qtbot.waitUntil(lambda: session.connection.url == laptop.url, timeout=10000)
