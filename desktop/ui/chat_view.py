"""The conversation: message bubbles rendered as Markdown, tool cards, the streamed answer."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QFrame,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from desktop.core.documents.tool import NAME as SEARCH_DOCUMENTS
from desktop.core.documents.tool import sources_of
from desktop.core.events import ToolCallParsed, ToolRejected, ToolResult
from desktop.core.messages import Image, Message, Source
from desktop.core.storage.chats import Branches
from desktop.ui.bubbles import BranchSwitcher, MessageBubble
from desktop.ui.tool_card import ToolCard

# Streamed text is painted at most this often: a fast server sends tokens faster than
# the window can repaint, and repainting per token would starve the event loop.
REPAINT_MS = 40
# Lines longer than this are hard to read: a wide window centres a column this wide.
READING_WIDTH = 920


Stored = list[tuple[int, Message]]  # (seq, message) of the shown branch, in order


def _feeds_back_images(message: Message) -> bool:
    """The user message that carries tool images to the model: marks cards, shows nothing."""
    return message.role == "user" and message.meta.tool_images is not None


def _has_bubble(message: Message) -> bool:
    """Whether a stored message is drawn as a bubble (its calls are cards of their own)."""
    return message.role in ("user", "assistant") and bool(message.text.strip() or message.images)


def _note_label(text: str, kind: str) -> QLabel:
    label = QLabel(text)
    label.setObjectName(f"{kind}Note")
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


class ChatView(QScrollArea):
    """Signals: load_earlier_requested(), image_clicked(object); for a stored message (by
    seq): edit_requested(int, str), regenerate_requested(int), delete_requested(int),
    branch_chosen(int) (show the version of the message with that seq)."""

    load_earlier_requested = Signal()
    image_clicked = Signal(object)
    edit_requested = Signal(int, str)
    regenerate_requested = Signal(int)
    delete_requested = Signal(int)
    branch_chosen = Signal(int)

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
        self._turn_from: int | None = None  # where the running turn's widgets begin
        self._answer: MessageBubble | None = None
        self._answer_text = ""
        self._thinking_text = ""
        self._sources: dict[int, Source] = {}  # the turn's document passages, cited by [n]
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
        self._turn_from = None
        self._answer = None
        self._answer_text = self._thinking_text = ""
        self._stick_to_bottom = True

    def show_messages(
        self, messages: Stored, more_before: bool, branches: dict[int, Branches] | None = None
    ) -> None:
        self.clear()
        self.prepend_messages(messages, more_before, branches)

    def prepend_messages(
        self, messages: Stored, more_before: bool, branches: dict[int, Branches] | None = None
    ) -> None:
        """Older messages go above those shown (lazy loading of long conversations)."""
        self.earlier_button.setVisible(more_before)
        at = 1
        for widget in self._widgets_for(messages, branches or {}):
            self.column.insertWidget(at, widget)
            at += 1

    def _widgets_for(self, messages: Stored, branches: dict[int, Branches]) -> list[QWidget]:
        widgets: list[QWidget] = []
        cards: dict[str, ToolCard] = {}
        sources: dict[int, Source] = {}
        for seq, message in messages:
            if message.role == "user" and not message.from_the_loop:
                sources = {}
            elif message.role == "tool" and message.name == SEARCH_DOCUMENTS:
                sources = sources_of(message)
            if _feeds_back_images(message):
                for card in cards.values():
                    card.mark_images(bool(message.meta.sent_to_model))
            if message.meta.step_notes is not None:  # calls that could not be read: no card
                widgets.append(_note_label(message.text, "note"))
            if message.from_the_loop:
                continue
            if seq in branches:
                switcher = BranchSwitcher(branches[seq])
                switcher.chosen.connect(self.branch_chosen)
                widgets.append(switcher)
            if _has_bubble(message):
                shown = self._bubble(message.role, message.text, message.images, seq, sources)
                widgets.append(shown)
            for call in message.tool_calls:
                card = self._card(call.id, call.name, call.arguments)
                cards[call.id] = card
                widgets.append(card)
            if message.role == "tool" and message.tool_call_id in cards:
                card = cards[message.tool_call_id]
                if message.rejected:
                    card.reject(message.text)
                else:
                    images = list(message.meta.images)
                    card.finish(message.text, message.meta.error, message.meta.duration_ms or 0.0,
                                images, sources_of(message))  # fmt: skip
                    if images and message.meta.sent_to_model is False:
                        card.mark_images(False)
        return widgets

    # --- the turn as it happens ---------------------------------------------------------

    def begin_turn(self) -> None:
        """What follows belongs to a turn; `settle_turn` replaces it with what was stored."""
        self._stick_to_bottom = True
        self._turn_from = self.column.count() - 1
        self._answer = None

    def add_user_message(self, text: str, images: list[Image] | None = None) -> None:
        self.begin_turn()
        self._sources = {}
        self._append(self._bubble("user", text, images))

    def settle_turn(self, stored: Stored, branches: dict[int, Branches], finished: bool) -> None:
        """The turn has ended. Finished, its messages as stored (with their seqs, so that
        they can be edited, regenerated and deleted) replace the ones drawn as they arrived;
        its notes stay below them. Stopped or failed, what was drawn stays as it is (a card
        stopped mid-question is not a stored message), and the person's message gets its
        seq."""
        self._repaint.stop()
        self._flush()
        if self._turn_from is None:
            return
        start, self._turn_from = self._turn_from, None
        self._answer = None
        self._answer_text = self._thinking_text = ""
        items = [self.column.itemAt(i) for i in range(start, self.column.count() - 1)]
        live = [w for w in (item.widget() for item in items if item is not None) if w]
        if not finished:
            first = next((w for w in live if isinstance(w, MessageBubble)), None)
            if first is not None and first.role == "user" and stored and first.seq is None:
                seq, message = stored[0]
                if message.role == "user":
                    first.set_seq(seq)
            return
        drawn = [w for w in live if not w.objectName().endswith("Note")]
        if self._adopt(drawn, stored, branches):
            return  # the usual case: what was drawn is what was stored, kept as it is
        for widget in drawn:
            if isinstance(widget, ToolCard):
                self.cards.pop(widget.call_id, None)
            self.column.removeWidget(widget)
            widget.deleteLater()
        for at, widget in enumerate(self._widgets_for(stored, branches), start):
            self.column.insertWidget(at, widget)

    def _adopt(self, drawn: list[QWidget], stored: Stored, branches: dict[int, Branches]) -> bool:
        """Give the drawn bubbles their seqs (and the version switchers their places) where
        they match the stored messages one for one: drawing a long answer again would
        stall the window at the end of every turn."""
        plan: list[tuple[str, object, int]] = []  # (kind, what it shows, seq)
        for seq, message in stored:
            if message.from_the_loop:
                continue
            if _has_bubble(message):
                plan.append((message.role, message.text, seq))
            plan.extend(("card", call.id, seq) for call in message.tool_calls)
        shown = [
            (w.role, w.body.text) if isinstance(w, MessageBubble)
            else ("card", w.call_id) if isinstance(w, ToolCard) else ("other", None)
            for w in drawn
        ]  # fmt: skip
        if shown != [(kind, what) for kind, what, _ in plan]:
            return False
        first_widget: dict[int, QWidget] = {}
        for widget, (_kind, _what, seq) in zip(drawn, plan, strict=True):
            first_widget.setdefault(seq, widget)
            if isinstance(widget, MessageBubble) and widget.seq is None:
                widget.set_seq(seq)
        for seq, widget in first_widget.items():
            if seq in branches:
                switcher = BranchSwitcher(branches[seq])
                switcher.chosen.connect(self.branch_chosen)
                self.column.insertWidget(self.column.indexOf(widget), switcher)
        return True

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
            self._answer = self._bubble("assistant", sources=self._sources)
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
        sources = event.retrieval.sources() if event.retrieval is not None else ()
        if card is not None:
            card.finish(event.content, event.error, event.duration_ms, event.images,
                        dict(enumerate(sources, 1)))  # fmt: skip
        if event.name == SEARCH_DOCUMENTS and event.error is None:
            self._sources = dict(enumerate(sources, 1))

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
        self._append(_note_label(text, kind))

    # --- helpers ------------------------------------------------------------------------

    def _bubble(
        self,
        role: str,
        text: str = "",
        images: list[Image] | None = None,
        seq: int | None = None,
        sources: dict[int, Source] | None = None,
    ) -> MessageBubble:
        bubble = MessageBubble(role, text, images, seq, sources if role == "assistant" else None)
        bubble.edit_requested.connect(self.edit_requested)
        bubble.regenerate_requested.connect(self.regenerate_requested)
        bubble.delete_requested.connect(self.delete_requested)
        return bubble

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

    def resizeEvent(self, event: QResizeEvent) -> None:
        side = max(16, (self.viewport().width() - READING_WIDTH) // 2)
        self.column.setContentsMargins(side, 12, side, 12)
        super().resizeEvent(event)

    def _on_range_changed(self, _minimum: int, maximum: int) -> None:
        if self._stick_to_bottom:
            self.verticalScrollBar().setValue(maximum)

    def shown(self) -> list[QWidget]:
        """The widgets of the conversation, top to bottom (not those on their way out)."""
        items = (self.column.itemAt(i) for i in range(1, self.column.count() - 1))
        return [w for w in (item.widget() for item in items if item is not None) if w]

    def bubbles(self) -> list[MessageBubble]:
        return [w for w in self.shown() if isinstance(w, MessageBubble)]

    def switchers(self) -> list[BranchSwitcher]:
        return [w for w in self.shown() if isinstance(w, BranchSwitcher)]
