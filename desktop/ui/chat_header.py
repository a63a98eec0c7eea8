"""The chat's header: the conversation's title, the model and what it can do, the
conversation's preset, its server (where several are saved), the document collections it
searches, and its system prompt."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from desktop.core.connection import Connection
from desktop.core.storage.presets import PresetBook
from desktop.ui.accessible import complete, describe

NO_PRESET = "No preset"


class ChatHeader(QWidget):
    """Signals: preset_chosen(str) (a preset's name), system_prompt_requested(),
    collections_chosen(object) (the collections to search, a tuple; None: as the preset
    says), server_chosen(str) (a saved server's name; "": as the preset says)."""

    preset_chosen = Signal(str)
    server_chosen = Signal(str)
    system_prompt_requested = Signal()
    collections_chosen = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chatHeader")
        self.title = QLabel("New chat")
        self.title.setObjectName("chatTitle")
        self.title.setAccessibleName("Conversation title")
        self.model = QLabel()
        self.model.setObjectName("chatModel")
        self.model.setAccessibleName("Model")
        self.preset = QComboBox()
        self.preset.setAccessibleName("Preset")
        self.preset.setAccessibleDescription(
            "The conversation's preset: its system prompt, temperature, tools and track"
        )
        self.preset.setToolTip(self.preset.accessibleDescription())
        self.preset.activated.connect(
            lambda index: self.preset_chosen.emit(str(self.preset.itemData(index) or ""))
        )
        self.server = QComboBox()
        describe(self.server, "Which saved server this conversation talks to (Settings → "
                 "Backend saves them)", "Server")  # fmt: skip
        self.server.activated.connect(
            lambda index: self.server_chosen.emit(str(self.server.itemData(index) or ""))
        )
        self.server.hide()
        self.documents = QToolButton()
        self.documents.setText("Documents")
        self.documents.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        describe(self.documents, "Which of your document collections this conversation "
                 "searches", "Documents searched")  # fmt: skip
        self.documents.setMenu(QMenu(self.documents))
        self.documents.hide()
        self.system_button = QPushButton("System prompt…")
        self.system_button.setAccessibleDescription("Edit this conversation's system prompt")
        self.system_button.clicked.connect(self.system_prompt_requested)
        names = QVBoxLayout()
        names.setSpacing(0)
        names.addWidget(self.title)
        names.addWidget(self.model)
        row = QHBoxLayout(self)
        row.setContentsMargins(16, 8, 16, 8)
        row.addLayout(names, 1)
        row.addWidget(self.preset)
        row.addWidget(self.server)
        row.addWidget(self.documents)
        row.addWidget(self.system_button)

    def show_conversation(self, title: str, presets: PresetBook, preset: str) -> None:
        self.title.setText(title)
        self.preset.clear()
        self.preset.addItem(NO_PRESET, "")
        for each in presets.presets:
            self.preset.addItem(each.name, each.name)
        found = self.preset.findData(preset)
        self.preset.setCurrentIndex(max(found, 0))

    def show_collections(self, names: Sequence[str], own: tuple[str, ...] | None,
                         preset: tuple[str, ...] | None) -> None:  # fmt: skip
        """The collections there are, ticked as the conversation searches them: its `own`
        choice, or (None) its preset's (`preset`; None: every one)."""
        self.documents.setVisible(bool(names))
        searched = own if own is not None else preset if preset is not None else tuple(names)
        menu = self.documents.menu()
        menu.clear()
        follow = menu.addAction("As the preset says")
        follow.setCheckable(True)
        follow.setChecked(own is None)
        follow.triggered.connect(lambda: self.collections_chosen.emit(None))
        menu.addSeparator()
        for name in names:
            action = menu.addAction(name)
            action.setCheckable(True)
            action.setChecked(name in searched)
            toggled = tuple(n for n in names if (n in searched) != (n == name))
            action.triggered.connect(lambda _=False, t=toggled: self.collections_chosen.emit(t))
        count = sum(name in searched for name in names)
        self.documents.setText(f"Documents: {count} of {len(names)}")

    def show_servers(self, names: Sequence[str], own: str, preset: str) -> None:
        """The saved servers, the conversation's `own` choice shown ("": its `preset`'s,
        or "": whichever is in use); hidden while none is saved."""
        self.server.setVisible(bool(names))
        self.server.clear()
        follow = f"Server: {preset} (preset)" if preset else "Server: the one in use"
        self.server.addItem(follow, "")
        for name in names:
            self.server.addItem(f"Server: {name}", name)
        self.server.setCurrentIndex(max(self.server.findData(own), 0) if own else 0)

    def show_connection(self, connection: Connection) -> None:
        if not connection.ok:
            self.model.setText("No model")
            return
        can = ["sees images" if connection.capabilities.vision else "text only"]
        if connection.track:
            can.append(f"{connection.track} tools")
        if connection.capabilities.context_size:
            can.append(f"{connection.capabilities.context_size:,} tokens of context")
        name = connection.model.rsplit("/", 1)[-1] or connection.backend
        self.model.setText(f"{name} · {' · '.join(can)}")


class SystemPromptDialog(QDialog):
    """The conversation's system prompt, written at the top of every request."""

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("System prompt")
        self.resize(560, 360)
        explain = QLabel(
            "Sent to the model before the conversation, on every turn, for this conversation "
            "only. Tools are described after it."
        )
        explain.setWordWrap(True)
        self.editor = QPlainTextEdit(text)
        describe(self.editor, "Sent to the model before this conversation, on every turn",
                 "System prompt")  # fmt: skip
        self.editor.setPlaceholderText("e.g. You are a patient tutor. Answer in French.")
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(explain)
        layout.addWidget(self.editor, 1)
        layout.addWidget(buttons)
        complete(self)

    def text(self) -> str:
        return self.editor.toPlainText().strip()
