"""A tool step in the chat: name, arguments, state, duration, result, and its images."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import QFontDatabase, QMouseEvent, QPixmap
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from desktop.core.messages import Image, Source, unfenced
from desktop.ui.accessible import describe
from desktop.ui.citations import linked, open_source, source_of

RESULT_PREVIEW_CHARS = 400
SPINNER = "◐◓◑◒"
THUMBNAIL = QSize(320, 200)

STATE_TEXT = {
    "running": "running",
    "done": "✓ done",
    "failed": "✗ failed",
    "rejected": "⊘ not run",
}


def pixmap_of(image: Image) -> QPixmap:
    pixmap = QPixmap()
    pixmap.loadFromData(image.data)
    return pixmap


class ImageThumb(QLabel):
    """A tool image, scaled down; a click opens it full size (with Save)."""

    clicked = Signal(object)

    def __init__(self, image: Image, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.image = image
        pixmap = pixmap_of(image)
        if pixmap.width() > THUMBNAIL.width() or pixmap.height() > THUMBNAIL.height():
            pixmap = pixmap.scaled(
                THUMBNAIL,
                Qt.AspectRatioMode.KeepAspectRatio,
                Qt.TransformationMode.SmoothTransformation,
            )
        self.setPixmap(pixmap)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip("Click to enlarge or save")

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            self.clicked.emit(self.image)
        super().mouseReleaseEvent(event)


class ToolCard(QFrame):
    image_clicked = Signal(object)

    def __init__(
        self, call_id: str, name: str, arguments: Any, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("toolCard")
        self.call_id = call_id
        self.name = name
        self.arguments = arguments
        self.state = "running"
        self.result_text = ""
        self.images: list[Image] = []
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.setSpacing(4)
        header = QHBoxLayout()
        self.title = QLabel(f"<b>{name}</b>")
        header.addWidget(self.title)
        header.addStretch()
        self.state_label = QLabel()
        self.state_label.setObjectName("toolState")
        header.addWidget(self.state_label)
        self.duration_label = QLabel()
        header.addWidget(self.duration_label)
        layout.addLayout(header)

        self.arguments_label = QLabel(format_arguments(arguments))
        self.arguments_label.setFont(mono)
        self.arguments_label.setWordWrap(True)
        self.arguments_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.arguments_label)

        self.reason_label = QLabel()
        self.reason_label.setWordWrap(True)
        self.reason_label.setObjectName("toolReason")
        self.reason_label.hide()
        layout.addWidget(self.reason_label)

        self.result_label = QLabel()
        self.result_label.setFont(mono)
        self.result_label.setWordWrap(True)
        self.result_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.result_label.hide()
        layout.addWidget(self.result_label)
        self.sources_label = QLabel()  # a document search's sources, each opening its file
        self.sources_label.setTextFormat(Qt.TextFormat.MarkdownText)
        self.sources_label.setWordWrap(True)
        self.sources_label.linkActivated.connect(self._open_source)
        self.sources_label.hide()
        layout.addWidget(self.sources_label)
        self.expand_button = QToolButton()
        self.expand_button.setText("Show all")
        self.expand_button.setCheckable(True)
        self.expand_button.toggled.connect(self._show_result)
        describe(self.expand_button, "Show the tool's whole result", f"Show all of {name}'s result")
        self.expand_button.hide()
        layout.addWidget(self.expand_button, alignment=Qt.AlignmentFlag.AlignLeft)

        self.images_row = QHBoxLayout()
        self.images_row.setSpacing(6)
        layout.addLayout(self.images_row)
        self.images_note = QLabel()
        self.images_note.setObjectName("imagesNote")
        self.images_note.hide()
        layout.addWidget(self.images_note)

        self.approval: QWidget | None = None
        self._spin = 0
        self._spinner = QTimer(self)
        self._spinner.setInterval(120)
        self._spinner.timeout.connect(self._tick)
        self._spinner.start()
        self._render_state()

    def _tick(self) -> None:
        self._spin = (self._spin + 1) % len(SPINNER)
        self._render_state()

    def _render_state(self) -> None:
        text = STATE_TEXT[self.state]
        if self.state == "running":
            text = f"{SPINNER[self._spin]} running"
        self.state_label.setText(text)
        self.setProperty("state", self.state)

    def ask(self, on_answer: Callable[[str], None], per_chat: bool = False) -> None:
        """Show the approval question; `on_answer` gets "once", "always", "deny" or
        "never" (deny, and never offer the tool again). `per_chat`: "always" holds for this
        conversation only."""
        self.approval = QWidget()
        row = QHBoxLayout(self.approval)
        row.setContentsMargins(0, 4, 0, 0)
        row.addWidget(QLabel(f"<b>Allow {self.name} to run with these arguments?</b>"))
        row.addStretch()
        always = "Always in this chat" if per_chat else f"Always allow {self.name}"
        later = "in this conversation " if per_chat else ""
        choices = (
            ("Allow once", "once", f"Run {self.name} this time"),
            (always, "always", f"Run {self.name} now and from now on {later}without asking"),
            ("Deny", "deny", f"Do not run {self.name}; the model is told"),
            ("Never", "never", f"Deny, and never offer {self.name} again (Settings → Tools)"),
        )
        for text, decision, description in choices:
            button = QPushButton(text)
            button.setObjectName(f"approve_{decision}")
            describe(button, description)
            button.clicked.connect(lambda _=False, d=decision: self._answered(d, on_answer))
            row.addWidget(button)
        layout = self.layout()
        assert isinstance(layout, QVBoxLayout)
        layout.insertWidget(2, self.approval)
        self._spinner.stop()
        self.state_label.setText("waiting for you")

    def _answered(self, decision: str, on_answer: Callable[[str], None]) -> None:
        allowed = decision in ("once", "always")
        self.end_question("approved" if allowed else "denied")
        if allowed:
            self._spinner.start()
        on_answer(decision)

    def end_question(self, outcome: str) -> None:
        """The question is over: answered, or the turn was stopped."""
        if self.approval is not None:
            self.approval.hide()
            self.approval.deleteLater()
            self.approval = None
        self.state_label.setText(outcome)

    def finish(self, content: str, error: str | None, duration_ms: float, images: list[Image],
               sources: dict[int, Source] | None = None) -> None:  # fmt: skip
        """The call's result; `sources`: what a document search's passages came from."""
        self.state = "failed" if error else "done"
        self._spinner.stop()
        self._render_state()
        self.duration_label.setText(_duration(duration_ms))
        self.result_text = unfenced(content)  # the quotes' fences are for the model
        self._show_result(False)
        self.result_label.show()
        self.expand_button.setVisible(len(content) > RESULT_PREVIEW_CHARS)
        for image in images:
            thumb = ImageThumb(image)
            thumb.clicked.connect(self.image_clicked.emit)
            self.images_row.addWidget(thumb)
        self.images_row.addStretch()
        self.images = list(images)
        self.sources = sources or {}
        if self.sources:
            lines = [
                linked(f"[{n}] {s.where}", self.sources) for n, s in sorted(self.sources.items())
            ]
            self.sources_label.setText("Sources:  \n" + "  \n".join(lines))
            self.sources_label.show()

    def _open_source(self, href: str) -> None:
        source = source_of(href, self.sources)
        if source is not None:
            open_source(source)

    def reject(self, reason: str) -> None:
        self.state = "rejected"
        self._spinner.stop()
        self._render_state()
        self.reason_label.setText(reason)
        self.reason_label.show()

    def mark_images(self, sent_to_model: bool) -> None:
        """Say whether the model got the images, or not (no vision)."""
        if not self.images:
            return
        count = len(self.images)
        what = "image" if count == 1 else f"{count} images"
        self.images_note.setText(
            f"The {what} went to the model with the result."
            if sent_to_model
            else f"The {what} stayed here: this model cannot see images."
        )
        self.images_note.show()

    def _show_result(self, everything: bool) -> None:
        text = self.result_text
        if not everything and len(text) > RESULT_PREVIEW_CHARS:
            text = text[:RESULT_PREVIEW_CHARS] + " …"
        self.result_label.setText(text)
        self.expand_button.setText("Show less" if everything else "Show all")


def format_arguments(arguments: Any) -> str:
    """One line per argument, values as compact JSON: easy to scan, exact to copy; a text
    of several lines (a program to approve, a file to write) as its lines, indented."""
    if not isinstance(arguments, dict):
        return json.dumps(arguments, ensure_ascii=False)
    if not arguments:
        return "(no arguments)"
    return "\n".join(_argument(key, value) for key, value in arguments.items())


def _argument(key: str, value: Any) -> str:
    if isinstance(value, str) and "\n" in value.strip():
        return f"{key}:\n" + "\n".join(f"    {line}" for line in value.splitlines())
    return f"{key}: {json.dumps(value, ensure_ascii=False)}"


def _duration(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"
