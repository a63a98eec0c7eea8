"""The main window: conversations on the left, the chat in the middle, the inspector on the
right (toggle), the composer below, and the status bar."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QPoint, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QAction, QCloseEvent, QDesktopServices, QKeyEvent, QKeySequence, QPixmap
from PySide6.QtWidgets import (
    QDialog,
    QDockWidget,
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QMenu,
    QMessageBox,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSplitter,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from desktop import __version__
from desktop.core.calibration.card import Calibration
from desktop.core.events import ToolResult
from desktop.core.messages import Image
from desktop.core.runtime import bundled_model_available
from desktop.core.session import Connection
from desktop.core.storage.settings import Settings
from desktop.ui.chat_view import ChatView
from desktop.ui.controller import ApprovalRequest, ChatController
from desktop.ui.inspector import InspectorPanel
from desktop.ui.settings_dialog import SettingsDialog

PAGE_SIZE = 40  # messages shown when a conversation opens; older ones load on scroll


class Composer(QPlainTextEdit):
    """Enter sends, Shift+Enter starts a new line."""

    submitted = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setPlaceholderText("Ask anything…  (Enter sends, Shift+Enter for a new line)")
        self.setFixedHeight(84)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        enter = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if enter and not event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.submitted.emit()
            return
        super().keyPressEvent(event)


class FirstRunPanel(QWidget):
    """Shown instead of the chat while no model server answers."""

    use_builtin = Signal()
    choose_model_file = Signal()
    open_settings = Signal()
    retry = Signal()

    def __init__(self, offer_bundled_model: bool = True, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.addStretch()
        title = QLabel("<h2>Let’s find a model to talk to</h2>")
        title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout.addWidget(title)
        self.reason = QLabel()
        self.reason.setWordWrap(True)
        self.reason.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout.addWidget(self.reason)
        explain = QLabel(
            "Loomchat works with the model servers people already run: install "
            "<b>Ollama</b> (ollama.com) and run <code>ollama pull qwen3:4b</code>, or open "
            "<b>LM Studio</b> and start its server, or run <b>KoboldCPP</b> or a "
            "<b>llama.cpp</b> server. Or let Loomchat run a model itself, with no other "
            "program: "
            + ("its small built-in model, or " if offer_bundled_model else "")
            + "a GGUF model file you downloaded (from huggingface.co, for example)."
        )
        explain.setWordWrap(True)
        explain.setAlignment(Qt.AlignmentFlag.AlignCenter)
        explain.setFixedWidth(560)
        explain.setMinimumHeight(explain.heightForWidth(560) + 8)  # rich text under-reports
        layout.addWidget(explain, alignment=Qt.AlignmentFlag.AlignHCenter)
        buttons = QHBoxLayout()
        buttons.addStretch()
        choices = [
            ("Use the built-in model", self.use_builtin),
            ("Choose a model file…", self.choose_model_file),
            ("Try again", self.retry),
            ("Settings…", self.open_settings),
        ]
        for text, signal in choices[0 if offer_bundled_model else 1 :]:
            button = QPushButton(text)
            button.clicked.connect(signal.emit)
            buttons.addWidget(button)
        buttons.addStretch()
        layout.addLayout(buttons)
        layout.addStretch()


class ImageDialog(QDialog):
    def __init__(self, image: Image, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Image")
        self.image = image
        pixmap = QPixmap()
        pixmap.loadFromData(image.data)
        label = QLabel()
        label.setPixmap(pixmap)
        scroll = QScrollArea()
        scroll.setWidget(label)
        save = QPushButton("Save…")
        save.clicked.connect(self._save)
        layout = QVBoxLayout(self)
        layout.addWidget(scroll)
        layout.addWidget(save, alignment=Qt.AlignmentFlag.AlignRight)
        self.resize(min(pixmap.width() + 40, 1200), min(pixmap.height() + 80, 900))

    def _save(self) -> None:
        suffix = "png" if self.image.mime == "image/png" else "jpg"
        path, _ = QFileDialog.getSaveFileName(self, "Save image", f"image.{suffix}")
        if path:
            Path(path).write_bytes(self.image.data)


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
        self.setWindowTitle("Loomchat")
        self.resize(1180, 760)

        # left: conversations
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search conversations")
        self.search.textChanged.connect(self.refresh_conversations)
        self.new_button = QPushButton("New chat")
        self.new_button.clicked.connect(self.new_conversation)
        self.conversation_list = QListWidget()
        self.conversation_list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.conversation_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.conversation_list.currentItemChanged.connect(self._on_conversation_chosen)
        self.conversation_list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.conversation_list.customContextMenuRequested.connect(self._conversation_menu)
        sidebar = QWidget()
        sidebar.setObjectName("sidebar")
        side = QVBoxLayout(sidebar)
        side.addWidget(self.new_button)
        side.addWidget(self.search)
        side.addWidget(self.conversation_list)

        # middle: chat or first-run, and the composer
        self.chat = ChatView()
        self.chat.load_earlier_requested.connect(self.load_earlier)
        self.chat.image_clicked.connect(self._open_image)
        self.first_run = FirstRunPanel(offer_bundled_model=bundled_model_available())
        self.first_run.use_builtin.connect(self._use_builtin)
        self.first_run.choose_model_file.connect(self._choose_model_file)
        self.first_run.retry.connect(self.controller.reconnect)
        self.first_run.open_settings.connect(self.open_settings)
        self.pages = QStackedWidget()
        self.pages.addWidget(self.chat)
        self.pages.addWidget(self.first_run)
        self.composer = Composer()
        self.composer.submitted.connect(self.send)
        self.send_button = QPushButton("Send")
        self.send_button.setDefault(True)
        self.send_button.clicked.connect(self.send)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the answer (Esc)")
        self.stop_button.clicked.connect(self.controller.stop)
        self.stop_button.hide()
        buttons = QVBoxLayout()
        buttons.addWidget(self.send_button)
        buttons.addWidget(self.stop_button)
        buttons.addStretch()
        composer_row = QHBoxLayout()
        composer_row.addWidget(self.composer, 1)
        composer_row.addLayout(buttons)
        middle = QWidget()
        center = QVBoxLayout(middle)
        center.setContentsMargins(0, 0, 8, 8)
        center.addWidget(self.pages, 1)
        center.addLayout(composer_row)

        splitter = QSplitter()
        splitter.addWidget(sidebar)
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
        self.backend_label = QLabel()
        self.speed_label = QLabel()
        self.track_label = QLabel()
        self.calibration_label = QLabel()
        self.calibration_bar = QProgressBar()
        self.calibration_bar.setMaximumWidth(120)
        self.calibration_bar.setTextVisible(False)
        self.calibration_bar.setAccessibleName("Calibration progress")
        self.calibration_cancel = QToolButton()
        self.calibration_cancel.setText("Cancel")
        self.calibration_cancel.setToolTip("Stop calibrating; it can be run again from Settings")
        self.calibration_cancel.clicked.connect(self.controller.cancel_calibration)
        for widget in (self.calibration_label, self.calibration_bar, self.calibration_cancel):
            widget.setVisible(False)
            self.statusBar().addPermanentWidget(widget)
        for label in (self.track_label, self.speed_label):
            self.statusBar().addPermanentWidget(label)
        self.statusBar().addWidget(self.backend_label, 1)

        self._build_menus()
        self._connect_controller()
        self.refresh_conversations()
        if self.conversation_list.count() == 0:
            self.new_conversation()
        else:
            self.conversation_list.setCurrentRow(0)

    # --- menus and shortcuts ----------------------------------------------------------

    def _build_menus(self) -> None:
        def action(
            menu: QMenu,
            text: str,
            slot: object,
            shortcut: QKeySequence | QKeySequence.StandardKey | str | None = None,
        ) -> QAction:
            item = menu.addAction(text)
            item.triggered.connect(slot)
            if shortcut is not None:
                item.setShortcut(QKeySequence(shortcut))
            return item

        file_menu = self.menuBar().addMenu("&File")
        action(file_menu, "New chat", self.new_conversation, QKeySequence.StandardKey.New)
        action(file_menu, "Rename chat…", self.rename_conversation, "F2")
        action(file_menu, "Delete chat", self.delete_conversation)
        file_menu.addSeparator()
        action(file_menu, "Export as Markdown…", lambda: self.export("md"))
        action(file_menu, "Export as JSON…", lambda: self.export("json"))
        file_menu.addSeparator()
        action(file_menu, "Settings…", self.open_settings, QKeySequence.StandardKey.Preferences)
        action(file_menu, "Quit", self.close, QKeySequence.StandardKey.Quit)
        view_menu = self.menuBar().addMenu("&View")
        toggle = self.inspector_dock.toggleViewAction()
        toggle.setShortcut(QKeySequence("Ctrl+I"))
        view_menu.addAction(toggle)
        action(
            view_menu, "Search conversations", self.search.setFocus, QKeySequence.StandardKey.Find
        )
        chat_menu = self.menuBar().addMenu("&Chat")
        action(chat_menu, "Stop the answer", self.controller.stop, "Esc")
        action(chat_menu, "Reconnect", self.controller.reconnect, "Ctrl+R")
        help_menu = self.menuBar().addMenu("&Help")
        action(help_menu, "Open the logs folder", self._open_logs)
        action(help_menu, "About Loomchat", self._about)

    @property
    def logs_folder(self) -> Path:
        return self.store.path.parent / "logs"

    def _open_logs(self) -> None:
        self.logs_folder.mkdir(parents=True, exist_ok=True)
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.logs_folder)))

    def _about(self) -> None:
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
        c.text_received.connect(self.chat.append_text)
        c.thinking_received.connect(self.chat.append_thinking)
        c.tool_called.connect(self.chat.add_tool_call)
        c.tool_finished.connect(self._on_tool_finished)
        c.tool_rejected.connect(self.chat.reject_tool)
        c.turn_finished.connect(self._on_turn_finished)
        c.turn_failed.connect(lambda message: self.chat.show_note(message, "error"))
        c.turn_stopped.connect(lambda: self.chat.show_note("Stopped.", "note"))
        c.warned.connect(lambda message: self.chat.show_note(message, "warning"))
        c.busy_changed.connect(self._on_busy)
        c.connection_changed.connect(self._on_connection)
        c.approval_requested.connect(self._on_approval_requested)
        c.speed_measured.connect(lambda speed: self.speed_label.setText(f"{speed:.1f} tokens/s"))
        c.calibration_progress.connect(self._on_calibration_progress)
        c.calibration_finished.connect(self._on_calibrated)
        c.calibration_ended.connect(self._on_calibration_ended)
        for signal in (
            c.tool_called,
            c.tool_finished,
            c.tool_rejected,
            c.turn_finished,
            c.turn_failed,
        ):
            signal.connect(self._refresh_inspector)

    # --- calibration --------------------------------------------------------------------

    def _show_calibrating(self, shown: bool) -> None:
        for widget in (self.calibration_label, self.calibration_bar, self.calibration_cancel):
            widget.setVisible(shown)

    def _on_calibration_progress(self, done: int, total: int) -> None:
        self._show_calibrating(True)
        self.calibration_bar.setRange(0, total)
        self.calibration_bar.setValue(done)
        self.calibration_label.setText(f"Learning how this model calls tools… {done}/{total}")
        self.calibration_label.setToolTip(
            "Loomchat asks the model a few questions with the tools to set how sure it must "
            "be to make a call. Your chats go first: it pauses while the model answers you."
        )

    def _on_calibrated(self, calibration: Calibration) -> None:
        self._show_calibrating(False)
        card = dict(calibration.card())
        self.statusBar().showMessage(
            f"Tool calling calibrated: {card['Track']}; calls right where due: "
            f"{card['Calls right where one is due']}. The card is in Settings → Reliability.",
            15000,
        )

    def _on_calibration_ended(self, problem: str) -> None:
        self._show_calibrating(False)
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

    def _on_tool_finished(self, event: ToolResult) -> None:
        self.chat.finish_tool(event)
        if event.images:
            self.chat.mark_tool_images(self.session.connection.capabilities.vision)

    def _on_turn_finished(self, text: str) -> None:
        self.chat.finish_answer(text)
        self.refresh_conversations(keep_selection=True)

    def _on_busy(self, busy: bool) -> None:
        self.send_button.setVisible(not busy)
        self.stop_button.setVisible(busy)
        if not busy:
            self._refresh_inspector()

    def _on_connection(self, connection: Connection) -> None:
        if connection.ok:
            where = connection.message.removeprefix("Connected to ").split(". (")[0].rstrip(".")
            model = f" · {Path(connection.model).name}" if connection.model else ""
            vision = " · sees images" if connection.capabilities.vision else ""
            self.backend_label.setText(f"● {where}{model}{vision}")
            self.backend_label.setToolTip(connection.message)
            calibration = self.session.calibration
            gate = (
                f", bar {calibration.bar:.2f}" if calibration and connection.track == "emulated"
                else "" if calibration else ", not calibrated yet"
            )  # fmt: skip
            self.track_label.setText(f"tools: {connection.track}{gate}")
            self.pages.setCurrentWidget(self.chat)
        else:
            self.backend_label.setText(f"○ {connection.message}")
            self.track_label.setText("")
            if connection.message != "Connecting…":
                self.first_run.reason.setText(connection.message)
                self.pages.setCurrentWidget(self.first_run)

    def _refresh_inspector(self, *_args: object) -> None:
        """Rebuild the inspector's tree, only while it is shown (it is not free)."""
        if self.conversation_id is not None and self.inspector_dock.isVisible():
            self.inspector.set_traces(self.session.traces.get(self.conversation_id, []))

    # --- conversations ----------------------------------------------------------------

    def refresh_conversations(self, *_args: object, keep_selection: bool = True) -> None:
        current = self.conversation_id
        self.conversation_list.blockSignals(True)
        self.conversation_list.clear()
        for info in self.store.conversations(self.search.text().strip()):
            item = QListWidgetItem(info.title)
            item.setData(Qt.ItemDataRole.UserRole, info.id)
            item.setToolTip(f"{info.message_count} messages")
            self.conversation_list.addItem(item)
            if keep_selection and info.id == current:
                self.conversation_list.setCurrentItem(item)
        self.conversation_list.blockSignals(False)

    def new_conversation(self) -> None:
        self.controller.stop()
        conversation_id = self.store.create_conversation()
        self.search.clear()
        self.refresh_conversations(keep_selection=False)
        self.open_conversation(conversation_id)
        self.composer.setFocus()

    def _on_conversation_chosen(
        self, item: QListWidgetItem | None, _previous: object = None
    ) -> None:
        if item is not None:
            self.open_conversation(int(item.data(Qt.ItemDataRole.UserRole)))

    def open_conversation(self, conversation_id: int) -> None:
        if conversation_id == self.conversation_id:
            return
        self.controller.stop()
        self.conversation_id = conversation_id
        for row in range(self.conversation_list.count()):
            item = self.conversation_list.item(row)
            if item.data(Qt.ItemDataRole.UserRole) == conversation_id:
                self.conversation_list.blockSignals(True)
                self.conversation_list.setCurrentItem(item)
                self.conversation_list.blockSignals(False)
        page = self.store.messages(conversation_id, last=PAGE_SIZE)
        self._oldest_seq = page[0][0] if page else None
        self.chat.show_messages([m for _, m in page], more_before=bool(page) and page[0][0] > 0)
        self.inspector.set_traces(self.session.traces.get(conversation_id, []))

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
        self.chat.prepend_messages([m for _, m in page], more_before=page[0][0] > 0)
        # keep the message the user was looking at in place
        QTimer.singleShot(0, bar, lambda: bar.setValue(bar.maximum() - height_before))

    def rename_conversation(self) -> None:
        if self.conversation_id is None:
            return
        title, ok = QInputDialog.getText(
            self, "Rename chat", "Title", text=self.store.title(self.conversation_id)
        )
        if ok and title.strip():
            self.store.rename(self.conversation_id, title.strip())
            self.refresh_conversations()

    def delete_conversation(self) -> None:
        if self.conversation_id is None:
            return
        self.controller.stop()
        doomed = self.conversation_id
        self.store.delete(doomed)
        self.session.forget(doomed)
        self.conversation_id = None
        self.refresh_conversations(keep_selection=False)
        if self.conversation_list.count():
            self.conversation_list.setCurrentRow(0)
        else:
            self.new_conversation()

    def _conversation_menu(self, position: QPoint) -> None:
        menu = QMenu(self)
        menu.addAction("Rename…", self.rename_conversation)
        menu.addAction("Export as Markdown…", lambda: self.export("md"))
        menu.addAction("Export as JSON…", lambda: self.export("json"))
        menu.addSeparator()
        menu.addAction("Delete", self.delete_conversation)
        menu.exec(self.conversation_list.mapToGlobal(position))

    def export(self, kind: str, path: Path | None = None) -> None:
        if self.conversation_id is None:
            return
        if path is None:
            title = self.store.title(self.conversation_id)
            chosen, _ = QFileDialog.getSaveFileName(self, "Export chat", f"{title}.{kind}")
            if not chosen:
                return
            path = Path(chosen)
        if kind == "md":
            path.write_text(self.store.export_markdown(self.conversation_id), encoding="utf-8")
        else:
            data = self.store.export_json(self.conversation_id)
            path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")

    # --- sending ----------------------------------------------------------------------

    def send(self) -> None:
        text = self.composer.toPlainText().strip()
        if not text or self.conversation_id is None:
            return
        if not self.session.connection.ok:
            self.chat.show_note(self.session.connection.message or "Not connected.", "error")
            return
        self.composer.clear()
        self.chat.add_user_message(text)
        self.controller.send(self.conversation_id, text)

    # --- settings ---------------------------------------------------------------------

    def open_settings(self) -> None:
        dialog = SettingsDialog(
            self.session.settings,
            self.session.all_tools,
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
