"""Accessibility through Qt's own interfaces (QAccessible), as a screen reader sees the
app: every interactive widget has a name and a description, the app works by keyboard
alone, the shortcuts are listed in Help, and finished answers and tool cards are
announced."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAccessible, QAccessibleEvent
from PySide6.QtWidgets import (
    QHeaderView,
    QWidget,
)

from desktop.core.models.catalogue import Machine, load_catalogue
from desktop.core.models.hub import Hub
from desktop.core.storage.presets import PresetBook
from desktop.ui.accessible import INTERACTIVE
from desktop.ui.chat_header import SystemPromptDialog
from desktop.ui.models_dialog import ModelsDialog
from desktop.ui.presets_dialog import PresetsDialog
from desktop.ui.settings_dialog import SettingsDialog
from desktop.ui.tools_dialog import ToolsDialog
from tests.support.fakes import Step
from tests.ui.conftest import WindowFactory
from tests.ui.test_branches import idle
from tests.ui.test_main_window import CHART_CALL, type_and_send


def unnamed(root: QWidget) -> list[str]:
    """The interactive widgets under `root` a screen reader could not name or explain."""
    missing = []
    for widget in root.findChildren(QWidget):
        if not isinstance(widget, INTERACTIVE) or widget.objectName().startswith("qt_"):
            continue
        if isinstance(widget, QHeaderView) or not widget.isVisibleTo(root):
            continue  # a table's header is part of the table
        face = QAccessible.queryAccessibleInterface(widget)
        assert face is not None
        name = face.text(QAccessible.Text.Name).strip()
        description = face.text(QAccessible.Text.Description).strip()
        if not name or not description:
            label = name or widget.objectName() or type(widget).__name__
            missing.append(f"{type(widget).__name__} {label!r}: name={bool(name)} "
                           f"description={bool(description)}")  # fmt: skip
    return missing


def test_every_control_of_the_window_is_named_and_described(
    qtbot: Any, make_window: WindowFactory
) -> None:
    window, _ = make_window([Step(tool_calls=[CHART_CALL]), "Here it is."])
    window.inspector_dock.show()
    type_and_send(qtbot, window, "Chart my sales")
    idle(qtbot, window)
    assert unnamed(window) == [], "\n".join(unnamed(window))
    window.pane.pages.setCurrentWidget(window.first_run)
    assert unnamed(window.first_run) == []


def test_every_control_of_the_dialogs_is_named_and_described(
    qtbot: Any, make_window: WindowFactory, tmp_path: Path
) -> None:
    window, _ = make_window([])
    dialogs: list[QWidget] = [
        SettingsDialog(
            window.session.settings, window.session.tools.all, window.session.secrets, window
        ),
        ModelsDialog(
            tmp_path,
            load_catalogue(),
            hub=Hub("http://127.0.0.1:9"),
            machine=Machine(8 * 1024**3, 10**11),
            ollama_url="http://127.0.0.1:9",
        ),
        PresetsDialog(PresetBook()),
        SystemPromptDialog("Be brief."),
        ToolsDialog(window.session, window.controller, window),
    ]
    for dialog in dialogs:
        qtbot.addWidget(dialog)
        dialog.show()
        assert unnamed(dialog) == [], "\n".join(unnamed(dialog))
        if isinstance(dialog, ModelsDialog) and dialog.ollama is not None:
            dialog.ollama.stop()


def test_keyboard_alone_reaches_the_composer_sends_and_opens_the_shortcuts(
    qtbot: Any, make_window: WindowFactory
) -> None:
    window, provider = make_window(["Hello!"])
    window.activateWindow()
    window.sidebar.list.setFocus()
    # Tab moves on from the conversation list and reaches the composer, each focus visible.
    reached = []
    for _ in range(30):
        qtbot.keyClick(window.focusWidget(), Qt.Key.Key_Tab)
        reached.append(window.focusWidget())
        if window.focusWidget() is window.pane.composer:
            break
    assert window.pane.composer in reached
    qtbot.keyClicks(window.pane.composer, "Hi")
    qtbot.keyClick(window.pane.composer, Qt.Key.Key_Return)
    idle(qtbot, window)
    assert provider.requests and provider.requests[0].messages[-1].text == "Hi"
    shortcuts = window.shortcut_list()
    texts = dict(shortcuts)
    assert texts["New chat"] and texts["Models…"] == "Ctrl+M" and texts["Bigger text"]
    assert "Stop the answer" in texts and "System prompt…" in texts


def test_finished_answers_and_tool_cards_are_announced(
    qtbot: Any, make_window: WindowFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    said: list[str] = []
    real = QAccessible.updateAccessibility

    def listen(event: QAccessibleEvent) -> None:
        if event.type() == QAccessible.Event.Announcement:
            said.append(event.message())  # type: ignore[attr-defined]
        real(event)

    monkeypatch.setattr(QAccessible, "updateAccessibility", listen)
    window, _ = make_window([Step(tool_calls=[CHART_CALL]), "Here is your chart."])
    type_and_send(qtbot, window, "Chart my sales")
    idle(qtbot, window)
    assert any(s.startswith("create_chart done") for s in said), said
    assert said[-1] == "Answer: Here is your chart."
