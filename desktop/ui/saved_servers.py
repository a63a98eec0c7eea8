"""Settings → Backend's first row: servers saved by name. Choosing one fills the tab with
its connection; *Save as…* keeps what the tab says under a name, for a conversation or a
preset to choose (the chat's header lists them); *Remove* forgets one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

from desktop.core.storage.servers import ServerError, checked_name, in_use
from desktop.core.storage.settings import Settings
from desktop.ui.accessible import describe

UNSAVED = "This connection (not saved)"


class SavedServers(QWidget):
    """Signals: chosen(object): a saved server's connection fields (a dict), to show."""

    chosen = Signal(object)

    def __init__(
        self,
        settings: Settings,
        connection: Callable[[], dict[str, Any]],
        parent: QWidget | None = None,
    ) -> None:
        """`connection`: the connection fields the tab says now (what *Save as…* keeps)."""
        super().__init__(parent)
        self.servers = {name: dict(fields) for name, fields in settings.servers.items()}
        self._connection = connection
        self.combo = QComboBox()
        describe(self.combo, "Servers saved by name: choose one to talk to it", "Saved server")
        self.combo.activated.connect(self._on_chosen)
        self.save_button = QPushButton("Save as…")
        describe(self.save_button, "Keep this connection under a name, for a conversation "
                 "or a preset to choose")  # fmt: skip
        self.save_button.clicked.connect(self._ask_name)
        self.remove_button = QPushButton("Remove")
        describe(self.remove_button, "Forget the chosen saved server (its conversations go "
                 "back to the server in use)")  # fmt: skip
        self.remove_button.clicked.connect(self.remove)
        self.problem = QLabel()
        self.problem.hide()
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.combo, 1)
        row.addWidget(self.save_button)
        row.addWidget(self.remove_button)
        row.addWidget(self.problem)
        self._fill(in_use(settings))

    def name(self) -> str:
        """The saved server the tab shows ("": a connection not saved)."""
        return str(self.combo.currentData() or "")

    def save_as(self, name: str) -> str:
        """Keep the tab's connection as `name`; what went wrong, or ""."""
        try:
            name = checked_name(name, self.servers)
        except ServerError as exc:
            return str(exc)
        self.servers[name] = self._connection()
        self._fill(name)
        return ""

    def remove(self) -> None:
        if name := self.name():
            del self.servers[name]
            self._fill("")

    def _ask_name(self) -> None:
        name, ok = QInputDialog.getText(
            self, "Save this server", "Name (e.g. GPU box):", QLineEdit.EchoMode.Normal,
            self.name(),
        )  # fmt: skip
        if ok:
            problem = self.save_as(name)
            self.problem.setText(problem)
            self.problem.setVisible(bool(problem))

    def _on_chosen(self, _index: int) -> None:
        if name := self.name():
            self.chosen.emit(dict(self.servers[name]))
        self.remove_button.setEnabled(bool(name))

    def _fill(self, current: str) -> None:
        self.combo.clear()
        self.combo.addItem(UNSAVED, "")
        for name in self.servers:
            self.combo.addItem(name, name)
        self.combo.setCurrentIndex(max(self.combo.findData(current), 0))
        self.remove_button.setEnabled(bool(self.name()))
