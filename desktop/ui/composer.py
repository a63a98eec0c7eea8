"""The composer: where a message is written, with Send and Stop beside it."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)


class Composer(QPlainTextEdit):
    """Enter sends, Shift+Enter starts a new line."""

    submitted = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("composer")
        self.setPlaceholderText("Ask anything…  (Enter sends, Shift+Enter for a new line)")
        self.setFixedHeight(84)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        enter = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if enter and not event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.submitted.emit()
            return
        super().keyPressEvent(event)


class ComposerBar(QWidget):
    """The composer with its buttons: Send while idle, Stop while a turn runs; while an
    earlier message is edited, a line that says so, with Cancel."""

    send_requested = Signal()
    stop_requested = Signal()
    edit_cancelled = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.editing_note = QLabel("Editing a message: sending it makes a new version.")
        self.editing_note.setObjectName("editingNote")
        self.cancel_edit = QToolButton()
        self.cancel_edit.setText("Cancel")
        self.cancel_edit.setAccessibleName("Cancel editing")
        self.cancel_edit.clicked.connect(self._cancel_edit)
        self.editing_row = QWidget()
        editing = QHBoxLayout(self.editing_row)
        editing.setContentsMargins(0, 0, 0, 0)
        editing.addWidget(self.editing_note, 1)
        editing.addWidget(self.cancel_edit)
        self.editing_row.hide()
        self.editor = Composer()
        self.editor.submitted.connect(self.send_requested)
        self.send_button = QPushButton("Send")
        self.send_button.setDefault(True)
        self.send_button.clicked.connect(self.send_requested)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the answer (Esc)")
        self.stop_button.clicked.connect(self.stop_requested)
        self.stop_button.hide()
        buttons = QVBoxLayout()
        buttons.addWidget(self.send_button)
        buttons.addWidget(self.stop_button)
        buttons.addStretch()
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.editor, 1)
        row.addLayout(buttons)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        column.addWidget(self.editing_row)
        column.addLayout(row)

    def show_editing(self, editing: bool) -> None:
        self.editing_row.setVisible(editing)

    def _cancel_edit(self) -> None:
        self.editor.clear()
        self.edit_cancelled.emit()

    def set_busy(self, busy: bool) -> None:
        self.send_button.setVisible(not busy)
        self.stop_button.setVisible(busy)

    def take_text(self) -> str:
        """The message written, taken out of the editor."""
        text = self.editor.toPlainText().strip()
        if text:
            self.editor.clear()
        return text
