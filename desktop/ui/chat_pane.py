"""The chat pane: one conversation's header, its messages (or the first-run screen while no
model server answers), and the composer; the versions of a message (edit, regenerate,
switch, delete); sending. Where the view stands is a core `ChatState`."""

from __future__ import annotations

from typing import assert_never

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QDialog, QMessageBox, QStackedWidget, QVBoxLayout, QWidget

from desktop.core.attachments import ImageAttachment, TextAttachment
from desktop.core.chat_state import ChatState
from desktop.core.errors import LoomchatError
from desktop.core.events import (
    Event,
    TextDelta,
    ThinkingDelta,
    ToolCallParsed,
    ToolRejected,
    ToolResult,
    ToolStarted,
    TurnFailed,
    TurnFinished,
    TurnWarning,
    Usage,
)
from desktop.core.messages import CHARS_PER_TOKEN, Message, estimated_tokens
from desktop.core.storage.chats import Branches
from desktop.ui.attaching import Attacher
from desktop.ui.chat_header import ChatHeader, SystemPromptDialog
from desktop.ui.chat_view import ChatView
from desktop.ui.composer import ComposerBar
from desktop.ui.context_meter import ContextMeter
from desktop.ui.controller import ChatController

PAGE_SIZE = 40  # messages shown when a conversation opens; older ones load on scroll


class ChatPane(QWidget):
    """Signals:
    changed(): the conversation's title or messages changed (the list shows it again).
    """

    changed = Signal()

    def __init__(
        self,
        controller: ChatController,
        context_meter: ContextMeter,
        first_run: QWidget,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.controller = controller
        self.session = controller.session
        self.store = self.session.store
        self.context_meter = context_meter
        self.state = ChatState()

        self.header = ChatHeader()
        self.header.preset_chosen.connect(self.choose_preset)
        self.header.system_prompt_requested.connect(self.edit_system_prompt)
        self.header.collections_chosen.connect(self.choose_collections)
        self.header.server_chosen.connect(self.choose_server)
        self.chat = ChatView()
        self.chat.load_earlier_requested.connect(self.load_earlier)
        self.chat.edit_requested.connect(self.start_edit)
        self.chat.regenerate_requested.connect(self.regenerate)
        self.chat.delete_requested.connect(self.delete_message)
        self.chat.branch_chosen.connect(self.show_branch)
        self.first_run = first_run
        self.pages = QStackedWidget()
        self.pages.addWidget(self.chat)
        self.pages.addWidget(first_run)
        self.composer_bar = ComposerBar()
        self.composer_bar.send_requested.connect(self.send)
        self.composer_bar.stop_requested.connect(controller.stop)
        self.composer_bar.edit_cancelled.connect(self.cancel_edit)
        self.composer = self.composer_bar.editor
        self.attacher = Attacher(self.composer_bar, controller, lambda: self.context_size)
        self.attacher.refused.connect(lambda why: self.chat.show_note(why, "warning"))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 8, 8)
        layout.addWidget(self.header)
        layout.addWidget(self.pages, 1)
        layout.addWidget(self.composer_bar)

    @property
    def conversation_id(self) -> int | None:
        return self.state.conversation_id

    # --- the conversation shown ---------------------------------------------------------

    def open(self, conversation_id: int | None) -> None:
        self.state.open(conversation_id)
        if conversation_id is not None:
            self.controller.follow_server(conversation_id)
        self.composer_bar.show_editing(False)
        self._show()
        self.show_header()
        self.show_context_use()

    def show_chat(self, chatting: bool) -> None:
        """The chat, or the first-run screen while no model server answers; the header
        belongs to the chat."""
        self.pages.setCurrentWidget(self.chat if chatting else self.first_run)
        self.header.setVisible(chatting)

    @property
    def context_size(self) -> int:
        connection = self.session.connection
        return connection.capabilities.context_size or self.session.settings.context_size

    def show_context_use(self, estimate: bool = False) -> None:
        """The conversation's tokens: as the server counted them on its last turn here,
        else (or after a branch changed: `estimate`) estimated from its text."""
        conversation = self.state.conversation_id
        if conversation is None:
            return
        traces = [] if estimate else self.session.traces.get(conversation) or []
        steps = [s for s in (traces[-1].steps if traces else []) if s.usage]
        if steps and steps[-1].usage:
            usage = steps[-1].usage
            used = usage["prompt_tokens"] + usage["completion_tokens"]
            self.context_meter.show_use(used, self.context_size)
        else:
            system, _ = self.store.system_prompt(conversation)
            chars = self.store.shown_chars(conversation) + len(system)
            self.context_meter.show_use(chars // CHARS_PER_TOKEN, self.context_size, True)

    def show_header(self) -> None:
        if (conversation := self.state.conversation_id) is None:
            return
        _system, preset = self.store.system_prompt(conversation)
        self.header.show_conversation(self.store.title(conversation), self.session.presets, preset)
        chosen = self.session.presets.get(preset)
        names = self.session.library.searchable if self.session.library is not None else []
        own = self.store.collections(conversation)
        self.header.show_collections(names, own, chosen.collections if chosen else None)
        servers = list(self.session.settings.servers)
        own_server = self.store.server(conversation)
        self.header.show_servers(servers, own_server, chosen.server if chosen else "")

    def choose_server(self, name: str) -> None:
        """The conversation talks to the saved server `name` ("": its preset's, or the one
        in use), connected to now."""
        if (conversation := self.state.conversation_id) is not None:
            self.store.set_server(conversation, name)
            self.controller.follow_server(conversation)

    def choose_collections(self, names: tuple[str, ...] | None) -> None:
        """The conversation searches these collections from its next turn (None: as its
        preset says)."""
        if (conversation := self.state.conversation_id) is not None:
            self.store.set_collections(conversation, names)
            self.show_header()

    def choose_preset(self, name: str) -> None:
        if (conversation := self.state.conversation_id) is None:
            return
        preset = self.session.presets.get(name)
        if preset is None:  # "No preset": the system prompt stays, as the conversation's own
            system, _ = self.store.system_prompt(conversation)
            self.session.set_system_prompt(conversation, system)
        else:
            self.session.use_preset(conversation, preset)
        self.show_header()

    def edit_system_prompt(self) -> None:
        if (conversation := self.state.conversation_id) is None:
            return
        system, preset = self.store.system_prompt(conversation)
        dialog = SystemPromptDialog(system, self)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.session.set_system_prompt(conversation, dialog.text(), preset)

    def _show(self, up_to: int | None = None) -> None:
        """The shown branch's newest messages (those up to seq `up_to`, where given)."""
        if (conversation := self.state.conversation_id) is None:
            self.chat.show_messages([], more_before=False)
            return
        before = None if up_to is None else up_to + 1
        page = self.store.messages(conversation, last=PAGE_SIZE, before_seq=before)
        self.state.oldest_seq = page[0][0] if page else None
        self.chat.show_messages(page, self._more_before(page), self._branches(page))
        if damage := self.store.damage_of(conversation):
            self.chat.show_note(f"This conversation's history is damaged: {damage}.", "warning")

    def _more_before(self, page: list[tuple[int, Message]]) -> bool:
        conversation = self.state.conversation_id
        assert conversation is not None
        return bool(page) and self.store.parent(conversation, page[0][0]) is not None

    def _branches(self, page: list[tuple[int, Message]]) -> dict[int, Branches]:
        conversation = self.state.conversation_id
        assert conversation is not None
        return self.store.branches(conversation, [seq for seq, _ in page])

    def load_earlier(self) -> None:
        conversation, oldest = self.state.conversation_id, self.state.oldest_seq
        if conversation is None or oldest is None:
            return
        page = self.store.messages(conversation, last=PAGE_SIZE, before_seq=oldest)
        if not page:
            self.chat.earlier_button.hide()
            return
        self.state.oldest_seq = page[0][0]
        bar = self.chat.verticalScrollBar()
        height_before = bar.maximum()
        self.chat.prepend_messages(page, self._more_before(page), self._branches(page))
        # keep the message the user was looking at in place
        QTimer.singleShot(0, bar, lambda: bar.setValue(bar.maximum() - height_before))

    def settle_turn(self) -> None:
        """The turn's messages as stored replace those drawn while they arrived."""
        conversation = self.state.conversation_id
        if conversation is None or self.state.turn_after is None:
            return
        finished = self.state.turn_finished
        after = self.state.end_turn()
        assert after is not None
        page = self.store.messages(conversation, last=PAGE_SIZE)
        stored = [(seq, m) for seq, m in page if after < 0 or seq > after]
        self.chat.settle_turn(stored, self._branches(stored), finished)

    # --- versions of a message: edit, regenerate, switch, delete ------------------------

    def start_edit(self, seq: int, text: str) -> None:
        """The message goes into the composer; sending it makes a new version."""
        self.state.editing = seq
        self.composer.setPlainText(text)
        self.composer_bar.show_editing(True)
        self.composer.setFocus()

    def cancel_edit(self) -> None:
        self.state.editing = None
        self.composer_bar.show_editing(False)

    def regenerate(self, seq: int) -> None:
        if (conversation := self.state.conversation_id) is None or not self.check_connected():
            return
        try:
            question = self.session.question_of(conversation, seq)
        except LoomchatError as exc:
            self.chat.show_note(str(exc), "error")
            return
        self._show(up_to=question)
        self.state.begin_turn(question)
        self.chat.begin_turn()
        self.controller.regenerate(conversation, seq)

    def show_branch(self, seq: int) -> None:
        if (conversation := self.state.conversation_id) is None:
            return
        self.controller.stop()
        self.session.show_branch(conversation, seq)
        self._show()
        self.show_context_use(estimate=True)

    def delete_message(self, seq: int) -> None:
        if (conversation := self.state.conversation_id) is None:
            return
        answer = QMessageBox.question(
            self, "Delete message", "Delete this message and everything after it?"
        )
        if answer != QMessageBox.StandardButton.Yes:
            return
        self.controller.stop()
        self.session.delete_from(conversation, seq)
        self._show()
        self.show_context_use(estimate=True)
        self.changed.emit()

    # --- the turn as it happens -------------------------------------------------------

    def show_event(self, event: Event) -> str | None:
        """Show one event of the running turn; what a screen reader should hear of it."""
        chat = self.chat
        match event:
            case TextDelta():
                chat.append_text(event.text)
            case ThinkingDelta():
                chat.append_thinking(event.text)
            case ToolCallParsed():
                chat.add_tool_call(event)
            case Usage():
                used = event.prompt_tokens + event.completion_tokens
                self.context_meter.show_use(used, self.context_size)
            case ToolStarted():
                pass  # the card shows the call as running
            case ToolResult():
                chat.finish_tool(event)
                if event.images:
                    chat.mark_tool_images(self.session.connection.capabilities.vision)
                return f"{event.name} {f'failed: {event.error}' if event.error else 'done'}"
            case ToolRejected():
                chat.reject_tool(event)
                return f"{event.name} not run: {event.reason}"
            case TurnWarning():
                chat.show_note(event.message, "warning")
            case TurnFinished():
                self.state.turn_finished = True
                chat.finish_answer(event.text)
                self.show_header()  # the first message names the conversation
                return f"Answer: {event.text[:500]}"
            case TurnFailed():
                chat.show_note(event.message, "error")
                return f"The answer failed: {event.message}"
            case _:
                assert_never(event)
        return None

    # --- sending ----------------------------------------------------------------------

    def send(self) -> None:
        attachments = self.composer_bar.attachments
        if (conversation := self.state.conversation_id) is None:
            return
        if not self.composer.toPlainText().strip() and not attachments:
            return
        if not self.check_connected():
            return
        images = [a.image for a in attachments if isinstance(a, ImageAttachment)]
        if images and not self.session.connection.capabilities.vision:
            answer = QMessageBox.question(
                self,
                "This model cannot see images",
                f"{self.session.connection.model or 'This model'} cannot see images: the "
                f"{'image stays' if len(images) == 1 else f'{len(images)} images stay'} here "
                "in the chat, and only your words go to the model.\n\nSend anyway?",
            )
            if answer != QMessageBox.StandardButton.Yes:
                return
        typed = self.composer_bar.take_text()
        texts = [a.as_prompt() for a in attachments if isinstance(a, TextAttachment)]
        text = "\n\n".join([*texts, typed] if typed else texts)
        adding = estimated_tokens([Message.user(text, images)])
        if self.context_meter.used + adding > self.context_size:
            self.chat.show_note(
                f"This message may not fit in the model's context (about "
                f"{self.context_meter.used + adding:,} of {self.context_size:,} tokens): the "
                "oldest messages may be cut off or the answer fail. A new chat starts afresh.",
                "warning",
            )
        self.composer_bar.take_attachments()
        if (seq := self.state.editing) is not None:
            self.state.editing = None
            self.composer_bar.show_editing(False)
            parent = self.store.parent(conversation, seq)
            if parent is None:
                self.chat.show_messages([], more_before=False)
            else:
                self._show(up_to=parent)
            self.state.begin_turn(parent)
            self.chat.add_user_message(text, images)
            self.controller.edit(conversation, seq, text, images)
            return
        self.state.begin_turn(self.store.head(conversation))
        self.chat.add_user_message(text, images)
        self.controller.send(conversation, text, images)

    def check_connected(self) -> bool:
        if not self.session.connection.ok:
            self.chat.show_note(self.session.connection.message or "Not connected.", "error")
        return self.session.connection.ok
