"""The window's menus and their shortcuts (listed in one place, for Help to show)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Protocol

from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMenu, QMenuBar

from desktop.ui.api_host import ApiHost
from desktop.ui.inspector import InspectorPanel
from desktop.ui.models_dialog import ModelsDialog
from desktop.ui.theme import Appearance

Shortcut = QKeySequence | QKeySequence.StandardKey | str | None


class Chat(Protocol):
    """What the menus ask of the chat pane and the controller."""

    def edit_system_prompt(self) -> None: ...


class Turns(Protocol):
    @property
    def api(self) -> ApiHost: ...

    def stop(self) -> None: ...

    def reconnect(self) -> None: ...


class Window(Protocol):
    """What the menus act on: the window's own actions, named here so that menus need not
    import the window (which builds them)."""

    @property
    def appearance(self) -> Appearance: ...
    @property
    def inspector_dock(self) -> QDockWidget: ...
    @property
    def inspector(self) -> InspectorPanel: ...
    @property
    def pane(self) -> Chat: ...
    @property
    def controller(self) -> Turns: ...

    def menuBar(self) -> QMenuBar: ...
    def new_conversation(self) -> None: ...
    def rename_conversation(self) -> None: ...
    def delete_conversation(self) -> None: ...
    def export(self, kind: str, path: Path | None = None) -> None: ...
    def open_models(self) -> ModelsDialog: ...
    def open_presets(self) -> None: ...
    def open_documents(self) -> None: ...
    def open_tools(self) -> None: ...
    def open_settings(self) -> None: ...
    def close(self) -> bool: ...
    def focus_search(self) -> None: ...
    def set_theme(self, choice: str) -> None: ...
    def zoom(self, step: int) -> None: ...
    def show_shortcuts(self) -> None: ...
    def open_logs(self) -> None: ...
    def about(self) -> None: ...


def _action(
    menu: QMenu, text: str, slot: Callable[[], object], shortcut: Shortcut = None
) -> QAction:
    item = menu.addAction(text)
    item.triggered.connect(slot)
    if shortcut is not None:
        item.setShortcut(QKeySequence(shortcut))
    return item


def show_api_requests(window: Window) -> None:
    """The inspector on the local API's requests (the latest a hundred) instead of the
    chat's turns, until another conversation is opened."""
    window.inspector_dock.show()  # first: showing it refreshes it with the chat's turns
    window.inspector.set_traces(window.controller.api.traces)


def build_menus(window: Window) -> None:
    bar = window.menuBar()
    file_menu = bar.addMenu("&File")
    _action(file_menu, "New chat", window.new_conversation, QKeySequence.StandardKey.New)
    _action(file_menu, "Rename chat…", window.rename_conversation, "F2")
    _action(file_menu, "Delete chat", window.delete_conversation)
    file_menu.addSeparator()
    _action(file_menu, "Export as Markdown…", lambda: window.export("md"))
    _action(file_menu, "Export as JSON…", lambda: window.export("json"))
    file_menu.addSeparator()
    _action(file_menu, "Models…", lambda: window.open_models(), "Ctrl+M")
    _action(file_menu, "Presets…", window.open_presets, "Ctrl+Shift+P")
    _action(file_menu, "Documents…", window.open_documents, "Ctrl+Shift+D")
    _action(file_menu, "Tools…", window.open_tools, "Ctrl+Shift+T")
    _action(file_menu, "Settings…", window.open_settings, QKeySequence.StandardKey.Preferences)
    _action(file_menu, "Quit", window.close, QKeySequence.StandardKey.Quit)
    view_menu = bar.addMenu("&View")
    toggle = window.inspector_dock.toggleViewAction()
    toggle.setShortcut(QKeySequence("Ctrl+I"))
    view_menu.addAction(toggle)
    find = QKeySequence.StandardKey.Find
    _action(view_menu, "Search conversations", window.focus_search, find)
    _action(view_menu, "Local API requests", partial(show_api_requests, window))
    view_menu.addSeparator()
    theme_menu = view_menu.addMenu("Theme")
    themes = QActionGroup(theme_menu)
    for choice, text in (("system", "Follow the system"), ("light", "Light"), ("dark", "Dark")):
        item = _action(theme_menu, text, partial(window.set_theme, choice))
        item.setCheckable(True)
        item.setChecked(window.appearance.choice == choice)
        themes.addAction(item)
    _action(view_menu, "Bigger text", lambda: window.zoom(1), QKeySequence.StandardKey.ZoomIn)
    _action(view_menu, "Smaller text", lambda: window.zoom(-1), QKeySequence.StandardKey.ZoomOut)
    _action(view_menu, "Default text size", lambda: window.zoom(0), "Ctrl+0")
    chat_menu = bar.addMenu("&Chat")
    _action(chat_menu, "Stop the answer", window.controller.stop, "Esc")
    _action(chat_menu, "Reconnect", window.controller.reconnect, "Ctrl+R")
    chat_menu.addSeparator()
    _action(chat_menu, "System prompt…", window.pane.edit_system_prompt, "Ctrl+Shift+S")
    help_menu = bar.addMenu("&Help")
    _action(help_menu, "Keyboard shortcuts", window.show_shortcuts, "F1")
    _action(help_menu, "Open the logs folder", window.open_logs)
    _action(help_menu, "About Loomchat", window.about)
