"""The main window: conversations on the left, the chat in the middle, the inspector on the
right (toggle), the composer below, and the status bar."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import Qt, QUrl
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
    QSplitter,
    QWidget,
)

from desktop.core.calibration.card import Calibration
from desktop.core.connection import Connection
from desktop.core.events import Event, TextDelta, ThinkingDelta, ToolStarted, TurnFinished, Usage
from desktop.core.models.catalogue import CatalogueModel
from desktop.core.models.gguf_header import embeds
from desktop.core.models.library import mark_used
from desktop.core.runtime import bundled_model_available
from desktop.core.storage.settings import Settings
from desktop.core.tools.catalog import remembered
from desktop.ui.calibration_status import CalibrationStatus
from desktop.ui.chat_pane import ChatPane
from desktop.ui.connection_status import ConnectionStatus
from desktop.ui.context_meter import ContextMeter
from desktop.ui.controller import ApprovalRequest, ChatController
from desktop.ui.conversation_list import ConversationList
from desktop.ui.document_jobs import DocumentJobs
from desktop.ui.documents_dialog import DocumentsDialog
from desktop.ui.first_run import FirstRunPanel
from desktop.ui.image_dialog import ImageDialog
from desktop.ui.inspector import InspectorPanel
from desktop.ui.menus import build_menus
from desktop.ui.models_dialog import ModelsDialog, offer_text, recommended_model, show_models
from desktop.ui.presets_dialog import PresetsDialog
from desktop.ui.resources import resource
from desktop.ui.settings_dialog import SettingsDialog
from desktop.ui.shortcuts import ShortcutsDialog, shortcut_list, show_about
from desktop.ui.theme import MAX_POINTS, MIN_POINTS, Appearance
from desktop.ui.tools_dialog import show_tools


class MainWindow(QMainWindow):
    """The conversations on the left, the chat pane in the middle, the inspector on the
    right; the menus, the status bar, and what the controller says, passed to the view
    that shows it."""

    def __init__(self, controller: ChatController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.session = controller.session
        self.store = self.session.store
        self._closing = False
        self._closer: asyncio.Future[None] | None = None
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

        # bottom: the status bar (the pane shows its conversation's use of the context)
        self.status = ConnectionStatus(self.statusBar())
        self.context_meter = ContextMeter()
        self.statusBar().addPermanentWidget(self.context_meter)
        self.calibration_status = CalibrationStatus()
        self.calibration_status.cancel_requested.connect(self.controller.cancel_calibration)
        self.statusBar().addPermanentWidget(self.calibration_status)
        self.status.place()

        # middle: the chat pane, or the first run's screen in its place
        self.recommended = recommended_model(self.models_dir)
        self.first_run = FirstRunPanel(bundled_model_available(), offer_text(self.recommended))
        self.first_run.download_recommended.connect(
            lambda: self.open_models(self.recommended, use_when_done=True)
        )
        self.first_run.use_builtin.connect(self._use_builtin)
        self.first_run.choose_model_file.connect(self._choose_model_file)
        self.first_run.retry.connect(self.controller.reconnect)
        self.first_run.open_settings.connect(self.open_settings)
        self.pane = ChatPane(controller, self.context_meter, self.first_run)
        self.pane.chat.image_clicked.connect(lambda image: ImageDialog(image, self).exec())
        self.pane.changed.connect(lambda: self.refresh_conversations(keep_selection=True))
        splitter = QSplitter()
        splitter.addWidget(self.sidebar)
        splitter.addWidget(self.pane)
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

        index = self.session.documents  # indexed in the background, among the turn's tasks
        self.documents = DocumentJobs(self.session, index, controller.tasks) if index else None
        if self.documents:  # the header lists the collections a conversation may search
            self.documents.changed.connect(self.pane.show_header)
        build_menus(self)
        self._connect_controller()
        self.refresh_conversations()
        if not self.sidebar.choose_first():
            self.new_conversation()

    @property
    def conversation_id(self) -> int | None:
        return self.pane.conversation_id

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
        event = QAccessibleAnnouncementEvent(self.pane.chat, text)
        QAccessible.updateAccessibility(event)

    def about(self) -> None:
        show_about(self, self.store.path.parent, self.logs_folder)

    # --- the controller ---------------------------------------------------------------

    def _connect_controller(self) -> None:
        c = self.controller
        c.event_received.connect(self.on_event)
        c.turn_stopped.connect(lambda: self.pane.chat.show_note("Stopped.", "note"))
        c.busy_changed.connect(self._on_busy)
        c.connection_changed.connect(self._on_connection)
        c.approval_requested.connect(self._on_approval_requested)
        c.speed_measured.connect(self.status.show_speed)
        c.calibration_progress.connect(self.calibration_status.progress)
        c.calibration_finished.connect(self._on_calibrated)
        c.calibration_ended.connect(self._on_calibration_ended)

    def on_event(self, event: Event) -> None:
        """One event of the running turn: the pane shows it; what a screen reader should
        hear is said; the inspector and the conversation list follow."""
        if (said := self.pane.show_event(event)) is not None:
            self.announce(said)
        if isinstance(event, TurnFinished):
            self.refresh_conversations(keep_selection=True)  # the first message names it
        if not isinstance(event, TextDelta | ThinkingDelta | Usage | ToolStarted):
            self._refresh_inspector()

    def _on_calibrated(self, calibration: Calibration) -> None:
        self.calibration_status.hide()
        self.statusBar().showMessage(CalibrationStatus.finished_message(calibration), 15000)
        if (suggestion := calibration.suggestion()) is not None:
            self.pane.chat.show_note(suggestion, "warning")  # where the person is looking

    def _on_calibration_ended(self, problem: str) -> None:
        self.calibration_status.hide()
        self.statusBar().showMessage(problem or "Calibration cancelled.", 10000)

    def _on_approval_requested(self, request: ApprovalRequest) -> None:
        card = self.pane.chat.cards.get(request.call.id)
        if card is None:
            request.answer(False)
            return

        def answered(decision: str) -> None:
            if decision == "always" and request.tool.approval_per_chat:
                self.controller.allow_in_chat(request.tool.name)
            elif decision in ("always", "never"):  # kept: Settings → Tools shows it
                self.apply_settings(remembered(self.session.settings, request.tool, decision))
            request.answer(decision in ("once", "always"))

        card.ask(answered, request.tool.approval_per_chat)
        request.future.add_done_callback(
            lambda future: card.end_question("stopped") if future.cancelled() else None
        )

    def _on_busy(self, busy: bool) -> None:
        self.pane.composer_bar.set_busy(busy)
        if not busy:
            self.pane.settle_turn()
            self._refresh_inspector()

    def _on_connection(self, connection: Connection) -> None:
        self.status.show(connection, self.session.calibration)
        self.pane.header.show_connection(connection)
        self.pane.show_context_use()
        self.context_meter.setVisible(connection.ok)
        runtime = self.session.runtime
        if connection.ok and runtime is not None and runtime.model.parent == self.models_dir:
            mark_used(runtime.model, time.time())  # the manager's "last used"
        if connection.problems and connection.problems != self._problems_said:
            for problem in connection.problems:  # once, not at every reconnect
                self.pane.chat.show_note(problem, "warning")
        self._problems_said = connection.problems or self._problems_said
        if connection.ok:
            self.pane.show_chat(True)
            self.controller.read_ahead(self.conversation_id)  # connected, or calibrated
        elif connection.message != "Connecting…":
            self.first_run.reason.setText(connection.message)
            self.pane.show_chat(False)

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
        self.sidebar.search.clear()
        self.refresh_conversations(keep_selection=False)
        self.open_conversation(conversation_id)
        self.pane.composer.setFocus()

    def open_conversation(self, conversation_id: int) -> None:
        if conversation_id == self.conversation_id:
            return
        self.controller.stop()
        self.sidebar.mark_current(conversation_id)
        self.pane.open(conversation_id)
        self.inspector.set_traces(self.session.traces.get(conversation_id, []))
        self.controller.read_ahead(conversation_id)

    def rename_conversation(self) -> None:
        self.sidebar.rename()

    def focus_search(self) -> None:
        self.sidebar.search.setFocus()

    def delete_conversation(self) -> None:
        if (doomed := self.conversation_id) is None:
            return
        self.controller.stop()
        self.store.delete(doomed)
        self.session.forget(doomed)
        self.pane.open(None)
        self.sidebar.mark_current(None)
        self.refresh_conversations(keep_selection=False)
        if not self.sidebar.choose_first():
            self.new_conversation()

    def export(self, kind: str, path: Path | None = None) -> None:
        self.sidebar.export(kind, path)

    # --- the look, presets ---------------------------------------------------------------

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

    def open_documents(self) -> None:
        if self.documents:
            dialog = DocumentsDialog(self.documents, self)
            dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            dialog.show()

    def open_tools(self) -> None:
        show_tools(self)

    def open_presets(self) -> None:
        names = self.session.documents.names() if self.session.documents else []
        dialog = PresetsDialog(
            self.session.presets.copy(), self, names, [*self.session.settings.servers]
        )
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.session.presets = dialog.book
            self.pane.show_header()

    # --- settings and models -------------------------------------------------------------

    def open_settings(self) -> None:
        dialog = SettingsDialog(
            self.session.settings, self.session.tools.all, self.session.secrets, self,
            runtime=self.session.runtime, calibration=self.session.calibration,
            calibrating=self.controller.calibrating, tasks=self.controller.tasks,
        )  # fmt: skip
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

    def _use_builtin(self) -> None:  # the first run's button
        self.apply_settings(replace(self.session.settings, backend="builtin"))

    def _choose_model_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Choose a model file", str(Path.home()), "GGUF models (*.gguf)"
        )
        if path:
            self.use_model_file(Path(path))

    def use_model_file(self, path: Path) -> None:
        """Run this GGUF file in the built-in runtime; an embedding model searches the
        documents by meaning instead (each collection's passages given vectors)."""
        if embeds(path):
            self.apply_settings(replace(self.session.settings, embeddings="runtime",
                                        embedding_model=str(path)))  # fmt: skip
            return self.documents.update() if self.documents else None
        settings = replace(self.session.settings, backend="builtin", runtime_model=str(path))
        self.apply_settings(settings)

    @property
    def models_dir(self) -> Path:
        return self.store.path.parent / "models"

    def open_models(
        self, download: CatalogueModel | None = None, use_when_done: bool = False
    ) -> ModelsDialog:
        """The models dialog, with `download` started (and used once it has arrived); with
        a page of Ollama's models when Ollama is the backend. Its work runs among the
        controller's tasks: quitting waits for (and stops) a download."""
        connection = self.session.connection
        ollama = connection.url if connection.ok and connection.backend == "ollama" else None
        dialog = show_models(
            self, self.models_dir, download, use_when_done, ollama, self.controller.tasks
        )
        dialog.use_model.connect(self.use_model_file)
        dialog.use_ollama_model.connect(self.use_ollama_model)
        return dialog

    def use_ollama_model(self, name: str) -> None:
        url = self.session.connection.url
        settings = replace(self.session.settings, backend="ollama", url=url, model=name)
        self.apply_settings(settings)

    # --- closing ----------------------------------------------------------------------

    async def _close_when_stopped(self) -> None:
        await self.controller.shutdown()
        self.close()

    def closeEvent(self, event: QCloseEvent) -> None:
        """Close only once the running turn (and every job beside it: a download, a
        connection) has really stopped: no task outlives the window."""
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
