"""Help → Keyboard shortcuts: every key the app answers to, from its menus and KEYS; and
Help → About."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QMainWindow,
    QMenu,
    QMessageBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop import __version__
from desktop.ui.accessible import complete, describe

# Keys that act without a menu item.
KEYS = [
    ("Send the message", "Enter"),
    ("A new line in the message", "Shift+Enter"),
    ("Rename the conversation", "F2"),
    ("Move between controls", "Tab, Shift+Tab"),
    ("Open a conversation, press a button", "Enter, Space"),
]


def shortcut_list(window: QMainWindow) -> list[tuple[str, str]]:
    """Every shortcut of the window's menus (what it does, its keys), then KEYS."""
    found: list[tuple[str, str]] = []

    def walk(menu: QMenu) -> None:
        for item in menu.actions():
            if isinstance(sub := item.menu(), QMenu):
                walk(sub)
            elif not item.shortcut().isEmpty():
                keys = item.shortcut().toString(QKeySequence.SequenceFormat.NativeText)
                found.append((item.text().replace("&", ""), keys))

    for item in window.menuBar().actions():
        if isinstance(menu := item.menu(), QMenu):
            walk(menu)
    return found + [k for k in KEYS if k[0] not in dict(found)]


class ShortcutsDialog(QDialog):
    def __init__(self, shortcuts: list[tuple[str, str]], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.table = QTableWidget(len(shortcuts), 2, self)
        self.table.setHorizontalHeaderLabels(["What", "Keys"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        for row, (what, keys) in enumerate(shortcuts):
            self.table.setItem(row, 0, QTableWidgetItem(what))
            self.table.setItem(row, 1, QTableWidgetItem(keys))
        self.table.resizeColumnsToContents()
        describe(self.table, "Every keyboard shortcut of the app", "Keyboard shortcuts")
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        close.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(close)
        complete(self)
        self.resize(520, 520)


def show_about(parent: QWidget, data_folder: Path, logs_folder: Path) -> None:
    QMessageBox.about(
        parent,
        "About Loomchat",
        f"<b>Loomchat {__version__}</b><p>Local models with tools, offline.</p>"
        f"<p>Conversations and settings: {data_folder}<br>"
        f"Logs (attach them to a bug report): {logs_folder}</p>",
    )
