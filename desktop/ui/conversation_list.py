"""The sidebar: the conversations in the store, newest first, with search, New chat, and
a context menu to rename, export or delete one."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QInputDialog,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop.core.storage.chats import ChatStore
from desktop.ui.accessible import describe


class ConversationList(QWidget):
    """A view over the chat store. It renames and exports by itself; opening, creating and
    deleting a conversation touch the running turn, so it asks the window (signals)."""

    chosen = Signal(int)
    new_requested = Signal()
    delete_requested = Signal()

    def __init__(self, store: ChatStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.current: int | None = None
        self.setObjectName("sidebar")
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search conversations")
        describe(self.search, "Find conversations by title or by what was said (Ctrl+F)",
                 "Search conversations")  # fmt: skip
        self.search.textChanged.connect(lambda _text: self.refresh())
        self.new_button = QPushButton("New chat")
        describe(self.new_button, "Start a new conversation (Ctrl+N)")
        self.new_button.clicked.connect(self.new_requested)
        self.list = QListWidget()
        describe(self.list, "Your conversations, newest first; Enter opens one, F2 renames it",
                 "Conversations")  # fmt: skip
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.currentItemChanged.connect(self._on_item_chosen)
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._menu)
        layout = QVBoxLayout(self)
        layout.addWidget(self.new_button)
        layout.addWidget(self.search)
        layout.addWidget(self.list)

    def refresh(self, *, keep_selection: bool = True) -> None:
        self.list.blockSignals(True)
        self.list.clear()
        for info in self.store.conversations(self.search.text().strip()):
            item = QListWidgetItem(info.title)
            item.setData(Qt.ItemDataRole.UserRole, info.id)
            item.setToolTip(f"{info.message_count} messages")
            self.list.addItem(item)
            if keep_selection and info.id == self.current:
                self.list.setCurrentItem(item)
        self.list.blockSignals(False)

    def mark_current(self, conversation_id: int | None) -> None:
        """Show `conversation_id` as the open one, without emitting `chosen`."""
        self.current = conversation_id
        for row in range(self.list.count()):
            item = self.list.item(row)
            if item.data(Qt.ItemDataRole.UserRole) == conversation_id:
                self.list.blockSignals(True)
                self.list.setCurrentItem(item)
                self.list.blockSignals(False)

    def choose_first(self) -> bool:
        """Open the newest conversation; False if there is none."""
        if not self.list.count():
            return False
        self.list.setCurrentRow(0)
        return True

    def rename(self) -> None:
        if self.current is None:
            return
        title, ok = QInputDialog.getText(
            self, "Rename chat", "Title", text=self.store.title(self.current)
        )
        if ok and title.strip():
            self.store.rename(self.current, title.strip())
            self.refresh()

    def export(self, kind: str, path: Path | None = None) -> None:
        """The open conversation as Markdown (`md`) or JSON, to `path` or a chosen file."""
        if self.current is None:
            return
        if path is None:
            title = self.store.title(self.current)
            chosen, _ = QFileDialog.getSaveFileName(self, "Export chat", f"{title}.{kind}")
            if not chosen:
                return
            path = Path(chosen)
        if kind == "md":
            path.write_text(self.store.export_markdown(self.current), encoding="utf-8")
        else:
            data = self.store.export_json(self.current)
            path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")

    def _on_item_chosen(self, item: QListWidgetItem | None, _previous: object = None) -> None:
        if item is not None:
            self.chosen.emit(int(item.data(Qt.ItemDataRole.UserRole)))

    def _menu(self, position: QPoint) -> None:
        menu = QMenu(self)
        menu.addAction("Rename…", self.rename)
        menu.addAction("Export as Markdown…", lambda: self.export("md"))
        menu.addAction("Export as JSON…", lambda: self.export("json"))
        menu.addSeparator()
        menu.addAction("Delete", self.delete_requested.emit)
        menu.exec(self.list.mapToGlobal(position))
