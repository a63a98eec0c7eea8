"""The conversation: message bubbles rendered as Markdown, tool cards, the streamed answer."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from desktop.core.events import ToolCallParsed, ToolRejected, ToolResult
from desktop.core.messages import Image, Message
from desktop.ui.markdown_view import MarkdownView
from desktop.ui.tool_card import ImageThumb, ToolCard

# Streamed text is painted at most this often: at 2,000 tokens/s, repainting per token
# would starve the event loop.
REPAINT_MS = 40


class MessageBubble(QFrame):
    def __init__(self, role: str, text: str = "", images: list[Image] | None = None) -> None:
        super().__init__()
        self.setObjectName(f"{role}Bubble")
        self.role = role
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
        self.body = MarkdownView(text)
        layout.addWidget(self.body)
        if images:
            row = QHBoxLayout()
            for image in images:
                row.addWidget(ImageThumb(image))
            row.addStretch()
            layout.addLayout(row)
        self.thinking = ""

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


class ChatView(QScrollArea):
    """Signals: load_earlier_requested(), image_clicked(object)."""

    load_earlier_requested = Signal()
    image_clicked = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.content = QWidget()
        self.content.setObjectName("chatContent")
        self.column = QVBoxLayout(self.content)
        self.column.setContentsMargins(16, 12, 16, 12)
        self.column.setSpacing(10)
        self.earlier_button = QPushButton("Load earlier messages")
        self.earlier_button.setFlat(True)
        self.earlier_button.clicked.connect(self.load_earlier_requested.emit)
        self.earlier_button.hide()
        self.column.addWidget(self.earlier_button, alignment=Qt.AlignmentFlag.AlignHCenter)
        self.column.addStretch()  # keeps the messages at the top of a short conversation
        self.setWidget(self.content)

        self.cards: dict[str, ToolCard] = {}
        self._answer: MessageBubble | None = None
        self._answer_text = ""
        self._thinking_text = ""
        self._pending = False
        self._repaint = QTimer(self)
        self._repaint.setSingleShot(True)
        self._repaint.setInterval(REPAINT_MS)
        self._repaint.timeout.connect(self._flush)
        self._stick_to_bottom = True
        self.verticalScrollBar().rangeChanged.connect(self._on_range_changed)
        self.verticalScrollBar().valueChanged.connect(self._on_scrolled)

    # --- whole conversations ------------------------------------------------------------

    def clear(self) -> None:
        while self.column.count() > 2:
            item = self.column.takeAt(1)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        self.cards.clear()
        self._answer = None
        self._answer_text = self._thinking_text = ""
        self._stick_to_bottom = True

    def show_messages(self, messages: list[Message], more_before: bool) -> None:
        self.clear()
        self.prepend_messages(messages, more_before)

    def prepend_messages(self, messages: list[Message], more_before: bool) -> None:
        """Older messages go above those shown (lazy loading of long conversations)."""
        self.earlier_button.setVisible(more_before)
        at = 1
        for widget in self._widgets_for(messages):
            self.column.insertWidget(at, widget)
            at += 1

    def _widgets_for(self, messages: list[Message]) -> list[QWidget]:
        widgets: list[QWidget] = []
        cards: dict[str, ToolCard] = {}
        for message in messages:
            if message.role == "user" and "tool_images" in message.meta:
                for card in cards.values():
                    card.mark_images(bool(message.meta.get("sent_to_model")))
                continue
            if message.role in ("user", "assistant") and message.text.strip():
                widgets.append(MessageBubble(message.role, message.text, message.images))
            elif message.role == "user" and message.images:
                widgets.append(MessageBubble("user", "", message.images))
            for call in message.tool_calls:
                card = self._card(call.id, call.name, call.arguments)
                cards[call.id] = card
                widgets.append(card)
            if message.role == "tool" and message.tool_call_id in cards:
                card = cards[message.tool_call_id]
                if message.rejected:
                    card.reject(message.text)
                else:
                    images = [Image.from_dict(i) for i in message.meta.get("images", [])]
                    card.finish(
                        message.text,
                        message.meta.get("error"),
                        float(message.meta.get("duration_ms", 0.0)),
                        images,
                    )
                    if images and message.meta.get("sent_to_model") is False:
                        card.mark_images(False)
        return widgets

    # --- the turn as it happens ---------------------------------------------------------

    def add_user_message(self, text: str, images: list[Image] | None = None) -> None:
        self._stick_to_bottom = True
        self._append(MessageBubble("user", text, images))
        self._answer = None

    def append_text(self, text: str) -> None:
        self._answer_text += text
        self._schedule()

    def append_thinking(self, text: str) -> None:
        self._thinking_text += text
        self._schedule()

    def _schedule(self) -> None:
        if not self._repaint.isActive():
            self._repaint.start()

    def _flush(self) -> None:
        """Paint what streamed in since the last paint. A bubble appears only once there is
        something to show (a whitespace-only first chunk makes no empty bubble)."""
        if self._answer is None:
            if not (self._answer_text.strip() or self._thinking_text.strip()):
                return
            self._answer = MessageBubble("assistant")
            self._append(self._answer)
        self._answer.set_text(self._answer_text)
        if self._thinking_text:
            self._answer.set_thinking(self._thinking_text)

    def _end_answer_segment(self) -> None:
        """Text after a tool card goes into a new bubble below it."""
        self._repaint.stop()
        self._flush()
        self._answer = None
        self._answer_text = self._thinking_text = ""

    def add_tool_call(self, event: ToolCallParsed) -> None:
        self._end_answer_segment()
        self._append(self._card(event.id, event.name, event.arguments))

    def finish_tool(self, event: ToolResult) -> None:
        card = self.cards.get(event.id)
        if card is not None:
            card.finish(event.content, event.error, event.duration_ms, event.images)

    def reject_tool(self, event: ToolRejected) -> None:
        card = self.cards.get(event.id or "")
        if card is None:  # a call that never became a card (cut off, or after the limit)
            self._end_answer_segment()
            card = self._card(
                event.id or f"rejected-{len(self.cards)}", event.name, event.arguments
            )
            self._append(card)
        card.reject(event.reason)

    def mark_tool_images(self, sent_to_model: bool) -> None:
        for card in self.cards.values():
            if card.images and not card.images_note.isVisible():
                card.mark_images(sent_to_model)

    def finish_answer(self, text: str) -> None:
        """The turn's final text; a direct-output answer arrives only here."""
        if not self._answer_text.strip() and text.strip():
            self._answer_text = text
        self._end_answer_segment()

    def show_note(self, text: str, kind: str = "note") -> None:
        self._end_answer_segment()
        label = QLabel(text)
        label.setObjectName(f"{kind}Note")
        label.setWordWrap(True)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._append(label)

    # --- helpers ------------------------------------------------------------------------

    def _card(self, call_id: str, name: str, arguments: object) -> ToolCard:
        card = ToolCard(call_id, name, arguments)
        card.image_clicked.connect(self.image_clicked.emit)
        self.cards[call_id] = card
        return card

    def _append(self, widget: QWidget) -> None:
        self.column.insertWidget(self.column.count() - 1, widget)

    def _on_scrolled(self, value: int) -> None:
        bar = self.verticalScrollBar()
        self._stick_to_bottom = value >= bar.maximum() - 24
        if value == bar.minimum() and self.earlier_button.isVisible() and bar.maximum() > 0:
            self.load_earlier_requested.emit()

    def _on_range_changed(self, _minimum: int, maximum: int) -> None:
        if self._stick_to_bottom:
            self.verticalScrollBar().setValue(maximum)

    def bubbles(self) -> list[MessageBubble]:
        return self.content.findChildren(MessageBubble)
