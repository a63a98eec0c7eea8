"""Presets: make, change, delete, mark the default, import and export as JSON."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop.core.errors import LoomchatError
from desktop.core.storage.presets import (
    MAX_NAME_CHARS,
    TRACKS,
    Preset,
    PresetBook,
    PresetTrack,
)
from desktop.ui.accessible import complete, describe

TRACK_NAMES = {"": "The connection's", "emulated": "Emulated", "native": "Native", "auto": "Auto"}


class PresetsDialog(QDialog):
    """Edits `book` in place; saved when the dialog is accepted."""

    def __init__(self, book: PresetBook, parent: QWidget | None = None,
                 collections: Sequence[str] = (), servers: Sequence[str] = ()) -> None:  # fmt: skip
        """`collections`: the document collections there are, to choose among; `servers`:
        the saved servers."""
        super().__init__(parent)
        self.known_collections = list(collections)
        self.known_servers = list(servers)
        self.setWindowTitle("Presets")
        self.resize(720, 440)
        self.book = book
        self.shown: str | None = None  # the preset in the form

        self.names = QListWidget()
        describe(self.names, "Your presets; choose one to change it", "Presets")
        self.names.currentTextChanged.connect(self._show)
        self.name = QLineEdit()
        self.name.setMaxLength(MAX_NAME_CHARS)
        describe(self.name, "The preset's name", "Preset name")
        self.system_prompt = QPlainTextEdit()
        describe(self.system_prompt, "Sent before every conversation that uses this preset",
                 "System prompt")  # fmt: skip
        self.own_temperature = QCheckBox("Own temperature")
        describe(self.own_temperature, "Use this preset's temperature instead of the settings'")
        self.temperature = QDoubleSpinBox()
        self.temperature.setRange(0.0, 2.0)
        self.temperature.setSingleStep(0.1)
        describe(self.temperature, "Higher is more varied, lower more focused", "Temperature")
        self.own_temperature.toggled.connect(self.temperature.setEnabled)
        self.tools = QCheckBox("Tools on")
        describe(self.tools, "Whether the model may use tools in these conversations")
        self.track = QComboBox()
        describe(self.track, "How tools are given to the model in these conversations",
                 "Tool calling track")  # fmt: skip
        for track in TRACKS:
            self.track.addItem(TRACK_NAMES[track], track)
        self.server = QComboBox()
        describe(self.server, "The saved server these conversations talk to", "Server")
        self.every_collection = QCheckBox("Every collection")
        describe(self.every_collection, "Search all your document collections in these "
                 "conversations, or only those ticked below")  # fmt: skip
        self.collections = QListWidget()
        self.collections.setMaximumHeight(90)
        describe(self.collections, "The document collections these conversations search",
                 "Collections")  # fmt: skip
        self.every_collection.toggled.connect(lambda every: self.collections.setEnabled(not every))
        documents = QVBoxLayout()
        documents.addWidget(self.every_collection)
        documents.addWidget(self.collections)
        self.default = QLabel()
        form = QFormLayout()
        form.addRow("Name", self.name)
        form.addRow("System prompt", self.system_prompt)
        temperature = QHBoxLayout()
        temperature.addWidget(self.own_temperature)
        temperature.addWidget(self.temperature)
        form.addRow("Temperature", temperature)
        form.addRow("Tools", self.tools)
        form.addRow("Track", self.track)
        form.addRow("Server", self.server)
        form.addRow("Documents", documents)
        form.addRow("", self.default)

        actions = QHBoxLayout()
        for text, slot, description in (
            ("New", self.new_preset, "Make a new preset"),
            ("Delete", self.delete_preset, "Delete the chosen preset"),
            ("Make default", self.make_default, "New conversations start with this preset"),
            ("Import…", self.import_preset, "Add a preset from a JSON file"),
            ("Export…", self.export_preset, "Save the chosen preset as a JSON file"),
        ):
            button = QPushButton(text)
            describe(button, description, f"{text.rstrip('…')} preset")
            button.clicked.connect(slot)
            actions.addWidget(button)
        actions.addStretch()
        self.message = QLabel()
        self.message.setWordWrap(True)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)

        columns = QHBoxLayout()
        columns.addWidget(self.names, 1)
        columns.addLayout(form, 3)
        layout = QVBoxLayout(self)
        layout.addLayout(columns, 1)
        layout.addLayout(actions)
        layout.addWidget(self.message)
        layout.addWidget(buttons)
        complete(self)
        self._fill()

    def _fill(self, select: str | None = None) -> None:
        self.shown = None
        self.names.clear()
        self.names.addItems([p.name for p in self.book.presets])
        names = [p.name for p in self.book.presets]
        if names:
            self.names.setCurrentRow(names.index(select) if select in names else 0)

    def _show(self, name: str) -> None:
        self.keep()
        preset = self.book.get(name)
        if preset is None:
            return
        self.shown = name
        self.name.setText(preset.name)
        self.system_prompt.setPlainText(preset.system_prompt)
        self.own_temperature.setChecked(preset.temperature is not None)
        self.temperature.setEnabled(preset.temperature is not None)
        self.temperature.setValue(preset.temperature if preset.temperature is not None else 0.7)
        self.tools.setChecked(preset.tools)
        self.track.setCurrentIndex(max(self.track.findData(preset.track), 0))
        self._show_collections(preset.collections)
        self.server.clear()
        self.server.addItem("The one in use", "")
        for server in dict.fromkeys(
            [*self.known_servers, *([preset.server] if preset.server else [])]
        ):
            self.server.addItem(server, server)
        self.server.setCurrentIndex(max(self.server.findData(preset.server), 0))
        default = name == self.book.default
        self.default.setText("The default for new conversations." if default else "")

    def keep(self) -> bool:
        """Put the form back into the book; False (and why) when it cannot be."""
        if self.shown is None:
            return True
        name = self.name.text().strip()
        if not name:
            self.message.setText("A preset needs a name.")
            return False
        temperature = self.temperature.value() if self.own_temperature.isChecked() else None
        chosen = [t for t in TRACKS if t == self.track.currentData()]
        track: PresetTrack = chosen[0] if chosen else ""
        preset = Preset(name, self.system_prompt.toPlainText().strip(), temperature,
                        self.tools.isChecked(), track, self._chosen_collections(),
                        str(self.server.currentData() or ""))  # fmt: skip
        try:
            self.book.put(preset, replacing=self.shown)
        except LoomchatError as exc:
            self.message.setText(str(exc))
            return False
        if name != self.shown:
            item = self.names.item([p.name for p in self.book.presets].index(name))
            self.shown = name
            if item is not None:
                item.setText(name)
        return True

    def _show_collections(self, chosen: tuple[str, ...] | None) -> None:
        """The collections there are (and any the preset names that is gone), ticked as
        the preset has them."""
        self.collections.clear()
        for name in dict.fromkeys([*self.known_collections, *(chosen or ())]):
            item = QListWidgetItem(name)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            ticked = chosen is not None and name in chosen
            item.setCheckState(Qt.CheckState.Checked if ticked else Qt.CheckState.Unchecked)
            self.collections.addItem(item)
        self.every_collection.setChecked(chosen is None)
        self.collections.setEnabled(chosen is not None)

    def _chosen_collections(self) -> tuple[str, ...] | None:
        if self.every_collection.isChecked():
            return None
        items = [self.collections.item(row) for row in range(self.collections.count())]
        return tuple(i.text() for i in items
                     if i is not None and i.checkState() == Qt.CheckState.Checked)  # fmt: skip

    def new_preset(self) -> None:
        if not self.keep():
            return
        name, n = "New preset", 2
        while self.book.get(name) is not None:
            name, n = f"New preset ({n})", n + 1
        self.book.put(Preset(name))
        self._fill(select=name)
        self.name.setFocus()
        self.name.selectAll()

    def delete_preset(self) -> None:
        if self.shown is not None:
            self.book.remove(self.shown)
            self._fill()

    def make_default(self) -> None:
        if self.keep() and self.shown is not None:
            self.book.default = self.shown
            self.default.setText("The default for new conversations.")

    def import_preset(self) -> None:
        chosen, _ = QFileDialog.getOpenFileName(self, "Import a preset", "", "JSON (*.json)")
        if chosen and self.keep():
            self.import_from(Path(chosen))

    def import_from(self, source: Path) -> None:
        try:
            preset = self.book.import_file(source)
        except LoomchatError as exc:
            self.message.setText(str(exc))
            return
        self._fill(select=preset.name)

    def export_preset(self) -> None:
        if self.shown is None or not self.keep():
            return
        target, _ = QFileDialog.getSaveFileName(
            self, "Export the preset", f"{self.shown}.json", "JSON (*.json)"
        )
        if target:
            try:
                self.book.export(self.shown, Path(target))
            except (LoomchatError, OSError) as exc:
                QMessageBox.warning(self, "Export", str(exc))

    def accept(self) -> None:
        if not self.keep():
            return
        try:
            self.book.save()
        except (OSError, LoomchatError) as exc:
            self.message.setText(f"The presets could not be saved: {exc}")
            return
        super().accept()
