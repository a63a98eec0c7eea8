"""A message as the chat draws it: a bubble with its actions, and the switcher between the
versions of a message that was edited or answered again."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from desktop.core.messages import Image, Source
from desktop.core.storage.chats import Branches
from desktop.ui.markdown_view import MarkdownView
from desktop.ui.tool_card import ImageThumb


class BranchSwitcher(QWidget):
    """ "< 2/3 >" above a message that has other versions (edits or regenerations)."""

    chosen = Signal(int)  # the seq of the version to show

    def __init__(self, branches: Branches, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("branchSwitcher")
        self.branches = branches
        self.previous = QToolButton()
        self.previous.setText("‹")
        self.previous.setAccessibleName("Previous version")
        self.next = QToolButton()
        self.next.setText("›")
        self.next.setAccessibleName("Next version")
        self.label = QLabel(f"{branches.index + 1}/{branches.count}")
        self.label.setAccessibleName(f"Version {branches.index + 1} of {branches.count}")
        self.previous.setEnabled(branches.index > 0)
        self.next.setEnabled(branches.index < branches.count - 1)
        self.previous.clicked.connect(
            lambda: self.chosen.emit(branches.siblings[branches.index - 1])
        )
        self.next.clicked.connect(lambda: self.chosen.emit(branches.siblings[branches.index + 1]))
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(2)
        row.addWidget(self.previous)
        row.addWidget(self.label)
        row.addWidget(self.next)
        row.addStretch()


class MessageBubble(QFrame):
    """A message of the person's or the model's, with Copy and, once it is stored (`seq`),
    Edit (the person's) or Regenerate (the model's), and Delete."""

    edit_requested = Signal(int, str)
    regenerate_requested = Signal(int)
    delete_requested = Signal(int)

    def __init__(
        self,
        role: str,
        text: str = "",
        images: list[Image] | None = None,
        seq: int | None = None,
        sources: dict[int, Source] | None = None,
    ) -> None:
        super().__init__()
        self.setObjectName(f"{role}Bubble")
        self.role = role
        self.seq = seq
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 8, 12, 8)
        layout.setSpacing(4)
        self.thinking_button = QToolButton()
        self.thinking_button.setText("Thinking…")
        self.thinking_button.setCheckable(True)
        self.thinking_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.thinking_button.setArrowType(Qt.ArrowType.RightArrow)
        self.thinking_button.hide()
        self.thinking_label = QLabel()
        self.thinking_label.setObjectName("thinking")
        self.thinking_label.setWordWrap(True)
        self.thinking_label.hide()
        self.thinking_button.toggled.connect(self._toggle_thinking)
        layout.addWidget(self.thinking_button, alignment=Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.thinking_label)
        self.body = MarkdownView(text, sources=sources)
        layout.addWidget(self.body)
        if images:
            row = QHBoxLayout()
            for image in images:
                row.addWidget(ImageThumb(image))
            row.addStretch()
            layout.addLayout(row)
        self.thinking = ""
        self.action_row = self._action_row()
        layout.addWidget(self.action_row)

    def set_seq(self, seq: int) -> None:
        """The message is stored now: its actions become available."""
        self.seq = seq
        layout = self.layout()
        old, self.action_row = self.action_row, self._action_row()
        if layout is not None:
            layout.replaceWidget(old, self.action_row)
        old.deleteLater()

    def _action_row(self) -> QWidget:
        row = QWidget()
        row.setObjectName("messageActions")
        buttons = QHBoxLayout(row)
        buttons.setContentsMargins(0, 0, 0, 0)
        buttons.setSpacing(4)
        buttons.addStretch()
        self.copy_button = self._action("Copy", "Copy this message", self.copy)
        buttons.addWidget(self.copy_button)
        self.edit_button = self.regenerate_button = None
        if self.seq is None:
            return row  # a message still arriving: stored (with its seq) when it is complete
        seq = self.seq
        if self.role == "user":
            self.edit_button = self._action(
                "Edit", "Edit this message and send it again (the old one is kept)",
                lambda: self.edit_requested.emit(seq, self.body.text),
            )  # fmt: skip
            buttons.addWidget(self.edit_button)
        else:
            self.regenerate_button = self._action(
                "Regenerate", "Answer again (this answer is kept)",
                lambda: self.regenerate_requested.emit(seq),
            )  # fmt: skip
            buttons.addWidget(self.regenerate_button)
        self.delete_button = self._action(
            "Delete", "Delete this message and what follows it",
            lambda: self.delete_requested.emit(seq),
        )  # fmt: skip
        buttons.addWidget(self.delete_button)
        return row

    def _action(self, text: str, description: str, slot: object) -> QToolButton:
        button = QToolButton()
        button.setText(text)
        button.setToolTip(description)
        button.setAccessibleName(f"{text} message")
        button.setAccessibleDescription(description)
        button.setAutoRaise(True)
        button.clicked.connect(slot)
        return button

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.body.text)

    def set_text(self, text: str) -> None:
        self.body.set_text(text)

    def set_thinking(self, text: str) -> None:
        self.thinking = text
        self.thinking_button.setVisible(bool(text.strip()))
        self.thinking_label.setText(text)

    def _toggle_thinking(self, shown: bool) -> None:
        self.thinking_button.setArrowType(
            Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow
        )
        self.thinking_label.setVisible(shown)
