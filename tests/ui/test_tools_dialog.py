"""The Tools dialog in the real window: a catalogue server installed by clicks alone (the
test suite's own MCP server, through the same path as any other), called in a chat, set to
Never, turned off and removed; servers imported from the clipboard, their commands shown
first; a server whose runtime is missing explained, nothing written."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QMessageBox

from desktop.core.messages import ToolCall
from desktop.core.tools.mcp_servers_file import read_servers
from desktop.ui.tools_dialog import ToolsDialog, show_tools
from tests.support.fakes import Step
from tests.ui.conftest import WindowFactory
from tests.ui.test_main_window import type_and_send

SERVER = str(Path(__file__).resolve().parents[1] / "support" / "mcp_server.py")


def catalogue(tmp_path: Path, command: str = sys.executable) -> Path:
    """A catalogue in the shipped format with one server: the test suite's own."""
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps({"servers": [{
        "id": "demo", "name": "Demo", "description": "Adds numbers and draws swatches.",
        "runtime": "command", "command": command, "args": [SERVER], "settings": [],
        "online": False, "licence": "MIT", "source": "https://example.org/demo",
    }]}))  # fmt: skip
    return path


def open_dialog(qtbot: Any, window: Any, path: Path) -> ToolsDialog:
    dialog = ToolsDialog(window.session, window.controller, window, catalogue=path)
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def state_of(dialog: ToolsDialog, name: str) -> str:
    items = dialog.installed.findItems(name, Qt.MatchFlag.MatchExactly, 0)
    return items[0].text(1) if items else ""


def stop_servers(qtbot: Any, window: Any) -> None:
    closing = window.controller.tasks.start(window.session.tools.mcp.close())
    qtbot.waitUntil(closing.done, timeout=10000)


def test_a_catalogue_server_is_installed_by_clicks_used_and_set_to_never(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    script = [Step(tool_calls=[ToolCall("c1", "demo__add", {"a": 2, "b": 3})]), "It is 5."]
    window, provider = make_window(script)
    dialog = open_dialog(qtbot, window, catalogue(tmp_path))
    chosen = dialog.catalogue.chosen_entry()
    assert chosen is not None and chosen.name == "Demo"
    assert "Licence MIT" in dialog.catalogue.details.text()
    qtbot.mouseClick(dialog.catalogue.install_button, Qt.MouseButton.LeftButton)
    try:
        qtbot.waitUntil(lambda: state_of(dialog, "demo") == "running · 3 tools", timeout=30000)
        assert "running with 3 tools: add, swatch, fail" in dialog.message.text()
        assert dialog.calibrate_button.isVisible()  # the model was never calibrated
        qtbot.mouseClick(dialog.calibrate_button, Qt.MouseButton.LeftButton)
        assert window.controller.calibrating and not dialog.calibrate_button.isVisible()
        window.controller.cancel_calibration()  # the scripted model has no answers for it
        qtbot.waitUntil(lambda: not window.controller.calibrating, timeout=10000)
        data = tmp_path / "data"
        assert window.session.settings.mcp_config == str(data / "mcp-servers.json")
        saved = json.loads((data / "settings.json").read_text())
        assert saved["mcp_config"] == str(data / "mcp-servers.json")  # kept for next time
        assert read_servers(data / "mcp-servers.json")["demo"]["catalogue"] == "demo"
        listed = dialog.catalogue.listing.currentItem()  # the catalogue marks it installed
        assert listed is not None and listed.text(0) == "Demo ✓"
        assert "Installed as demo" in dialog.catalogue.details.text()

        type_and_send(qtbot, window, "What is 2 + 3?")  # read-only: runs without asking
        qtbot.waitUntil(lambda: not window.controller.busy and "c1" in window.pane.chat.cards,
                        timeout=15000)  # fmt: skip
        assert window.pane.chat.cards["c1"].state == "done"
        assert "2 + 3 = 5" in provider.requests[1].messages[-1].text

        dialog.installed.setCurrentItem(
            dialog.installed.findItems("demo", Qt.MatchFlag.MatchExactly)[0]
        )
        dialog.rule.setCurrentIndex(dialog.rule.findData("never"))
        dialog.rule.activated.emit(dialog.rule.currentIndex())
        assert window.session.settings.tool_permissions == {"demo:*": "never"}
        assert "Its tools: add, swatch, fail" in dialog.server_details.text()
        assert not any(t.name.startswith("demo__") for t in window.session.toolbox())

        qtbot.mouseClick(dialog.toggle, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: state_of(dialog, "demo") == "off", timeout=10000)
        qtbot.waitUntil(lambda: window.session.tools.mcp.servers == [], timeout=10000)
        qtbot.mouseClick(dialog.toggle, Qt.MouseButton.LeftButton)  # on again
        qtbot.waitUntil(lambda: state_of(dialog, "demo").startswith("running"), timeout=30000)
        qtbot.mouseClick(dialog.remove, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: dialog.installed.topLevelItemCount() == 0, timeout=10000)
        unmarked = dialog.catalogue.listing.currentItem()
        assert unmarked is not None and unmarked.text(0) == "Demo"  # no longer marked
        qtbot.waitUntil(lambda: window.session.tools.mcp.servers == [], timeout=10000)
        assert read_servers(data / "mcp-servers.json") == {}
    finally:
        stop_servers(qtbot, window)


def test_servers_are_imported_from_the_clipboard_after_their_commands_are_shown(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    window, _ = make_window([])
    dialog = open_dialog(qtbot, window, catalogue(tmp_path))
    QGuiApplication.clipboard().setText(json.dumps({"mcpServers": {
        "mine": {"command": sys.executable, "args": [SERVER]},
        "broken": {"args": ["no command"]},
    }}))  # fmt: skip
    asked: list[str] = []

    def answer(_parent: Any, _title: str, text: str, *rest: Any) -> Any:
        asked.append(text)
        return QMessageBox.StandardButton.No if len(asked) == 1 else QMessageBox.StandardButton.Yes

    monkeypatch.setattr(QMessageBox, "question", answer)
    try:
        qtbot.mouseClick(dialog.import_clipboard, Qt.MouseButton.LeftButton)
        assert f"mine: {sys.executable} {SERVER}" in asked[0] and "Skipped broken" in asked[0]
        assert dialog.installed.topLevelItemCount() == 0  # said no: nothing added
        qtbot.mouseClick(dialog.import_clipboard, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: state_of(dialog, "mine") == "running · 3 tools", timeout=30000)
        assert "Imported mine." in dialog.message.text()
        assert "mine__add" in {t.name for t in window.session.tools.all}
    finally:
        stop_servers(qtbot, window)


def test_a_missing_runtime_is_explained_and_nothing_is_written(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    window, _ = make_window([])
    dialog = open_dialog(qtbot, window, catalogue(tmp_path, command="no-such-runtime-xyz"))
    assert "Cannot install yet" in dialog.catalogue.details.text()
    assert "no-such-runtime-xyz" in dialog.catalogue.details.text()
    assert not dialog.catalogue.install_button.isEnabled()
    qtbot.mouseClick(dialog.catalogue.install_button, Qt.MouseButton.LeftButton)
    assert not (tmp_path / "data" / "mcp-servers.json").exists()
    assert window.session.settings.mcp_config == ""


def test_the_window_opens_one_tools_dialog(qtbot: Any, make_window: WindowFactory) -> None:
    window, _ = make_window([])
    window.open_tools()
    first = window.findChild(ToolsDialog)
    assert first is not None and first.isVisible()
    assert show_tools(window) is first  # again: the same one, raised
    assert first.catalogue.listing.topLevelItemCount() >= 8  # the shipped catalogue
