"""The composer: where a message is written, with Send and Stop beside it."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QBuffer, QIODevice, QMimeData, Qt, Signal
from PySide6.QtGui import QImage, QKeyEvent, QPixmap
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from desktop.core.attachments import Attachment, ImageAttachment
from desktop.ui.accessible import describe


class Composer(QPlainTextEdit):
    """Enter sends, Shift+Enter starts a new line. Files dropped on it and images pasted
    into it become attachments (signals files_dropped(list[Path]), image_pasted(bytes))."""

    submitted = Signal()
    files_dropped = Signal(list)
    image_pasted = Signal(bytes)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("composer")
        describe(self, "Write your message; Enter sends it, Shift+Enter starts a new line; "
                 "drop or paste files and images to attach them", "Message")  # fmt: skip
        self.setPlaceholderText("Ask anything…  (Enter sends, Shift+Enter for a new line)")
        self.setFixedHeight(84)

    def canInsertFromMimeData(self, source: QMimeData) -> bool:
        return source.hasImage() or source.hasUrls() or super().canInsertFromMimeData(source)

    def insertFromMimeData(self, source: QMimeData) -> None:
        files = [Path(url.toLocalFile()) for url in source.urls() if url.isLocalFile()]
        if files:
            self.files_dropped.emit(files)
        elif source.hasImage():
            image = QImage(source.imageData())
            buffer = QBuffer()
            buffer.open(QIODevice.OpenModeFlag.WriteOnly)
            image.save(buffer, "PNG")  # type: ignore[call-overload]  # a str at run time
            self.image_pasted.emit(bytes(buffer.data().data()))
        else:
            super().insertFromMimeData(source)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        enter = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if enter and not event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.submitted.emit()
            return
        super().keyPressEvent(event)


class AttachmentChip(QFrame):
    """An attachment waiting to be sent: a thumbnail or the file's name and size, and ×."""

    removed = Signal(object)

    def __init__(self, attachment: Attachment, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("attachmentChip")
        self.attachment = attachment
        row = QHBoxLayout(self)
        row.setContentsMargins(6, 2, 2, 2)
        if isinstance(attachment, ImageAttachment):
            picture = QLabel()
            pixmap = QPixmap()
            pixmap.loadFromData(attachment.image.data)
            picture.setPixmap(
                pixmap.scaled(48, 48, Qt.AspectRatioMode.KeepAspectRatio,
                              Qt.TransformationMode.SmoothTransformation)
            )  # fmt: skip
            picture.setAccessibleName(f"Attached image {attachment.name}")
            row.addWidget(picture)
            what = attachment.name
        else:
            what = f"{attachment.name} ({attachment.tokens:,} tokens)"
        label = QLabel(what)
        row.addWidget(label)
        remove = QToolButton()
        remove.setText("×")
        remove.setAccessibleName(f"Remove the attachment {attachment.name}")
        remove.setToolTip("Remove")
        remove.clicked.connect(lambda: self.removed.emit(self))
        row.addWidget(remove)


class ComposerBar(QWidget):
    """The composer with its buttons: Attach, Send while idle, Stop while a turn runs; the
    attachments waiting to go; while an earlier message is edited, a line that says so,
    with Cancel."""

    send_requested = Signal()
    stop_requested = Signal()
    edit_cancelled = Signal()
    attach_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.editing_note = QLabel("Editing a message: sending it makes a new version.")
        self.editing_note.setObjectName("editingNote")
        self.cancel_edit = QToolButton()
        self.cancel_edit.setText("Cancel")
        describe(self.cancel_edit, "Stop editing: the message stays as it was", "Cancel editing")
        self.cancel_edit.clicked.connect(self._cancel_edit)
        self.editing_row = QWidget()
        editing = QHBoxLayout(self.editing_row)
        editing.setContentsMargins(0, 0, 0, 0)
        editing.addWidget(self.editing_note, 1)
        editing.addWidget(self.cancel_edit)
        self.editing_row.hide()
        self.attachments: list[Attachment] = []
        self.attachment_row = QWidget()
        self.attachment_layout = QHBoxLayout(self.attachment_row)
        self.attachment_layout.setContentsMargins(0, 0, 0, 0)
        self.attachment_layout.addStretch()
        self.attachment_row.hide()
        self.editor = Composer()
        self.editor.submitted.connect(self.send_requested)
        self.attach_button = QPushButton("Attach…")
        self.attach_button.setAccessibleDescription("Attach images, text files or PDFs")
        self.attach_button.setToolTip("Attach images, text files or PDFs (or drop or paste them)")
        self.attach_button.clicked.connect(self.attach_requested)
        self.send_button = QPushButton("Send")
        self.send_button.setDefault(True)
        self.send_button.clicked.connect(self.send_requested)
        describe(self.send_button, "Send the message (Enter)")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the answer (Esc)")
        self.stop_button.clicked.connect(self.stop_requested)
        describe(self.stop_button, "Stop the answer (Esc)")
        self.stop_button.hide()
        buttons = QVBoxLayout()
        buttons.addWidget(self.send_button)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.attach_button)
        buttons.addStretch()
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.editor, 1)
        row.addLayout(buttons)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        column.addWidget(self.editing_row)
        column.addWidget(self.attachment_row)
        column.addLayout(row)

    def add_attachment(self, attachment: Attachment) -> None:
        chip = AttachmentChip(attachment)
        chip.removed.connect(self._remove)
        self.attachments.append(attachment)
        self.attachment_layout.insertWidget(self.attachment_layout.count() - 1, chip)
        self.attachment_row.show()

    def _remove(self, chip: AttachmentChip) -> None:
        self.attachments.remove(chip.attachment)
        self.attachment_layout.removeWidget(chip)
        chip.deleteLater()
        self.attachment_row.setVisible(bool(self.attachments))

    def take_attachments(self) -> list[Attachment]:
        """The attachments, taken out of the bar."""
        taken, self.attachments = self.attachments, []
        while self.attachment_layout.count() > 1:
            item = self.attachment_layout.takeAt(0)
            if item is not None and (widget := item.widget()) is not None:
                widget.deleteLater()
        self.attachment_row.hide()
        return taken

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
