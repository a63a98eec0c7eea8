"""The main window: conversations on the left, the chat in the middle, the inspector on the
right (toggle), the composer below, and the status bar."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path
from typing import assert_never

from PySide6.QtCore import Qt, QTimer, QUrl
from PySide6.QtGui import (
    QAccessible,
    QAccessibleAnnouncementEvent,
    QCloseEvent,
    QDesktopServices,
)
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QDockWidget,
    QFileDialog,
    QMainWindow,
    QMessageBox,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from desktop import __version__
from desktop.core.attachments import ImageAttachment, TextAttachment
from desktop.core.calibration.card import Calibration
from desktop.core.connection import Connection
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
from desktop.core.messages import CHARS_PER_TOKEN, Image, Message, estimated_tokens
from desktop.core.models.catalogue import CatalogueModel
from desktop.core.models.library import mark_used
from desktop.core.runtime import bundled_model_available
from desktop.core.storage.chats import Branches
from desktop.core.storage.settings import Settings
from desktop.ui.attaching import Attacher
from desktop.ui.calibration_status import CalibrationStatus
from desktop.ui.chat_header import ChatHeader, SystemPromptDialog
from desktop.ui.chat_view import ChatView
from desktop.ui.composer import ComposerBar
from desktop.ui.connection_status import ConnectionStatus
from desktop.ui.context_meter import ContextMeter
from desktop.ui.controller import ApprovalRequest, ChatController
from desktop.ui.conversation_list import ConversationList
from desktop.ui.first_run import FirstRunPanel
from desktop.ui.image_dialog import ImageDialog
from desktop.ui.inspector import InspectorPanel
from desktop.ui.menus import build_menus
from desktop.ui.models_dialog import ModelsDialog, offer_text, recommended_model, show_models
from desktop.ui.presets_dialog import PresetsDialog
from desktop.ui.resources import resource
from desktop.ui.settings_dialog import SettingsDialog
from desktop.ui.shortcuts import ShortcutsDialog, shortcut_list
from desktop.ui.theme import MAX_POINTS, MIN_POINTS, Appearance

PAGE_SIZE = 40  # messages shown when a conversation opens; older ones load on scroll


class MainWindow(QMainWindow):
    def __init__(
        self,
        controller: ChatController,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.controller = controller
        self.session = controller.session
        self.store = self.session.store
        self.conversation_id: int | None = None
        self._closing = False
        self._closer: asyncio.Future[None] | None = None
        self._oldest_seq: int | None = None
        self._turn_after: int | None = None  # the running turn's messages follow this seq
        self._turn_finished = False
        self.editing: int | None = None  # the message being edited in the composer
        self._problems_said: tuple[str, ...] = ()  # the tools' problems shown in the chat
        self.setWindowTitle("Loomchat")
        self.resize(1180, 760)
        app = QApplication.instance()
        assert isinstance(app, QApplication)
        self.appearance = Appearance(app, resource("styles", "app.qss"), self)
        self.appearance.changed.connect(self.session.set_dark)
        self.appearance.apply(self.session.settings.theme, self.session.settings.font_size)

        # left: conversations
        self.sidebar = ConversationList(self.store)
        self.sidebar.chosen.connect(self.open_conversation)
        self.sidebar.new_requested.connect(self.new_conversation)
        self.sidebar.delete_requested.connect(self.delete_conversation)
        self.conversation_list, self.search = self.sidebar.list, self.sidebar.search

        # middle: chat or first-run, and the composer
        self.chat = ChatView()
        self.chat.load_earlier_requested.connect(self.load_earlier)
        self.chat.image_clicked.connect(self._open_image)
        self.chat.edit_requested.connect(self.start_edit)
        self.chat.regenerate_requested.connect(self.regenerate)
        self.chat.delete_requested.connect(self.delete_message)
        self.chat.branch_chosen.connect(self.show_branch)
        self.recommended = recommended_model(self.models_dir)
        self.first_run = FirstRunPanel(bundled_model_available(), offer_text(self.recommended))
        self.first_run.download_recommended.connect(
            lambda: self.open_models(self.recommended, use_when_done=True)
        )
        self.first_run.use_builtin.connect(self._use_builtin)
        self.first_run.choose_model_file.connect(self._choose_model_file)
        self.first_run.retry.connect(self.controller.reconnect)
        self.first_run.open_settings.connect(self.open_settings)
        self.pages = QStackedWidget()
        self.pages.addWidget(self.chat)
        self.pages.addWidget(self.first_run)
        self.composer_bar = ComposerBar()
        self.composer_bar.send_requested.connect(self.send)
        self.composer_bar.stop_requested.connect(self.controller.stop)
        self.composer_bar.edit_cancelled.connect(self.cancel_edit)
        self.attacher = Attacher(self.composer_bar, self.controller, lambda: self.context_size)
        self.attacher.refused.connect(lambda why: self.chat.show_note(why, "warning"))
        self.composer = self.composer_bar.editor
        self.send_button, self.stop_button = (
            self.composer_bar.send_button,
            self.composer_bar.stop_button,
        )
        self.header = ChatHeader()
        self.header.preset_chosen.connect(self.choose_preset)
        self.header.system_prompt_requested.connect(self.edit_system_prompt)
        middle = QWidget()
        center = QVBoxLayout(middle)
        center.setContentsMargins(0, 0, 8, 8)
        center.addWidget(self.header)
        center.addWidget(self.pages, 1)
        center.addWidget(self.composer_bar)

        splitter = QSplitter()
        splitter.addWidget(self.sidebar)
        splitter.addWidget(middle)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([240, 940])
        self.setCentralWidget(splitter)

        # right: the inspector
        self.inspector = InspectorPanel()
        self.inspector_dock = QDockWidget("Inspector", self)
        self.inspector_dock.setObjectName("inspectorDock")
        self.inspector_dock.setWidget(self.inspector)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.inspector_dock)
        self.inspector_dock.setVisible(self.session.settings.show_inspector)
        self.inspector_dock.visibilityChanged.connect(self._refresh_inspector)

        # bottom: the status bar
        self.status = ConnectionStatus(self.statusBar())
        self.backend_label, self.track_label = self.status.backend_label, self.status.track_label
        self.speed_label = self.status.speed_label
        self.context_meter = ContextMeter()
        self.statusBar().addPermanentWidget(self.context_meter)
        self.calibration_status = CalibrationStatus()
        self.calibration_status.cancel_requested.connect(self.controller.cancel_calibration)
        self.statusBar().addPermanentWidget(self.calibration_status)
        status = self.calibration_status
        self.calibration_label, self.calibration_bar = status.label, status.bar
        self.calibration_cancel = status.cancel
        self.status.place()

        build_menus(self)
        self._connect_controller()
        self.refresh_conversations()
        if not self.sidebar.choose_first():
            self.new_conversation()

    # --- menus and shortcuts ----------------------------------------------------------

    @property
    def logs_folder(self) -> Path:
        return self.store.path.parent / "logs"

    def open_logs(self) -> None:
        self.logs_folder.mkdir(parents=True, exist_ok=True)
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.logs_folder)))

    def shortcut_list(self) -> list[tuple[str, str]]:
        return shortcut_list(self)

    def show_shortcuts(self) -> None:
        ShortcutsDialog(self.shortcut_list(), self).exec()

    def announce(self, text: str) -> None:
        """Say `text` to a screen reader (a finished answer, a tool's outcome)."""
        event = QAccessibleAnnouncementEvent(self.chat, text)
        QAccessible.updateAccessibility(event)

    def about(self) -> None:
        QMessageBox.about(
            self,
            "About Loomchat",
            f"<b>Loomchat {__version__}</b><p>Local models with tools, offline.</p>"
            f"<p>Conversations and settings: {self.store.path.parent}<br>"
            f"Logs (attach them to a bug report): {self.logs_folder}</p>",
        )

    # --- the controller ---------------------------------------------------------------

    def _connect_controller(self) -> None:
        c = self.controller
        c.event_received.connect(self.on_event)
        c.turn_stopped.connect(lambda: self.chat.show_note("Stopped.", "note"))
        c.busy_changed.connect(self._on_busy)
        c.connection_changed.connect(self._on_connection)
        c.approval_requested.connect(self._on_approval_requested)
        c.speed_measured.connect(self.status.show_speed)
        c.calibration_progress.connect(self.calibration_status.progress)
        c.calibration_finished.connect(self._on_calibrated)
        c.calibration_ended.connect(self._on_calibration_ended)

    def on_event(self, event: Event) -> None:
        """One event of the running turn, to the view that shows it."""
        match event:
            case TextDelta():
                self.chat.append_text(event.text)
            case ThinkingDelta():
                self.chat.append_thinking(event.text)
            case ToolCallParsed():
                self.chat.add_tool_call(event)
            case Usage():
                used = event.prompt_tokens + event.completion_tokens
                self.context_meter.show_use(used, self.context_size)
                return
            case ToolStarted():
                return  # the card shows the call as running
            case ToolResult():
                self.chat.finish_tool(event)
                outcome = f"failed: {event.error}" if event.error else "done"
                self.announce(f"{event.name} {outcome}")
                if event.images:
                    self.chat.mark_tool_images(self.session.connection.capabilities.vision)
            case ToolRejected():
                self.chat.reject_tool(event)
                self.announce(f"{event.name} not run: {event.reason}")
            case TurnWarning():
                self.chat.show_note(event.message, "warning")
                return
            case TurnFinished():
                self._turn_finished = True
                self.chat.finish_answer(event.text)
                self.announce(f"Answer: {event.text[:500]}")
                self.refresh_conversations(keep_selection=True)
                self._show_header()  # the first message names the conversation
            case TurnFailed():
                self.chat.show_note(event.message, "error")
                self.announce(f"The answer failed: {event.message}")
            case _:
                assert_never(event)
        if not isinstance(event, (TextDelta, ThinkingDelta)):
            self._refresh_inspector()

    # --- calibration --------------------------------------------------------------------

    def _on_calibrated(self, calibration: Calibration) -> None:
        self.calibration_status.hide()
        self.statusBar().showMessage(CalibrationStatus.finished_message(calibration), 15000)

    def _on_calibration_ended(self, problem: str) -> None:
        self.calibration_status.hide()
        self.statusBar().showMessage(problem or "Calibration cancelled.", 10000)

    def _on_approval_requested(self, request: ApprovalRequest) -> None:
        card = self.chat.cards.get(request.call.id)
        if card is None:
            request.answer(False)
            return

        def answered(decision: str) -> None:
            if decision == "always":
                trusted = {**self.session.settings.trusted_tools, request.tool.name: True}
                self.apply_settings(replace(self.session.settings, trusted_tools=trusted))
            request.answer(decision != "deny")

        card.ask(answered)
        request.future.add_done_callback(
            lambda future: card.end_question("stopped") if future.cancelled() else None
        )

    def _on_busy(self, busy: bool) -> None:
        self.composer_bar.set_busy(busy)
        if not busy:
            self._settle_turn()
            self._refresh_inspector()

    def _on_connection(self, connection: Connection) -> None:
        self.status.show(connection, self.session.calibration)
        self.header.show_connection(connection)
        self.show_context_use()
        self.context_meter.setVisible(connection.ok)
        runtime = self.session.runtime
        if connection.ok and runtime is not None and runtime.model.parent == self.models_dir:
            mark_used(runtime.model, time.time())  # the manager's "last used"
        if connection.problems and connection.problems != self._problems_said:
            for problem in connection.problems:  # once, not at every reconnect
                self.chat.show_note(problem, "warning")
        self._problems_said = connection.problems or self._problems_said
        if connection.ok:
            self.pages.setCurrentWidget(self.chat)
        elif connection.message != "Connecting…":
            self.first_run.reason.setText(connection.message)
            self.pages.setCurrentWidget(self.first_run)
        # The chat's header belongs to the chat: not above the first-run screen.
        self.header.setVisible(self.pages.currentWidget() is self.chat)

    def _refresh_inspector(self, *_args: object) -> None:
        """Rebuild the inspector's tree, only while it is shown (it is not free)."""
        if self.conversation_id is not None and self.inspector_dock.isVisible():
            self.inspector.set_traces(self.session.traces.get(self.conversation_id, []))

    # --- conversations ----------------------------------------------------------------

    def refresh_conversations(self, *_args: object, keep_selection: bool = True) -> None:
        self.sidebar.refresh(keep_selection=keep_selection)

    def new_conversation(self) -> None:
        self.controller.stop()
        conversation_id = self.session.new_conversation()
        self.search.clear()
        self.refresh_conversations(keep_selection=False)
        self.open_conversation(conversation_id)
        self.composer.setFocus()

    def open_conversation(self, conversation_id: int) -> None:
        if conversation_id == self.conversation_id:
            return
        self.controller.stop()
        self.conversation_id = conversation_id
        self.sidebar.mark_current(conversation_id)
        self._show()
        self._show_header()
        self.show_context_use()
        self.inspector.set_traces(self.session.traces.get(conversation_id, []))

    @property
    def context_size(self) -> int:
        connection = self.session.connection
        return connection.capabilities.context_size or self.session.settings.context_size

    def show_context_use(self, estimate: bool = False) -> None:
        """The conversation's tokens: as the server counted them on its last turn here,
        else (or after a branch changed: `estimate`) estimated from its text."""
        if self.conversation_id is None:
            return
        traces = [] if estimate else self.session.traces.get(self.conversation_id) or []
        steps = [s for s in (traces[-1].steps if traces else []) if s.usage]
        if steps and steps[-1].usage:
            usage = steps[-1].usage
            used = usage["prompt_tokens"] + usage["completion_tokens"]
            self.context_meter.show_use(used, self.context_size)
        else:
            system, _ = self.store.system_prompt(self.conversation_id)
            chars = self.store.shown_chars(self.conversation_id) + len(system)
            self.context_meter.show_use(chars // CHARS_PER_TOKEN, self.context_size, True)

    def _show_header(self) -> None:
        if self.conversation_id is None:
            return
        _system, preset = self.store.system_prompt(self.conversation_id)
        title = self.store.title(self.conversation_id)
        self.header.show_conversation(title, self.session.presets, preset)

    # --- the look ------------------------------------------------------------------------

    def set_theme(self, choice: str) -> None:
        self.appearance.apply(choice, self.session.settings.font_size)
        self.apply_settings(replace(self.session.settings, theme=self.appearance.choice))

    def zoom(self, step: int) -> None:
        """Text one point bigger (1), smaller (-1), or the desktop's size again (0)."""
        size = 0 if step == 0 else round(self.appearance.size) + step
        if size:
            size = min(max(size, MIN_POINTS), MAX_POINTS)
        self.appearance.apply(self.appearance.choice, size)
        self.apply_settings(replace(self.session.settings, font_size=size))
        self.statusBar().showMessage(f"Text size: {self.appearance.size:g} pt", 3000)

    # --- the system prompt and presets -----------------------------------------------------

    def choose_preset(self, name: str) -> None:
        if self.conversation_id is None:
            return
        preset = self.session.presets.get(name)
        if preset is None:  # "No preset": the system prompt stays, as the conversation's own
            system, _ = self.store.system_prompt(self.conversation_id)
            self.session.set_system_prompt(self.conversation_id, system)
        else:
            self.session.use_preset(self.conversation_id, preset)
        self._show_header()

    def edit_system_prompt(self) -> None:
        if self.conversation_id is None:
            return
        system, preset = self.store.system_prompt(self.conversation_id)
        dialog = SystemPromptDialog(system, self)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.session.set_system_prompt(self.conversation_id, dialog.text(), preset)

    def open_presets(self) -> None:
        dialog = PresetsDialog(self.session.presets.copy(), self)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.session.presets = dialog.book
            self._show_header()

    def _show(self, up_to: int | None = None) -> None:
        """The shown branch's newest messages (those up to seq `up_to`, where given)."""
        if self.conversation_id is None:
            return
        before = None if up_to is None else up_to + 1
        page = self.store.messages(self.conversation_id, last=PAGE_SIZE, before_seq=before)
        self._oldest_seq = page[0][0] if page else None
        self.chat.show_messages(page, self._more_before(page), self._branches(page))
        if damage := self.store.damage_of(self.conversation_id):
            self.chat.show_note(f"This conversation's history is damaged: {damage}.", "warning")

    def _more_before(self, page: list[tuple[int, Message]]) -> bool:
        assert self.conversation_id is not None
        return bool(page) and self.store.parent(self.conversation_id, page[0][0]) is not None

    def _branches(self, page: list[tuple[int, Message]]) -> dict[int, Branches]:
        assert self.conversation_id is not None
        return self.store.branches(self.conversation_id, [seq for seq, _ in page])

    def load_earlier(self) -> None:
        if self.conversation_id is None or self._oldest_seq is None:
            return
        page = self.store.messages(
            self.conversation_id, last=PAGE_SIZE, before_seq=self._oldest_seq
        )
        if not page:
            self.chat.earlier_button.hide()
            return
        self._oldest_seq = page[0][0]
        bar = self.chat.verticalScrollBar()
        height_before = bar.maximum()
        self.chat.prepend_messages(page, self._more_before(page), self._branches(page))
        # keep the message the user was looking at in place
        QTimer.singleShot(0, bar, lambda: bar.setValue(bar.maximum() - height_before))

    # --- versions of a message: edit, regenerate, switch, delete ------------------------

    def _settle_turn(self) -> None:
        """The turn's messages as stored replace those drawn while they arrived."""
        if self.conversation_id is None or self._turn_after is None:
            return
        after, self._turn_after = self._turn_after, None
        page = self.store.messages(self.conversation_id, last=PAGE_SIZE)
        stored = [(seq, m) for seq, m in page if after < 0 or seq > after]
        self.chat.settle_turn(stored, self._branches(stored), self._turn_finished)

    def start_edit(self, seq: int, text: str) -> None:
        """The message goes into the composer; sending it makes a new version."""
        self.editing = seq
        self.composer.setPlainText(text)
        self.composer_bar.show_editing(True)
        self.composer.setFocus()

    def cancel_edit(self) -> None:
        self.editing = None
        self.composer_bar.show_editing(False)

    def regenerate(self, seq: int) -> None:
        if self.conversation_id is None or not self._check_connected():
            return
        try:
            question = self.session.question_of(self.conversation_id, seq)
        except LoomchatError as exc:
            self.chat.show_note(str(exc), "error")
            return
        self._show(up_to=question)
        self._turn_after, self._turn_finished = question, False
        self.chat.begin_turn()
        self.controller.regenerate(self.conversation_id, seq)

    def show_branch(self, seq: int) -> None:
        if self.conversation_id is None:
            return
        self.controller.stop()
        self.session.show_branch(self.conversation_id, seq)
        self._show()
        self.show_context_use(estimate=True)

    def delete_message(self, seq: int) -> None:
        if self.conversation_id is None:
            return
        answer = QMessageBox.question(
            self, "Delete message", "Delete this message and everything after it?"
        )
        if answer != QMessageBox.StandardButton.Yes:
            return
        self.controller.stop()
        self.session.delete_from(self.conversation_id, seq)
        self._show()
        self.show_context_use(estimate=True)
        self.refresh_conversations(keep_selection=True)

    def rename_conversation(self) -> None:
        self.sidebar.rename()

    def delete_conversation(self) -> None:
        if self.conversation_id is None:
            return
        self.controller.stop()
        doomed = self.conversation_id
        self.store.delete(doomed)
        self.session.forget(doomed)
        self.conversation_id = None
        self.sidebar.mark_current(None)
        self.refresh_conversations(keep_selection=False)
        if not self.sidebar.choose_first():
            self.new_conversation()

    def export(self, kind: str, path: Path | None = None) -> None:
        self.sidebar.export(kind, path)

    # --- sending ----------------------------------------------------------------------

    def send(self) -> None:
        attachments = self.composer_bar.attachments
        if self.conversation_id is None:
            return
        if not self.composer.toPlainText().strip() and not attachments:
            return
        if not self._check_connected():
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
        conversation = self.conversation_id
        if self.editing is not None:
            seq, self.editing = self.editing, None
            self.composer_bar.show_editing(False)
            parent = self.store.parent(conversation, seq)
            if parent is None:
                self.chat.show_messages([], more_before=False)
            else:
                self._show(up_to=parent)
            self._turn_after, self._turn_finished = -1 if parent is None else parent, False
            self.chat.add_user_message(text, images)
            self.controller.edit(conversation, seq, text, images)
            return
        head = self.store.head(conversation)
        self._turn_after, self._turn_finished = -1 if head is None else head, False
        self.chat.add_user_message(text, images)
        self.controller.send(conversation, text, images)

    def _check_connected(self) -> bool:
        if not self.session.connection.ok:
            self.chat.show_note(self.session.connection.message or "Not connected.", "error")
        return self.session.connection.ok

    # --- settings ---------------------------------------------------------------------

    def open_settings(self) -> None:
        dialog = SettingsDialog(
            self.session.settings,
            self.session.tools.all,
            self.session.secrets,
            self,
            runtime=self.session.runtime,
            calibration=self.session.calibration,
            calibrating=self.controller.calibrating,
        )
        dialog.calibrate_requested.connect(self.controller.calibrate)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return
        self.apply_settings(dialog.settings(), dialog.save_key())

    def apply_settings(self, settings: Settings, key_note: str | None = None) -> None:
        reconnect = self.session.apply_settings(settings)
        if key_note:
            self.statusBar().showMessage(key_note, 8000)
        if reconnect or key_note:
            self.controller.reconnect()

    def _use_builtin(self) -> None:
        self.apply_settings(replace(self.session.settings, backend="builtin"))

    def _choose_model_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Choose a model file", str(Path.home()), "GGUF models (*.gguf)"
        )
        if path:
            self.use_model_file(Path(path))

    def use_model_file(self, path: Path) -> None:
        """Run this GGUF file in the built-in runtime."""
        settings = replace(self.session.settings, backend="builtin", runtime_model=str(path))
        self.apply_settings(settings)

    @property
    def models_dir(self) -> Path:
        return self.store.path.parent / "models"

    def open_models(
        self, download: CatalogueModel | None = None, use_when_done: bool = False
    ) -> ModelsDialog:
        """The models dialog, with `download` started (and used once it has arrived); with
        a page of Ollama's models when Ollama is the backend."""
        connection = self.session.connection
        ollama = connection.url if connection.ok and connection.backend == "ollama" else None
        dialog = show_models(self, self.models_dir, download, use_when_done, ollama)
        dialog.use_model.connect(self.use_model_file)
        dialog.use_ollama_model.connect(self.use_ollama_model)
        return dialog

    def use_ollama_model(self, name: str) -> None:
        url = self.session.connection.url
        settings = replace(self.session.settings, backend="ollama", url=url, model=name)
        self.apply_settings(settings)

    def _open_image(self, image: Image) -> None:
        ImageDialog(image, self).exec()

    # --- closing ----------------------------------------------------------------------

    async def _close_when_stopped(self) -> None:
        await self.controller.shutdown()
        self.close()

    def closeEvent(self, event: QCloseEvent) -> None:
        """Close only once the running turn has really stopped: no task outlives the window."""
        if self.controller.pending:
            event.ignore()
            if not self._closing:
                self._closing = True
                self._closer = asyncio.ensure_future(self._close_when_stopped())
            return
        shown = self.inspector_dock.isVisible()
        if self.session.settings.show_inspector != shown:
            self.session.apply_settings(replace(self.session.settings, show_inspector=shown))
        super().closeEvent(event)
