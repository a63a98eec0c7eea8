"""The Models dialog's Ollama page against a local server that speaks Ollama's API:
the installed models, a pull with per-layer progress, a failed pull, delete, use."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from desktop.core.connection import Connection
from desktop.core.models.catalogue import load_catalogue
from desktop.ui.models_dialog import ModelsDialog
from desktop.ui.ollama_page import OllamaPage
from tests.support.replay_server import Canned, Received, ReplayServer, ndjson

LAYER = "sha256:" + "c" * 64
TAGS = {"models": [
    {"name": "qwen2.5:7b", "model": "qwen2.5:7b", "size": 4683087332, "digest": "x",
     "details": {"format": "gguf", "family": "qwen2", "parameter_size": "7.6B",
                 "quantization_level": "Q4_K_M"}},
]}  # fmt: skip
PULLED = {"name": "qwen3:4b", "model": "qwen3:4b", "size": 2600000000, "digest": "y",
          "details": {"family": "qwen3", "parameter_size": "4.0B",
                      "quantization_level": "Q4_K_M"}}  # fmt: skip


def wait_for(qtbot: Any, work: Any) -> None:
    task = asyncio.ensure_future(work)
    qtbot.waitUntil(task.done, timeout=5000)
    task.result()


@pytest.fixture
def ollama(qtbot: Any, qloop: Any) -> Any:
    server = ReplayServer()
    wait_for(qtbot, server.__aenter__())
    server.route("GET", "/api/tags", Canned.json(TAGS))
    yield server
    wait_for(qtbot, server.__aexit__())


def page_over(qtbot: Any, server: ReplayServer) -> OllamaPage:
    page = OllamaPage(server.url)
    qtbot.addWidget(page)
    qtbot.waitUntil(lambda: page.table.rowCount() == 1, timeout=5000)
    return page


def test_the_installed_models_with_their_details(qtbot: Any, ollama: ReplayServer) -> None:
    page = page_over(qtbot, ollama)
    row = [page.table.item(0, c).text() for c in range(5)]  # type: ignore[union-attr]
    assert row == ["qwen2.5:7b", "4.4 GB", "qwen2", "7.6B", "Q4_K_M"]
    wait_for(qtbot, page.stop())


def test_a_pull_shows_its_progress_then_lists_the_model(qtbot: Any, ollama: ReplayServer) -> None:
    page = page_over(qtbot, ollama)
    seen: list[int] = []
    page.bar.valueChanged.connect(seen.append)

    def pulled(request: Received) -> Canned:
        TAGS_AFTER = {"models": [*TAGS["models"], PULLED]}
        ollama.route("GET", "/api/tags", Canned.json(TAGS_AFTER))
        return Canned(200, "application/x-ndjson", ndjson(
            {"status": "pulling manifest"},
            {"status": "pulling cccc", "digest": LAYER, "total": 1000, "completed": 400},
            {"status": "pulling cccc", "digest": LAYER, "total": 1000, "completed": 1000},
            {"status": "verifying sha256 digest"},
            {"status": "success"},
        ), pause_s=0.05)  # fmt: skip

    ollama.route("POST", "/api/pull", pulled)
    qtbot.keyClicks(page.name, "qwen3:4b")
    qtbot.mouseClick(page.pull_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: page.status.text() == "qwen3:4b is ready.", timeout=5000)
    qtbot.waitUntil(lambda: page.table.rowCount() == 2, timeout=5000)
    pull = next(r for r in ollama.requests if r.path == "/api/pull")
    assert pull.json() == {"model": "qwen3:4b", "stream": True}
    assert 400 in seen and 1000 in seen  # per-layer progress reached the bar
    assert page.pull_button.isEnabled() and page.cancel_button.isHidden()
    assert page.name.text() == ""
    wait_for(qtbot, page.stop())


def test_a_failed_pull_says_why_and_the_page_goes_on(qtbot: Any, ollama: ReplayServer) -> None:
    page = page_over(qtbot, ollama)
    ollama.route("POST", "/api/pull", Canned(200, "application/x-ndjson", ndjson(
        {"status": "pulling manifest"}, {"error": "pull model manifest: file does not exist"},
    )))  # fmt: skip
    qtbot.keyClicks(page.name, "nonsense:1b")
    qtbot.keyClick(page.name, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: "file does not exist" in page.status.text(), timeout=5000)
    assert page.pull_button.isEnabled() and page.name.text() == "nonsense:1b"
    wait_for(qtbot, page.stop())


def test_delete_asks_first_then_deletes(
    qtbot: Any, ollama: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = page_over(qtbot, ollama)
    ollama.route("DELETE", "/api/delete", Canned(200, "application/json", [b""]))
    answers = [QMessageBox.StandardButton.No, QMessageBox.StandardButton.Yes]
    asked: list[str] = []

    def question(_parent: Any, _title: str, text: str) -> QMessageBox.StandardButton:
        asked.append(text)
        return answers.pop(0)

    monkeypatch.setattr(QMessageBox, "question", question)
    page.table.selectRow(0)
    qtbot.mouseClick(page.delete_button, Qt.MouseButton.LeftButton)
    assert not [r for r in ollama.requests if r.method == "DELETE"]  # "No": nothing sent
    qtbot.mouseClick(page.delete_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: page.status.text() == "Deleted qwen2.5:7b.", timeout=5000)
    (deleted,) = [r for r in ollama.requests if r.method == "DELETE"]
    assert deleted.json() == {"model": "qwen2.5:7b"} and "qwen2.5:7b" in asked[0]
    wait_for(qtbot, page.stop())


def test_the_window_offers_ollamas_page_and_uses_the_chosen_model(
    qtbot: Any, ollama: ReplayServer, make_window: Any, tmp_path: Path
) -> None:
    window, _ = make_window([])
    window.session.connection = Connection(True, "Connected.", "ollama", ollama.url, "llama3")
    dialog = window.open_models()
    assert isinstance(dialog, ModelsDialog) and dialog.ollama is not None
    qtbot.waitUntil(lambda: dialog.ollama is not None and dialog.ollama.table.rowCount() == 1)
    reconnects: list[bool] = []
    window.controller.reconnect = lambda: reconnects.append(True)
    dialog.ollama.table.selectRow(0)
    qtbot.mouseClick(dialog.ollama.use_button, Qt.MouseButton.LeftButton)
    settings = window.session.settings
    assert (settings.backend, settings.url, settings.model) == ("ollama", ollama.url, "qwen2.5:7b")
    assert reconnects == [True] and not dialog.isVisible()
    qtbot.waitUntil(lambda: not dialog.ollama._tasks.pending, timeout=5000)  # its client closed
    # With another backend there is no Ollama page.
    window.session.connection = Connection(True, "Connected.", "llamacpp", "http://x", "m")
    other = ModelsDialog(tmp_path, load_catalogue(), ollama_url=None)
    qtbot.addWidget(other)
    assert other.ollama is None
