"""Settings: backend and model, tools and their cooldowns, limits, the built-in runtime,
and the API key (kept in the system keychain, never in the settings file)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from PySide6.QtCore import Signal
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
    QPushButton,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from desktop.core.calibration.card import Calibration
from desktop.core.providers.base import ProviderError
from desktop.core.providers.discovery import discover
from desktop.core.providers.registry import BACKENDS, make_provider
from desktop.core.runtime import LlamaServer
from desktop.core.storage.keychain import SecretStore, keychain_available
from desktop.core.storage.servers import connection_of, key_name, with_connection
from desktop.core.storage.settings import Settings
from desktop.core.tools.toolbox import Tool
from desktop.ui.accessible import complete, describe
from desktop.ui.api_settings import ApiSettings
from desktop.ui.connection_options import ConnectionOptions
from desktop.ui.reliability_tab import ReliabilityTab
from desktop.ui.runtime_tab import RuntimeTab
from desktop.ui.saved_servers import SavedServers
from desktop.ui.tasks import Tasks
from desktop.ui.tool_table import ToolTable

BACKEND_CHOICES = [
    ("auto", "Find a running server"),
    ("builtin", "Built-in (llama.cpp, runs here)"),
    *[(kind, backend.name) for kind, backend in BACKENDS.items()],
]
TRACKS = [
    ("emulated", "Emulated: tools described in the prompt (best for small models)"),
    ("auto", "Auto: native where the model supports it"),
    ("native", "Native: the backend's own tool calling"),
]


class SettingsDialog(QDialog):
    """Edits a copy of the settings; `settings()` gives the result after `accept()`.

    Signals: key_saved(str): where the API key went, in words.
    calibrate_requested(): the user asked to calibrate the connected model (now).
    """

    key_saved = Signal(str)
    calibrate_requested = Signal()

    def __init__(
        self,
        settings: Settings,
        tools: list[Tool],
        secrets: SecretStore,
        parent: QWidget | None = None,
        runtime: LlamaServer | None = None,
        calibration: Calibration | None = None,
        calibrating: bool = False,
        tasks: Tasks | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.setMinimumWidth(560)
        self._original = settings
        self._tools = tools
        self._secrets = secrets
        self._tasks = Tasks(tasks)
        self.tabs = tabs = QTabWidget()
        tabs.addTab(self._backend_tab(settings), "Backend")
        tabs.addTab(self._tools_tab(settings), "Tools")
        runtime_tab = RuntimeTab(settings.runtime_model, runtime)
        runtime_tab.use_requested.connect(self._use_runtime)
        runtime_tab.stopped.connect(self._runtime_stopped)
        self.runtime_model = runtime_tab.runtime_model
        self.runtime_status = runtime_tab.runtime_status
        self.start_runtime, self.stop_runtime = runtime_tab.start_runtime, runtime_tab.stop_runtime
        tabs.addTab(runtime_tab, "Built-in model")
        self.reliability = ReliabilityTab(calibration, calibrating)
        self.reliability.calibrate_requested.connect(self.calibrate_requested)
        self.card_rows = self.reliability.card_rows
        self.calibrate_button = self.reliability.calibrate_button
        tabs.addTab(self.reliability, "Reliability")
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(tabs)
        layout.addWidget(buttons)
        complete(self)

    # --- tabs -------------------------------------------------------------------------

    def _backend_tab(self, settings: Settings) -> QWidget:
        page = QWidget()
        form = QFormLayout(page)
        self.saved_servers = SavedServers(settings, lambda: connection_of(self._connection()))
        self.saved_servers.chosen.connect(self._show_server)
        self.saved_servers.combo.activated.connect(self._on_backend_changed)
        form.addRow("Saved server", self.saved_servers)
        self.backend = QComboBox()
        for kind, label in BACKEND_CHOICES:
            self.backend.addItem(label, kind)
        self.backend.setCurrentIndex(max(0, self.backend.findData(settings.backend)))
        self.backend.currentIndexChanged.connect(self._on_backend_changed)
        detect = QPushButton("Detect")
        detect.setToolTip("Look for Ollama, LM Studio, KoboldCPP and llama.cpp on this machine")
        detect.clicked.connect(lambda: self._spawn(self._detect()))
        describe(self.backend, "Which model server Loomchat talks to", "Backend")
        row = QHBoxLayout()
        row.addWidget(self.backend, 1)
        row.addWidget(detect)
        form.addRow("Backend", row)
        self.url = QLineEdit(settings.url)
        form.addRow("Address", self.url)
        describe(self.url, "The server's address; empty for its usual one", "Address")
        self.model = QComboBox()
        self.model.setEditable(True)
        self.model.setCurrentText(settings.model)
        refresh = QPushButton("Refresh")
        refresh.clicked.connect(lambda: self._spawn(self._list_models()))
        describe(refresh, "Ask the server again which models it has")
        describe(self.model, "The model to talk to, where the server has several", "Model")
        model_row = QHBoxLayout()
        model_row.addWidget(self.model, 1)
        model_row.addWidget(refresh)
        form.addRow("Model", model_row)
        self.track = QComboBox()
        for value, label in TRACKS:
            self.track.addItem(label, value)
        self.track.setCurrentIndex(max(0, self.track.findData(settings.track)))
        form.addRow("Tool calling", self.track)
        describe(self.track, "How the model is given tools: in the prompt, or natively",
                 "Tool calling")  # fmt: skip
        self.context_size = QSpinBox()
        self.context_size.setRange(512, 1048576)
        self.context_size.setSingleStep(1024)
        self.context_size.setValue(settings.context_size)
        form.addRow("Context size (tokens)", self.context_size)
        describe(self.context_size, "How many tokens of conversation the model is given")
        self.temperature = QDoubleSpinBox()
        self.temperature.setRange(-0.1, 2.0)
        self.temperature.setSingleStep(0.1)
        self.temperature.setSpecialValueText("model default")
        self.temperature.setValue(
            settings.temperature if settings.temperature is not None else -0.1
        )
        form.addRow("Temperature", self.temperature)
        describe(self.temperature, "Higher is more varied, lower more focused; lowest: the "
                 "model's default (on the built-in server 0.3, unless the model file names "
                 "its own)")  # fmt: skip
        self.api_key = QLineEdit()
        self.api_key.setEchoMode(QLineEdit.EchoMode.Password)
        self.api_key.setPlaceholderText("optional: LM Studio token, KoboldCPP password")
        form.addRow("API key", self.api_key)
        describe(self.api_key, "A key or password for the server, kept in the system keychain",
                 "API key")  # fmt: skip
        available, why = keychain_available()
        self.keychain_note = QLabel(why)
        self.keychain_note.setWordWrap(True)
        form.addRow("", self.keychain_note)
        self.secrets_in_file = QCheckBox(
            "Keep keys in a local file instead (plain text, readable only by you)"
        )
        self.secrets_in_file.setChecked(settings.secrets_in_file)
        describe(self.secrets_in_file, "Where no system keychain is available")
        self.secrets_in_file.setVisible(not available or settings.secrets_in_file)
        form.addRow("", self.secrets_in_file)
        self.connection_options = ConnectionOptions(settings)
        form.addRow(self.connection_options)
        self.api_settings = ApiSettings(settings, self._secrets)
        form.addRow(self.api_settings)
        self.status = QLabel()
        self.status.setWordWrap(True)
        form.addRow("", self.status)
        self._on_backend_changed()
        return page

    def _tools_tab(self, settings: Settings) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        form = QFormLayout()
        self.max_tool_calls = QSpinBox()
        self.max_tool_calls.setRange(1, 100)
        self.max_tool_calls.setValue(settings.max_tool_calls)
        form.addRow("Tool calls per answer, at most", self.max_tool_calls)
        describe(self.max_tool_calls, "After this many calls the model must answer in text")
        self.cooldown_enabled = QCheckBox(
            "Cooldowns on (a tool with a cooldown refuses calls for a while after one)"
        )
        self.cooldown_enabled.setChecked(settings.cooldown_enabled)
        describe(self.cooldown_enabled, "Refuse repeated calls of a tool for a while")
        form.addRow(self.cooldown_enabled)
        self.document_search = QComboBox()
        for mode, label in DOCUMENT_SEARCH_CHOICES:
            self.document_search.addItem(label, mode)
        self.document_search.setCurrentIndex(
            max(0, self.document_search.findData(settings.document_search))
        )
        describe(self.document_search, "Whether your documents are searched with your own "
                 "words before the model answers (File → Documents)")  # fmt: skip
        form.addRow("Search your documents", self.document_search)
        layout.addLayout(form)
        self.workspace = QLineEdit(settings.workspace)
        self.workspace.setPlaceholderText("a folder: the file tools work only inside it")
        self.mcp_config = QLineEdit(settings.mcp_config)
        self.mcp_config.setPlaceholderText('a JSON file: {"mcpServers": {...}}, as other apps use')
        for label, field, pick in (
            ("Workspace folder", self.workspace, self._choose_workspace),
            ("MCP servers", self.mcp_config, self._choose_mcp_config),
        ):
            picker = QHBoxLayout()
            picker.addWidget(field, 1)
            browse = QPushButton("Choose…")
            browse.clicked.connect(pick)
            describe(browse, f"Choose the {label.lower()}", f"Choose the {label.lower()}")
            picker.addWidget(browse)
            form.addRow(label, picker)
        self.tool_table = ToolTable(self._tools, settings)
        layout.addWidget(self.tool_table)
        return page

    # --- actions ----------------------------------------------------------------------

    def _use_runtime(self) -> None:
        self.backend.setCurrentIndex(self.backend.findData("builtin"))
        self.accept()

    def _runtime_stopped(self) -> None:
        if self.backend.currentData() == "builtin":
            self.backend.setCurrentIndex(self.backend.findData("auto"))

    def _on_backend_changed(self) -> None:
        kind = self.backend.currentData()
        backend = BACKENDS.get(kind)
        self.url.setEnabled(backend is not None)
        self.url.setPlaceholderText(backend.default_url if backend else "")
        if backend is not None:
            self.api_key.setText(self._stored_key() or "")

    def _key_slot(self) -> str:
        """Where the key typed is kept: under the saved server's name, else the backend's."""
        name = self.saved_servers.name()
        return key_name(name) if name else str(self.backend.currentData())

    def _stored_key(self) -> str | None:
        return self._secrets.get(self._key_slot()) or self._secrets.get(self.backend.currentData())

    def _show_server(self, fields: dict[str, Any]) -> None:
        """A saved server's connection, shown in the tab (what OK then connects to)."""
        shown = with_connection(self._original, fields)
        self.backend.setCurrentIndex(max(0, self.backend.findData(shown.backend)))
        self.url.setText(shown.url)
        self.model.setCurrentText(shown.model)
        self.track.setCurrentIndex(max(0, self.track.findData(shown.track)))
        self.context_size.setValue(shown.context_size)
        self.runtime_model.setText(shown.runtime_model)
        self.connection_options.show_values(connection_of(shown))

    def _choose_workspace(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Choose the workspace folder")
        if path:
            self.workspace.setText(path)

    def _choose_mcp_config(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "MCP servers", "", "JSON (*.json)")
        if path:
            self.mcp_config.setText(path)

    def _spawn(self, coroutine: Any) -> None:
        self._tasks.start(coroutine)

    async def _detect(self) -> None:
        self.status.setText("Looking for model servers…")
        found = await discover()
        if not found:
            self.status.setText("No model server answers on the usual ports.")
            return
        first = found[0]
        self.backend.setCurrentIndex(self.backend.findData(first.kind))
        self.url.setText(first.url)
        self._fill_models(first.models)
        names = ", ".join(f"{BACKENDS[f.kind].name} at {f.url}" for f in found)
        self.status.setText(f"Found: {names}.")

    async def _list_models(self) -> None:
        kind = self.backend.currentData()
        if kind not in BACKENDS:
            self.status.setText("Choose a backend to list its models.")
            return
        provider = make_provider(
            kind, self.url.text().strip() or None, api_key=self.api_key.text() or None
        )
        try:
            self._fill_models(await provider.list_models())
            self.status.setText("")
        except ProviderError as exc:
            self.status.setText(str(exc))
        finally:
            await provider.aclose()

    def _fill_models(self, models: list[str]) -> None:
        current = self.model.currentText()
        self.model.clear()
        self.model.addItems(models)
        self.model.setCurrentText(current if current in models or not models else models[0])

    # --- the result -------------------------------------------------------------------

    def _connection(self) -> Settings:
        """The original settings with the connection the Backend tab says."""
        return replace(
            self._original,
            backend=self.backend.currentData(),
            url=self.url.text().strip(),
            model=self.model.currentText().strip(),
            track=self.track.currentData(),
            context_size=self.context_size.value(),
            runtime_model=self.runtime_model.text().strip(),
            **self.connection_options.values(),
        )

    def settings(self) -> Settings:
        global_cooldown = self.cooldown_enabled.isChecked()
        tools = self.tool_table.values(global_cooldown)
        temperature = self.temperature.value()
        return replace(
            self._connection(),
            servers=self.saved_servers.servers,
            server=self.saved_servers.name(),
            temperature=None if temperature < 0 else round(temperature, 2),
            max_tool_calls=self.max_tool_calls.value(),
            cooldown_enabled=global_cooldown,
            cooldown_overrides=tools.cooldowns,
            tools_enabled=tools.enabled,
            workspace=self.workspace.text().strip(),
            mcp_config=self.mcp_config.text().strip(),
            trusted_tools=tools.trusted,
            tool_permissions=tools.permissions,
            secrets_in_file=self.secrets_in_file.isChecked(),
            document_search=self.document_search.currentData(),
            **self.api_settings.values(),
        )

    def accept(self) -> None:
        """Closed only with settings that can be used: a bad certificate file or header is
        said where it was typed."""
        if self.connection_options.check():
            self.tabs.setCurrentIndex(0)
            return
        super().accept()

    def save_key(self) -> str | None:
        """Store the API key typed for the chosen backend (in the keychain); None if none."""
        if self.backend.currentData() not in BACKENDS:
            return None
        key, slot = self.api_key.text(), self._key_slot()
        if key == (self._stored_key() or ""):
            return None
        if not key:
            self._secrets.delete(slot)
            return "API key removed."
        where = self._secrets.set(slot, key)
        self.key_saved.emit(where)
        return where


DOCUMENT_SEARCH_CHOICES = (
    ("auto", "Before each answer"),
    ("tool", "Only when the model asks"),
)
